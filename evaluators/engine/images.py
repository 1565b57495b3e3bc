"""Images as the scorers read them: a verified sha256 (the cache key) and where the bytes are.

An :class:`ImageSource` is a file (a submission image) or bytes (a reference photograph read from the
dataset's parquet). :func:`decode_batches` decodes and preprocesses them in DataLoader worker processes,
with the EXIF orientation applied (:func:`cultureboard.images.open_rgb`).
"""

from __future__ import annotations

import io
import os
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
        try:
            return i, self.transform(self.items[i].open())
        except Exception as exc:  # PIL raises many types for a broken file
            return i, (self.items[i].name, f"{type(exc).__name__}: {exc}")


def _collate(batch):
    import torch

    errors = [value for _, value in batch if isinstance(value, tuple)]
    stacked = None if errors else (torch.stack([v for _, v in batch]) if hasattr(batch[0][1], "dim")
                                   else [v for _, v in batch])
    return [i for i, _ in batch], stacked, errors


def decode_batches(items: list[ImageSource], transform: Callable, batch_size: int = 32,
                   num_workers: int | None = None) -> Iterator[tuple[list[ImageSource], object]]:
    """(items of the batch, stacked transformed images) in order; a tensor batch when the transform gives
    tensors, else a list. An image that cannot be decoded is a :class:`CultureboardError` naming it; so is a
    worker process that dies or sends no batch for ``cultureboard.workers.STALL_SECONDS`` (one line, never a wait
    forever)."""
    from torch.utils.data import DataLoader

    if num_workers is None:
        num_workers = min(8, (os.cpu_count() or 1) - 1) if len(items) > batch_size else 0
    loader = DataLoader(_Decoded(items, transform), batch_size=batch_size, num_workers=num_workers,
                        collate_fn=_collate, timeout=workers.STALL_SECONDS if num_workers else 0)
    batches = iter(loader)
    while True:
        try:
            indices, stacked, errors = next(batches)
        except StopIteration:
            return
        except RuntimeError as exc:  # from the loader itself: a worker that died, or sent no batch for the limit
            if not num_workers:
                raise
            raise CultureboardError("an image decoding worker process", f"failed ({str(exc).splitlines()[0][:200]})",
                                    "check the memory and the load of this machine, then run again") from None
        if errors:
            name, problem = errors[0]
            raise CultureboardError(name, f"cannot read the image: {problem}",
                                    "replace it with a valid image (cultureboard validate checks every image)")
        yield [items[i] for i in indices], stacked
