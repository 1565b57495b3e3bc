"""Scorers: named models of three kinds, loaded from real checkpoints by registry name.

* **embedding** (:mod:`.embedding`): image and text vectors (transformers CLIP / SigLIP / DINOv2, open_clip);
* **pairwise** (:mod:`.pairwise`): a distance of two images computed by a model (LPIPS, and backends that
  families register, such as a learned similarity);
* **judge** (:mod:`.judge`): a vision-language model that answers questions about an image.

The registry (``data/scorers.yaml``, see its header) names each scorer's backend, checkpoint and
revision; a scorer config file (``--scorers FILE``) overrides entries or adds new ones and can point any
scorer at a local ``path``. A backend is registered in code with :func:`register_backend` (its kind, the
files it needs, how to build it), so a family can add one without editing the engine.

:class:`Scorers` serves one run: :meth:`Scorers.identity` gives a scorer's provenance (model id,
resolved revision, dtype, preprocessing: everything its cache entries are keyed by) without loading the
model when an earlier run on this machine already recorded it for the same checkpoint files, library
versions and dtype; :meth:`Scorers.model` loads the model on first use. So a rerun whose inputs are all
cached loads no model at all. A local checkpoint's revision is ``local:<sha256 of its files>``; file
hashes are remembered by path, size and modification time, so a model of several GB is hashed once.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import yaml

from cultureboard import progress
from cultureboard.atomic import atomic_write_text
from cultureboard.device import choose_device, choose_dtype, require_device
from cultureboard.errors import CultureboardError
from cultureboard.provenance import FingerprintMemo, folder_sha256, package_version

from .batching import BATCH_SIZE, probe

REGISTRY_PATH = Path(__file__).parent / "data" / "scorers.yaml"
LOAD_FIX = "download it on a machine with network, or point it at a local folder in --scorers FILE"
#: What to do when a scorer's weights are not on this machine before a run.
OFFLINE_FIX = ("for a dry run of every step on random stand-ins pass --scorers tiny; for real scores fetch the "
               "weights on a machine with network (run this command there once, or `huggingface-cli download "
               "REPO --revision REV`) and copy ~/.cache/huggingface, or point the scorer at a local folder in "
               "--scorers FILE")
KINDS = ("embedding", "pairwise", "judge")
#: Packages whose versions can change what a checkpoint computes: part of a scorer identity's key.
LIBRARIES = ("torch", "transformers", "open_clip_torch", "lpips", "timm", "dreamsim", "peft")
#: Fields of a scorer's provenance (and identity).
IDENTITY_FIELDS = ("name", "kind", "backend", "model_id", "revision", "preprocessing", "text_preprocessing",
                   "logit_scale", "logit_bias", "device", "dtype", "standin", "forward_passes")
#: The file that marks a tiny random stand-in's folder (written by tiny_scorers.save_tiny_scorers).
STANDIN_MARKER = "CULTUREBOARD-STANDIN"


@dataclass(frozen=True)
class Backend:
    """How to build scorers of one backend.

    ``locate(name, entry) -> (files, model_id, revision)``; ``build(name, entry, files, model_id, revision,
    device, dtype) -> scorer``; ``check(entry) -> problem or None`` validates a registry entry.
    """

    kind: str
    locate: Callable
    build: Callable
    check: Callable[[Mapping], str | None]


_BACKENDS: dict[str, Backend] = {}


def register_backend(name: str, backend: Backend) -> None:
    """Add a backend; a name already taken is an error."""
    if name in _BACKENDS:
        raise ValueError(f"scorer backend {name!r} is already registered")
    if backend.kind not in KINDS:
        raise ValueError(f"scorer backend {name!r}: kind must be one of {KINDS}")
    _BACKENDS[name] = backend


def backends() -> dict[str, Backend]:
    """Every registered backend: the engine's own, and those the families register when they are imported."""
    from . import dreamsim, embedding, judge, pairwise  # noqa: F401  (each registers its backends on import)
    from .registry import load_families

    load_families()
    return dict(_BACKENDS)


# ----------------------------------------------------------------------------------------- registry

def load_registry(config: str | os.PathLike | Mapping | None = None) -> dict[str, dict]:
    """The registry entries, with the overrides of ``config`` (a YAML file or a mapping) merged in.

    An override of a known name replaces the fields it gives; an unknown name must be a complete
    entry. Relative ``path`` values in a config file are taken relative to that file's folder.
    """
    registry = _read_yaml(REGISTRY_PATH)
    source, base = "scorer config", Path.cwd()
    if isinstance(config, (str, os.PathLike)):
        source, base = str(config), Path(config).resolve().parent
        config = _read_yaml(Path(config))
    for name, override in (config or {}).items():
        if not isinstance(override, Mapping):
            raise CultureboardError(source, f"entry {name!r} is not a mapping", "write NAME: {field: value, ...}")
        override = dict(override)
        if "path" in override:
            override["path"] = str(base / Path(str(override["path"])).expanduser())
        registry[name] = {**registry.get(name, {}), **override}
    known = backends()
    for name, entry in registry.items():
        backend = entry.get("backend")
        problem = (f"backend must be one of {', '.join(sorted(known))}, not {backend!r}" if backend not in known
                   else known[backend].check(entry))
        if problem:
            raise CultureboardError(source, f"scorer {name!r}: {problem}",
                                    "see the header of evaluators/engine/data/scorers.yaml")
    return registry


def _read_yaml(path: Path) -> dict:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise CultureboardError(path, f"cannot read the scorer registry/config: {_first_line(exc)}",
                                "pass a readable YAML file") from None
    if not isinstance(data, dict):
        raise CultureboardError(path, "is not a mapping of scorer names to entries", "write NAME: {field: value, ...}")
    return data


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


# ------------------------------------------------------------------------------------------ locating

#: The overall time limit of downloading one scorer's model from the Hub.
MODEL_SECONDS = 3 * 3600.0


def hub_files(name: str, repo: str, revision: str, patterns: list[str]) -> tuple[Path, str]:
    """The snapshot folder of ``repo`` at ``revision`` (downloaded within :data:`MODEL_SECONDS`, or found in the
    cache when offline) and the commit hash that names it."""
    from huggingface_hub import constants

    cached = _cached_snapshot(repo, revision, patterns) if constants.HF_HUB_OFFLINE else None
    if cached is not None:
        return cached
    from huggingface_hub import snapshot_download

    from cultureboard.http import finish_within

    try:
        folder = Path(finish_within(MODEL_SECONDS, lambda: snapshot_download(repo, revision=revision,
                                                                             allow_patterns=patterns)))
    except Exception as exc:  # offline and not cached, unknown repo or revision, network errors, past MODEL_SECONDS
        offline = constants.HF_HUB_OFFLINE
        problem = (f"{repo}@{revision} is not in the local Hugging Face cache and HF_HUB_OFFLINE=1 forbids the "
                   "download" if offline else f"cannot get {repo}@{revision} ({_first_line(exc)})")
        raise CultureboardError(f"scorer {name}", problem, LOAD_FIX) from None
    return folder, folder.name


def _cached_snapshot(repo: str, revision: str, patterns: list[str]) -> tuple[Path, str] | None:
    """Offline, the snapshot of the local Hugging Face cache that ``snapshot_download`` returns, found as it finds
    it but without importing it (0.3-0.8 s of a cached rerun): the commit (``revision`` if it is one, else the
    cache's ``refs/<revision>``), its snapshot folder, and where the cache keeps the commit's file listing
    (``trees/<commit>.json``, format 1) every listed file that ``patterns`` select present. None where any of
    this is not so: ``snapshot_download`` then gives the answer or the error."""
    from huggingface_hub import constants

    storage = Path(constants.HF_HUB_CACHE) / ("models--" + repo.replace("/", "--"))
    try:
        commit = revision if re.fullmatch(r"[0-9a-f]{40}", revision) else (storage / "refs" / revision).read_text()
        folder = storage / "snapshots" / commit
        listing = storage / "trees" / f"{commit}.json"
        if not folder.is_dir():
            return None
        if listing.exists():
            tree = json.loads(listing.read_text(encoding="utf-8"))
            if tree["format_version"] != 1:
                return None
            wanted = [f for f in tree["files"] if any(fnmatch.fnmatchcase(f, p) for p in patterns)]
            if not all((folder / f).is_file() for f in wanted):
                return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return folder, commit


def local_files(name: str, entry: Mapping, memo: FingerprintMemo | None = None) -> tuple[Path, str, str]:
    """(path, model id, revision) of an entry's local ``path``: id ``local/<name>``, revision ``local:<sha256>``
    of its files (no machine-specific path is recorded)."""
    path = Path(entry["path"])
    if not path.exists():
        raise CultureboardError(f"scorer {name}", f"local path {path} does not exist",
                                "fix `path` in --scorers FILE, or remove it to use the Hub checkpoint")
    return path, f"local/{path.name}", "local:" + folder_sha256(path, memo=memo)


# ------------------------------------------------------------------------------------------ loading

def _deterministic(device: str) -> None:
    """The same inputs give the same bits: seeded, no cuDNN autotuning, and on CUDA the deterministic kernels
    (``use_deterministic_algorithms``; its import costs seconds, and the CPU's inference kernels need none)."""
    import torch

    torch.manual_seed(0)
    if device.startswith("cuda"):
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # lets cuBLAS be deterministic
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.backends.cudnn.benchmark = False


def _quiet_libraries() -> None:
    """Library warnings and progress bars of model loading would bury the one ``error:`` line."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from transformers.utils import logging as transformers_logging

    transformers_logging.set_verbosity_error()
    transformers_logging.disable_progress_bar()


def _build(name: str, entry: Mapping, device: str, dtype: str, memo: FingerprintMemo | None = None):
    backend = backends()[entry["backend"]]
    files, model_id, revision = backend.locate(name, entry, memo)
    require_device(device)  # a device evaluate took without torch (choose_device's defer) exists
    _quiet_libraries()
    _deterministic(device)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scorer = backend.build(name, entry, files, model_id, revision, device, dtype)
    except CultureboardError:
        raise
    except Exception as exc:  # the libraries raise many types for a broken or incomplete checkpoint
        raise CultureboardError(f"scorer {name}", f"cannot load {model_id}: {_first_line(exc)}", LOAD_FIX) from None
    scorer.kind, scorer.backend = backend.kind, entry["backend"]
    scorer.standin = "path" in entry and (Path(entry["path"]) / STANDIN_MARKER).is_file()
    scorer.forward_passes = probe(scorer, backend.kind)  # fixed batches where a row never depends on its batch-mates
    return scorer


def load_scorer(name: str, config: str | os.PathLike | Mapping | None = None, device: str | None = None,
                dtype: Any = None):
    """Load the scorer ``name`` of the registry (with ``config``'s overrides) on ``device`` in ``dtype``.

    Device defaults to cuda, then mps, then cpu; dtype to float16 on cuda and float32 elsewhere. A
    checkpoint that is neither cached nor downloadable, a missing local path or a checkpoint the
    library cannot load is a :class:`CultureboardError` naming the scorer and the fix.
    """
    registry = load_registry(config)
    entry = _entry(registry, name)
    device = choose_device(device)
    return _build(name, entry, device, choose_dtype(device, dtype))


def _entry(registry: Mapping, name: str) -> Mapping:
    if name not in registry:
        raise CultureboardError(f"scorer {name}", "is not in the registry or the scorer config",
                                "choose one of " + ", ".join(sorted(registry)) + " or add it in --scorers FILE")
    return registry[name]


def identity_of(scorer) -> dict:
    """A loaded scorer's provenance: the fields of :data:`IDENTITY_FIELDS`."""
    return {key: getattr(scorer, key, None) for key in IDENTITY_FIELDS}


class Scorers:
    """The scorers of one run: identities without loading, models loaded once on first use.

    ``state`` is a folder for what this machine learned about scorers (identities of checkpoints already
    loaded, file fingerprints); None keeps nothing between runs (every identity then loads its model).
    """

    def __init__(self, config: str | os.PathLike | Mapping | None, device: str, dtype: str,
                 state: str | os.PathLike | None = None, models: dict | None = None):
        self.registry = load_registry(config)
        self.shared = models  # models kept across runs by the caller, by (name, entry, device, dtype)
        self.device, self.dtype = device, dtype
        self.state = Path(state) if state is not None else None
        self.memo = FingerprintMemo(self.state / "fingerprints.json") if self.state is not None else None
        self._identities: dict[str, dict] = {}
        self._models: dict[str, Any] = {}

    def kind(self, name: str) -> str:
        return backends()[_entry(self.registry, name)["backend"]].kind

    def identity(self, name: str) -> dict:
        """The provenance of scorer ``name`` (loads the model only when this machine has not recorded it)."""
        if name not in self._identities:
            entry = _entry(self.registry, name)
            backend = backends()[entry["backend"]]
            _, model_id, revision = backend.locate(name, entry, self.memo)
            key = self._identity_key(name, entry, revision)
            stored = self._read_identity(key)
            if stored is None or stored.get("model_id") != model_id:
                stored = identity_of(self.model(name))
                if self.state is not None:
                    atomic_write_text(self.state / "identities" / f"{key}.json", json.dumps(stored, sort_keys=True))
            self._identities[name] = stored
            if self.memo is not None:
                self.memo.save()
        return self._identities[name]

    def preflight(self, names) -> None:
        """Find the files of every scorer in ``names`` before any work: a checkpoint that is neither a local path
        nor in the local Hugging Face cache while ``HF_HUB_OFFLINE`` forbids downloads is an error at once, naming
        the scorer, instead of after validating and decoding every image. (With network, downloads are left to
        the first use, as before.) A scorer whose entry names no checkpoint (no ``model``, no ``path``: CultDiff-S
        before anyone trained one) is left to its family, which flags the rows it cannot score."""
        from huggingface_hub import constants

        if not constants.HF_HUB_OFFLINE:
            return
        for name in sorted(set(names)):
            entry = _entry(self.registry, name)
            if "model" not in entry and "path" not in entry:
                continue
            try:
                backends()[entry["backend"]].locate(name, entry, self.memo)
            except CultureboardError as exc:
                raise CultureboardError(exc.source, exc.problem, OFFLINE_FIX) from None

    def model(self, name: str):
        """The loaded scorer ``name`` (loaded on first use)."""
        if name not in self._models:
            entry = _entry(self.registry, name)
            shared = (name, json.dumps(entry, sort_keys=True, default=str), self.device, self.dtype)
            if self.shared is not None and shared in self.shared:
                self._models[name] = self.shared[shared]
            else:
                progress.say(f"loading scorer {name} ({entry.get('model') or entry.get('path') or entry['backend']})")
                self._models[name] = _build(name, entry, self.device, self.dtype, self.memo)
            if self.shared is not None:
                self.shared[shared] = self._models[name]
            self._identities[name] = identity_of(self._models[name])
            if self.memo is not None:
                self.memo.save()
        return self._models[name]

    def used(self) -> list[dict]:
        """Provenance of every scorer whose identity or model this run asked for, by name, with the corpora the
        registry declares it was trained on (``training_data``, for the site's entanglement badges) where it does."""
        out = []
        for name in sorted(self._identities):
            declared = _entry(self.registry, name).get("training_data")
            out.append({**self._identities[name], **({"training_data": list(declared)} if declared else {})})
        return out

    def _identity_key(self, name: str, entry: Mapping, revision: str) -> str:
        versions = {package: package_version(package) for package in LIBRARIES}
        key = {"name": name, "entry": {k: v for k, v in entry.items() if k not in ("notes", "role", "training_data")},
               "revision": revision, "device": self.device.split(":")[0], "dtype": self.dtype, "versions": versions,
               "batch_size": BATCH_SIZE}  # the forward-pass probe's verdict holds for this batch size
        return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:32]

    def _read_identity(self, key: str) -> dict | None:
        if self.state is None:
            return None
        try:
            stored = json.loads((self.state / "identities" / f"{key}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return stored if isinstance(stored, dict) and set(IDENTITY_FIELDS) <= set(stored) else None
