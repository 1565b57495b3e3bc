"""Tiny stand-in models, made once and kept in the cache folder: the demo's and ``--scorers tiny``'s.

Everything lives under ``standins_root()`` = ``$CULTUREBOARD_CACHE/standins`` (default
``~/.cache/cultureboard/standins``)::

    scorers-<code>/             one tiny random model per registry scorer and scorers-tiny.yaml, the scorer
                                config pointing at them (``cultureboard evaluate --scorers tiny`` uses it)
    generators/<name>-<code>/   tiny random diffusers pipelines (the demo's stand-in text-to-image models)
    submissions/<key>/<id>/     the demo's generated submissions, by the sha256 of everything that made them

``<code>`` is a fingerprint of the code and library versions that write the models, so an upgrade makes new
ones instead of reusing stale ones. Every entry is written into a hidden temporary folder and renamed into
place, so a killed run or two runs at once never leave a half-written entry behind; an entry is never
changed once written. The stand-ins' weights are random: scores computed with them measure nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from .errors import CultureboardError

#: ``--scorers`` values that are not a file: the stand-ins, and the registry's real checkpoints.
TINY, DEFAULT = "tiny", "default"
#: The code that writes the stand-in scorers (the engine's tiny_scorers and every family that registers a
#: stand-in) and the libraries whose save format they depend on; the same for the stand-in pipelines.
_SCORER_CODE = ("cultureboard.evaluators.engine", "cultureboard.evaluators.families",
                "cultureboard.evaluators.submission.tiny_pipelines")
_SCORER_LIBRARIES = ("torch", "transformers", "open_clip_torch", "lpips", "safetensors")
_PIPELINE_CODE = ("cultureboard.evaluators.submission.tiny_pipelines",)
_PIPELINE_LIBRARIES = ("torch", "diffusers", "transformers", "safetensors")
#: The files of a package that its fingerprint covers (code and the data it ships).
_CODE_SUFFIXES = (".py", ".yaml", ".json", ".csv")


def cache_root() -> Path:
    """``$CULTUREBOARD_CACHE``, default ``~/.cache/cultureboard`` (embeddings and stand-ins)."""
    return Path(os.environ.get("CULTUREBOARD_CACHE", Path.home() / ".cache" / "cultureboard"))


def standins_root() -> Path:
    return cache_root() / "standins"


def fingerprint(parts: object) -> str:
    """sha256 of ``parts`` as canonical JSON (sorted keys): the key of a cache entry."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def code_fingerprint(modules: tuple[str, ...], libraries: tuple[str, ...]) -> str:
    """The first 16 hex digits of the sha256 over the files of ``modules`` (a package: every code and data file
    under its folder, by relative name and content; a module: its file), found where Python imports them from
    (an editable install too), and the installed versions of ``libraries``. Nothing is imported but the
    modules' parent packages."""
    from importlib.util import find_spec

    h = hashlib.sha256()
    for name in modules:
        spec = find_spec(name)
        if spec is None or spec.origin is None:
            raise ValueError(f"no module {name}")
        root = Path(spec.origin).parent if spec.submodule_search_locations else Path(spec.origin)
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*")
                                                       if p.suffix in _CODE_SUFFIXES and p.is_file())
        for path in files:
            h.update(f"{name}/{path.relative_to(root).as_posix()}".encode() + b"\0" + path.read_bytes() + b"\0")
    for library in libraries:
        try:
            version = metadata.version(library)
        except metadata.PackageNotFoundError:
            version = "absent"
        h.update(f"{library}=={version}\0".encode())
    return h.hexdigest()[:16]


def make_once(target: Path, write: Callable[[Path], object]) -> Path:
    """``target`` made by ``write(folder)`` unless it exists: ``write`` fills a hidden temporary sibling,
    which is then renamed to ``target`` (when another process got there first, its entry is kept)."""
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.tmp-{os.getpid()}-{secrets.token_hex(3)}"
    try:
        write(tmp)
        try:
            os.rename(tmp, target)
        except OSError:
            if not target.is_dir():
                raise
    except OSError as exc:
        raise CultureboardError(target.parent, f"cannot be written ({exc.strerror or exc})",
                                "set CULTUREBOARD_CACHE to a writable folder") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def standin_scorers() -> Path:
    """The scorer config of the tiny stand-in scorers (made on first use, about 10 s on a CPU): what
    ``--scorers tiny`` means. Older stand-in folders (of other code) are removed."""
    from .evaluators.engine.tiny_scorers import TINY_CONFIG, save_tiny_scorers

    name = f"scorers-{code_fingerprint(_SCORER_CODE, _SCORER_LIBRARIES)}"
    folder = make_once(standins_root() / name, save_tiny_scorers)
    for old in standins_root().glob("scorers-*"):
        if old.name != name and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
    return folder / TINY_CONFIG


def standin_pipeline(name: str, seed: int) -> Path:
    """The folder of the tiny random diffusers pipeline ``name`` (weights drawn from ``seed``)."""
    from .evaluators.submission.tiny_pipelines import save_tiny_text2image

    code = code_fingerprint(_PIPELINE_CODE, _PIPELINE_LIBRARIES)
    return make_once(standins_root() / "generators" / f"{name}-{seed}-{code}",
                     lambda folder: save_tiny_text2image(folder, seed=seed))


def resolve_scorers(value: str | os.PathLike | None) -> str | Path | None:
    """What ``--scorers`` names, for the engine: ``tiny`` -> the stand-ins' config, ``default`` or None ->
    None (the registry's real checkpoints), anything else -> a scorer config file, which must exist."""
    if value is None or str(value) == DEFAULT:
        return None
    if str(value) == TINY:
        return standin_scorers()
    if not Path(value).is_file():
        raise CultureboardError(f"--scorers {value}", "is not a file, 'tiny' or 'default'",
                                "pass a scorer config YAML, 'tiny' (random stand-ins: every step runs, no score "
                                "means anything) or 'default' (the registry's checkpoints)", exit_code=2)
    return value
