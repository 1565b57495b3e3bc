"""Images as the scorers read them: a verified sha256 (the cache key) and where the bytes are.

An :class:`ImageSource` is a file (a submission image) or bytes (a reference photograph read from the
dataset's parquet). :func:`decode_batches` decodes and preprocesses them in DataLoader worker processes,
with the EXIF orientation applied (:func:`cultureboard.images.open_rgb`). :class:`Opened` decodes the first
images in a thread while the caller loads the model whose preprocessing they need; ``decode_batches`` then
only preprocesses those (the same batches, the same tensors).
"""

from __future__ import annotations

import io
import itertools
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from cultureboard import workers
from cultureboard.errors import CultureboardError
from cultureboard.images import open_rgb


@dataclass(frozen=True)
class ImageSource:
    sha256: str
    path: Path | None = None
    data: bytes | None = None
    label: str = ""  # how errors name it (a file name or "reference of Q123")

    def open(self):
        """The image as an RGB ``PIL.Image``, EXIF orientation applied."""
        return open_rgb(self.path if self.data is None else io.BytesIO(self.data))

    @property
    def name(self) -> str:
        return self.label or str(self.path)


class _Decoded:
    """A map-style dataset: item i = (i, transform(image i)), or (i, (name, problem)) if it cannot be read.

    Errors are returned rather than raised so that the main process reports them (an exception raised in
    a worker reaches the main process only as a re-wrapped traceback).
    """

    def __init__(self, items: list[ImageSource], transform: Callable):
        self.items, self.transform = items, transform

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int):
        return i, _prepared(self.items[i], self.transform)


def _prepared(item: ImageSource, transform: Callable | None, image=None):
    """``transform(image)`` (the item decoded if no ``image`` is given; no transform: the decoded image), or
    (name, problem) if it cannot be read."""
    try:
        image = item.open() if image is None else image
        return image if transform is None else transform(image)
    except Exception as exc:  # PIL raises many types for a broken file
        return item.name, f"{type(exc).__name__}: {exc}"


class Opened:
    """The first ``batches`` batches of ``items`` decoded in a background thread, started at once, so that decoding
    overlaps what the caller does meanwhile (loading a model: PIL decodes with the GIL released). Pass it to
    :func:`decode_batches` over the same ``items`` with the same ``batch_size``."""

    def __init__(self, items: list[ImageSource], batch_size: int = 32, batches: int = 4):
        self.items, self.batch_size = items[:batch_size * batches], batch_size
        self._images: list = []
        self._thread = threading.Thread(target=self._open, daemon=True)
        self._thread.start()

    def _open(self) -> None:
        self._images = [_prepared(item, None) for item in self.items]

    def images(self) -> list:
        """The decoded images (or (name, problem) for one that cannot be read), in order, once all are done."""
        self._thread.join()
        return self._images


def _collate(batch):
    """(indices, the images stacked, errors). In a worker process a tensor batch is moved to shared memory here,
    as torch's default collation does: a write that fails there (a full /dev/shm, a file size limit) is then an
    error of this batch that the loader hands to the main process at once; in the queue's feeder thread it would
    only be printed, and the main process would wait for the batch until its timeout."""
    import torch

    errors = [value for _, value in batch if isinstance(value, tuple)]
    stacked = None if errors else (torch.stack([v for _, v in batch]) if hasattr(batch[0][1], "dim")
                                   else [v for _, v in batch])
    if isinstance(stacked, torch.Tensor) and torch.utils.data.get_worker_info() is not None:
        stacked.share_memory_()
    return [i for i, _ in batch], stacked, errors


def decode_batches(items: list[ImageSource], transform: Callable, batch_size: int = 32,
                   num_workers: int | None = None, opened: Opened | None = None
                   ) -> Iterator[tuple[list[ImageSource], object]]:
    """(items of the batch, stacked transformed images) in order, in batches of ``batch_size``; a tensor batch when
    the transform gives tensors, else a list. The images ``opened`` already decoded (the first of ``items``) are
    only transformed. An image that cannot be decoded is a :class:`CultureboardError` naming it; so is a worker
    process that dies or sends no batch for ``cultureboard.workers.STALL_SECONDS`` (one line, never a wait
    forever)."""
    from torch.utils.data import DataLoader

    early = opened.images() if opened is not None else []
    if opened is not None and (opened.batch_size != batch_size or any(a is not b for a, b in zip(opened.items, items))):
        raise ValueError("decode_batches: `opened` holds other images or batches than it is given")
    batches = (_collate([(i, image if isinstance(image, tuple) else _prepared(items[i], transform, image))
                         for i, image in enumerate(early[start:start + batch_size], start)])
               for start in range(0, len(early), batch_size))
    rest = items[len(early):]
    if num_workers is None:
        num_workers = min(8, (os.cpu_count() or 1) - 1) if len(rest) > batch_size else 0
    loader = DataLoader(_Decoded(rest, transform), batch_size=batch_size, num_workers=num_workers,
                        collate_fn=_collate, timeout=workers.STALL_SECONDS if num_workers else 0) if rest else []
    later = (([i + len(early) for i in indices], stacked, errors) for indices, stacked, errors in loader)
    every = itertools.chain(batches, later)
    while True:
        try:
            indices, stacked, errors = next(every)
        except StopIteration:
            return
        except RuntimeError as exc:  # from the loader itself: a worker that died, or sent no batch for the limit
            if not num_workers:
                raise
            lines = str(exc).strip().splitlines() or [""]  # a worker's error: its first line and the cause, last
            cause = lines[0] if len(lines) == 1 else f"{lines[0]} {lines[-1]}"
            raise CultureboardError("an image decoding worker process", f"failed ({cause[:300]})",
                                    "check the memory, the free space of /dev/shm, the file size limit (ulimit -f) and "
                                    "the load of this machine, then run again") from None
        if errors:
            name, problem = errors[0]
            raise CultureboardError(name, f"cannot read the image: {problem}",
                                    "replace it with a valid image (cultureboard validate checks every image)")
        yield [items[i] for i in indices], stacked
