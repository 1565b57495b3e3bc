"""Scorer registry, loader and embedding cache, on tiny random models loaded through the real code path.

HF_HUB_OFFLINE=1 (conftest): Hub checkpoints are found in a fabricated Hugging Face cache or not at all.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from cultureboard.errors import CultureboardError
from cultureboard.evaluators.engine.scorers import choose_device, choose_dtype, load_registry, load_scorer

NAMES = ["siglip2-so400m", "clip-vit-l-14", "msiglip", "hpsv2.1", "dinov2-base"]
TEXTS = ["a bowl of pho", "Ein Teller Spätzle", "寿司"]


@pytest.fixture(scope="module")
def tiny(tiny_scorers) -> Path:
    """The scorer config pointing every registry name at its tiny model."""
    return tiny_scorers


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> list[tuple[str, Path]]:
    """40 small random PNGs of varied sizes, as (sha256, path)."""
    folder = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(0)
    items = []
    for i in range(40):
        path = folder / f"{i:02d}.png"
        size = (int(rng.integers(20, 48)), int(rng.integers(20, 48)))
        Image.fromarray(rng.integers(0, 256, (*size, 3), dtype=np.uint8)).save(path)
        items.append((hashlib.sha256(path.read_bytes()).hexdigest(), path))
    return items


def count_calls(scorer, method: str) -> list[int]:
    """Wrap ``scorer.method`` to record the batch size of every call."""
    calls, original = [], getattr(scorer, method)

    def wrapper(batch):
        calls.append(len(batch))
        return original(batch)

    setattr(scorer, method, wrapper)
    return calls


def test_registry_names_the_default_checkpoints():
    registry = load_registry()
    assert set(NAMES) <= set(registry)
    assert registry["siglip2-so400m"]["model"] == "google/siglip2-so400m-patch14-384"
    assert registry["clip-vit-l-14"]["model"] == "openai/clip-vit-large-patch14"
    assert registry["hpsv2.1"]["weights"] == {"repo": "xswu/HPSv2", "file": "HPS_v2.1_compressed.pt"}
    assert registry["msiglip"]["weights"]["repo"] == "timm/ViT-SO400M-16-SigLIP-i18n-256"
    assert all(entry.get("role") for entry in registry.values())
    assert all(entry.get("revision") for entry in registry.values() if "model" in entry or "weights" in entry)
    assert registry["lpips-alex"]["backend"] == "lpips" and registry["qwen2.5-vl-7b"]["backend"] == "transformers-vlm"


@pytest.mark.parametrize("name", NAMES)
def test_tiny_scorer_loads_through_the_real_loader(tiny, images, name):
    scorer = load_scorer(name, config=tiny)
    again = load_scorer(name, config=tiny)
    assert scorer.backend == load_registry()[name]["backend"]
    assert (scorer.device, scorer.dtype) == ("cpu", "float32")
    assert scorer.revision.startswith("local:") and len(scorer.revision) == len("local:") + 64
    assert again.revision == scorer.revision, "the revision of a local folder must be stable across reloads"
    pil = [Image.open(path) for _, path in images[:5]]
    vectors = scorer.embed_images(pil)
    assert vectors.dtype == np.float32 and vectors.shape[0] == 5
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert np.array_equal(vectors, again.embed_images(pil)), "embeddings must be deterministic"
    if name == "dinov2-base":
        assert scorer.logit_scale is None
        with pytest.raises(CultureboardError, match="no text tower"):
            scorer.embed_texts(TEXTS)
    else:
        texts = scorer.embed_texts(TEXTS)
        np.testing.assert_allclose(np.linalg.norm(texts, axis=1), 1, atol=1e-5)
        assert np.array_equal(texts, again.embed_texts(TEXTS))
        assert scorer.logit_scale > 0


def fake_hub_snapshot(cache: Path, repo: str, commit: str) -> Path:
    """The folder of ``repo``@``commit`` in a Hugging Face cache at ``cache``, with refs/main pointing at it."""
    storage = cache / ("models--" + repo.replace("/", "--"))
    (storage / "refs").mkdir(parents=True)
    (storage / "refs" / "main").write_text(commit)
    return storage / "snapshots" / commit


def test_hub_checkpoints_resolve_to_the_cached_commit(tiny, images, tmp_path, monkeypatch):
    import huggingface_hub
    import open_clip
    import torch

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    clip_commit, hps_commit = "a" * 40, "b" * 40
    shutil.copytree(tiny.parent / "clip-vit-l-14", fake_hub_snapshot(tmp_path / "hub", "openai/clip-vit-large-patch14",
                                                                     clip_commit))
    clip = load_scorer("clip-vit-l-14")
    assert (clip.model_id, clip.revision) == ("openai/clip-vit-large-patch14", clip_commit)
    pil = [Image.open(path) for _, path in images[:3]]
    assert np.array_equal(clip.embed_images(pil), load_scorer("clip-vit-l-14", config=tiny).embed_images(pil))

    # HPS v2.1 as the registry loads it: an open_clip architecture + the checkpoint file from xswu/HPSv2.
    tiny_hps = tiny.parent / "hpsv2.1"
    architecture = tmp_path / "tiny-ViT-H-14.json"
    architecture.write_text(json.dumps(json.loads((tiny_hps / "open_clip_config.json").read_text())["model_cfg"]))
    open_clip.add_model_config(architecture)
    from safetensors.torch import load_file

    snapshot = fake_hub_snapshot(tmp_path / "hub", "xswu/HPSv2", hps_commit)
    snapshot.mkdir(parents=True)
    torch.save({"state_dict": load_file(tiny_hps / "open_clip_model.safetensors")}, snapshot / "HPS_v2.1_compressed.pt")
    hps = load_scorer("hpsv2.1", config={"hpsv2.1": {"model": "tiny-ViT-H-14"}})
    assert (hps.model_id, hps.revision) == ("tiny-ViT-H-14:xswu/HPSv2/HPS_v2.1_compressed.pt", hps_commit)
    assert '"resize_mode": "longest"' in hps.preprocessing
    assert np.array_equal(hps.embed_images(pil), load_scorer("hpsv2.1", config=tiny).embed_images(pil))

    with pytest.raises(CultureboardError) as error:
        load_scorer("siglip2-so400m")  # not in the cache, and the Hub is offline
    assert "siglip2-so400m" in str(error.value) and "download it on a machine with network" in str(error.value)


def test_device_and_dtype(tiny, images):
    import torch

    assert (choose_dtype("cuda"), choose_dtype("cpu"), choose_dtype("mps")) == ("float16", "float32", "float32")
    assert choose_dtype("cpu", torch.bfloat16) == choose_dtype("cpu", "bf16") == "bfloat16"
    with pytest.raises(CultureboardError, match="unknown dtype"):
        choose_dtype("cpu", "int8")
    if not torch.cuda.is_available():
        with pytest.raises(CultureboardError, match="'cuda' is not available"):
            choose_device("cuda")
    scorer = load_scorer("clip-vit-l-14", config=tiny, device="cpu", dtype="bfloat16")
    vectors = scorer.embed_images([Image.open(path) for _, path in images[:2]])
    assert scorer.dtype == "bfloat16" and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)


def test_loading_errors_name_the_scorer_and_the_fix(tmp_path):
    with pytest.raises(CultureboardError, match=r"scorer clip-vit-l-14: local path .*nowhere does not exist"):
        load_scorer("clip-vit-l-14", config={"clip-vit-l-14": {"path": str(tmp_path / "nowhere")}})
    (tmp_path / "empty").mkdir()
    with pytest.raises(CultureboardError, match="scorer msiglip: .* lacks open_clip_config.json or weights"):
        load_scorer("msiglip", config={"msiglip": {"path": str(tmp_path / "empty")}})
    with pytest.raises(CultureboardError, match="scorer dinov2-base: cannot load"):
        load_scorer("dinov2-base", config={"dinov2-base": {"path": str(tmp_path / "empty")}})
    with pytest.raises(CultureboardError, match="is not in the registry"):
        load_scorer("no-such-scorer")
    config = tmp_path / "scorers.yaml"
    config.write_text("mine: {backend: tensorflow, model: x}\n")
    with pytest.raises(CultureboardError, match="scorers.yaml: scorer 'mine': backend must be one of"):
        load_scorer("mine", config=config)
