"""One on-disk cache for every scorer kind: one model pass per (model, input), shared by every metric.

Layout: ``root/<key>/key.json`` + ``root/<key>/shard-*.npz``. The folder key is a hash of what the values
depend on besides the input (:func:`cache_key`: kind, model id, resolved revision, dtype, preprocessing or
question template), spelled out in ``key.json``; within a folder, each entry is keyed by the sha256 of its
inputs (an image's sha256, a pair of them, an image and a question). A shard holds the values of one
batch: float32 rows (embeddings, distances, probabilities) or text (a judge's answers), and a sha256
checksum of its keys and values. Shards are written to a temporary name and renamed once complete, so a
killed run (even SIGKILL) loses at most the batch in flight and a rerun continues from what is on disk.

No cached value depends on its batch-mates: a value computed in a batch can (matrix products round differently
for another batch size or row position, and padding follows the longest batch-mate), so what a run computes would
depend on what the cache already held. Values are computed in fixed-shape batches where a probe of the loaded
scorer found a row's bits independent of its batch-mates, else one input per forward pass (:func:`each_alone`;
:mod:`.batching`). Either way a run gives the same bits whether its inputs were cached (by another submission, a
shard, a killed run) or not. Every kind's key records which way its values were computed (``computed``), so values
of the other way, or cached in free batches by an older version, are never mixed in.

``key.json`` also records the shape of one value (``"value_shape": [768]`` for an embedding, ``[]`` for a
number, ``"text"`` for answers), written with the folder's first batch. Reading verifies each shard (checksum,
finite numbers, that recorded shape; in a folder of an older version that recorded none, the shape most of its
entries have, which is then recorded): one that fails is moved aside with a warning and its entries are
computed again, never used. A folder is read once per run (the index is kept in memory) and compacted into one
shard when it holds many.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from cultureboard.atomic import atomic_write_bytes, atomic_write_text

#: A folder with more shards than this is compacted into one when it is opened.
COMPACT_ABOVE = 64
_UNKNOWN = "unknown"  # the value shape of a folder that has recorded none yet


def each_alone(compute: Callable, *columns: Sequence) -> list:
    """``compute(*columns)`` applied to one row of the columns at a time (slices of length 1: a tensor, an array or
    a list), its outputs' rows in order: row i depends on row i of the columns only, never on the others."""
    return [row for i in range(len(columns[0])) for row in compute(*(column[i:i + 1] for column in columns))]


def cache_key(key: Mapping) -> str:
    """The folder name of a cache: the first 32 hex digits of sha256 over the canonical JSON of the key."""
    return hashlib.sha256(json.dumps(dict(key), sort_keys=True).encode()).hexdigest()[:32]


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def item_sha256(*parts) -> str:
    """The entry key of a composite input (a pair of images, an image and a question)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def _checksum(keys: np.ndarray, values: np.ndarray) -> str:
    h = hashlib.sha256()
    h.update("\n".join(keys.tolist()).encode("utf-8"))
    h.update(str(values.dtype).encode() + str(values.shape).encode())
    h.update(np.ascontiguousarray(values).tobytes())
    return h.hexdigest()


class Store:
    """The entries of one cache folder: :meth:`get` what is known, :meth:`put` a finished batch."""

    def __init__(self, folder: Path, key: Mapping, cache: Cache):
        self.folder, self.key, self.cache = folder, dict(key), cache
        self._index: dict[str, np.ndarray | str] | None = None
        self._shape: tuple | str | None = _UNKNOWN  # the shape of one value (None for text)

    def get(self, keys: Sequence[str]) -> dict:
        index = self._load()
        found = {k: index[k] for k in keys if k in index}
        self.cache.stats[f"{self.key['kind']}_hits"] += len(found)
        self.cache.stats[f"{self.key['kind']}_misses"] += len(keys) - len(found)
        return found

    def put(self, keys: Sequence[str], values) -> np.ndarray | list[str]:
        """Store a batch: ``values`` has one row per key (numbers) or is a list of strings (text). Returns the values
        as stored (float32 rows, or strings), which is what a later run reads: a run uses these, never its own
        ``values``, so a fresh and a cached value are the same bytes."""
        keys = np.array(list(keys), dtype=str)
        if not len(keys):
            return []
        values = np.array(list(values), dtype=str) if _is_text(values) else np.asarray(values, dtype=np.float32)
        if len(values) != len(keys):
            raise ValueError(f"{len(keys)} keys but {len(values)} values")
        if values.dtype.kind == "f" and not np.isfinite(values).all():
            raise ValueError(f"cache {self.key['kind']}: the model produced NaN or infinite values")
        index = self._load()
        shape = values.shape[1:] if values.dtype.kind == "f" else None
        if self._shape == _UNKNOWN:
            self._record(shape)
        elif shape != self._shape:
            raise ValueError(f"cache {self.key['kind']}: the model produced values of shape {shape}, but "
                             f"{self.folder / 'key.json'} records {self._shape}")
        buffer = io.BytesIO()
        np.savez(buffer, keys=keys, values=values, checksum=np.array(_checksum(keys, values)))
        atomic_write_bytes(self.folder / f"shard-{time.time_ns()}-{os.getpid()}.npz", buffer.getvalue())
        stored = values.tolist() if values.dtype.kind == "U" else values
        index.update(zip(keys.tolist(), stored))
        return stored

    def _recorded_shape(self) -> tuple | str | None:
        """The value shape key.json records (None for text), or :data:`_UNKNOWN` (none, or a damaged file)."""
        try:
            shape = json.loads((self.folder / "key.json").read_text(encoding="utf-8"))["value_shape"]
        except (OSError, ValueError, KeyError, TypeError):
            return _UNKNOWN
        if shape == "text":
            return None
        ok = isinstance(shape, list) and all(isinstance(n, int) and not isinstance(n, bool) for n in shape)
        return tuple(shape) if ok else _UNKNOWN

    def _record(self, shape: tuple | None) -> None:
        self._shape = shape
        recorded = {**self.key, "value_shape": "text" if shape is None else list(shape)}
        atomic_write_text(self.folder / "key.json", json.dumps(recorded, indent=2, sort_keys=True) + "\n")

    def _load(self) -> dict:
        if self._index is not None:
            return self._index
        self.folder.mkdir(parents=True, exist_ok=True)
        if not (self.folder / "key.json").is_file():
            atomic_write_text(self.folder / "key.json", json.dumps(self.key, indent=2, sort_keys=True) + "\n")
        index: dict = {}
        shards = sorted(self.folder.glob("shard-*.npz"))
        loaded = [(shard, self._read(shard)) for shard in shards]
        loaded = [(shard, entries) for shard, entries in loaded if entries is not None]
        self._shape = self._recorded_shape()
        if self._shape == _UNKNOWN and loaded:  # a folder of an older version: the shape of most entries
            shapes = Counter()
            for _, (shape, entries) in loaded:
                shapes[shape] += len(entries)
            self._record(shapes.most_common(1)[0][0])
        read = []
        for shard, (shape, entries) in loaded:
            if shape != self._shape:
                self._reject(shard, f"its values have shape {shape}, key.json records {self._shape}")
                continue
            index.update(entries)
            read.append(shard)
        self._index = index
        if len(read) > COMPACT_ABOVE:
            self._compact(read)
        return index

    def _read(self, shard: Path) -> tuple[tuple | None, dict] | None:
        """(shape of one value, None for text; entries) of a verified shard, or None."""
        try:
            with np.load(shard, allow_pickle=False) as data:
                keys, values, checksum = data["keys"], data["values"], str(data["checksum"])
        except FileNotFoundError:  # compacted away by another process meanwhile: its entries are elsewhere
            return None
        except Exception as exc:  # a truncated or foreign file
            return self._reject(shard, f"unreadable ({type(exc).__name__})")
        if checksum != _checksum(keys, values):
            return self._reject(shard, "its checksum does not match its contents")
        if values.dtype.kind == "f":
            if not np.isfinite(values).all():
                return self._reject(shard, "it holds NaN or infinite values")
            return values.shape[1:], dict(zip(keys.tolist(), values))
        if values.dtype.kind != "U":
            return self._reject(shard, f"its values have the type {values.dtype}")
        return None, dict(zip(keys.tolist(), values.tolist()))

    def _reject(self, shard: Path, problem: str) -> None:
        warnings.warn(f"{shard}: cache shard dropped, {problem}; its entries will be computed again", stacklevel=3)
        self.cache.stats["rejected_shards"] += 1
        try:
            os.replace(shard, shard.with_name(shard.name + ".rejected"))
        except OSError:
            pass
        return None

    def _compact(self, shards: list[Path]) -> None:
        """Write every entry into one shard, then remove the shards it replaces (safe against a kill at any
        point: until the removal, entries are only duplicated)."""
        index = self._index or {}
        keys = np.array(list(index), dtype=str)
        values = list(index.values())
        values = np.array(values, dtype=str) if _is_text(values) else np.asarray(values, dtype=np.float32)
        buffer = io.BytesIO()
        np.savez(buffer, keys=keys, values=values, checksum=np.array(_checksum(keys, values)))
        atomic_write_bytes(self.folder / f"shard-{time.time_ns()}-{os.getpid()}.npz", buffer.getvalue())
        for shard in shards:
            try:
                shard.unlink()
            except FileNotFoundError:
                pass
        self.cache.stats["compactions"] += 1


def _is_text(values) -> bool:
    if isinstance(values, np.ndarray):
        return values.dtype.kind == "U"
    return bool(len(values)) and isinstance(next(iter(values)), str)


class Cache:
    """Cached model outputs under ``root``; ``stats`` counts hits and misses per kind and rejected shards."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.stats: Counter = Counter()
        self._stores: dict[str, Store] = {}

    def store(self, key: Mapping) -> Store:
        name = cache_key(key)
        if name not in self._stores:
            self._stores[name] = Store(self.root / name, key, self)
        return self._stores[name]
