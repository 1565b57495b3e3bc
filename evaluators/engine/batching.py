"""Fixed-shape batches: model outputs at full batch speed that never depend on a row's batch-mates.

A value computed in a batch can depend on the rest of the batch: matrix products round differently for another
batch size, and padding follows the longest batch-mate. So what a run computes would depend on what the cache
already held (another submission, a shard, a killed run). Two ways keep results identical whatever the cache held:

* :data:`FIXED`: inputs go through the model in batches of exactly :data:`BATCH_SIZE` rows, the last one padded
  (its last row repeated), so every row is computed in the same shape; this is exact only where a row's output
  does not depend on *which* rows share its batch, which :func:`probe` checks for each loaded scorer;
* :data:`ALONE`: one input per forward pass (:func:`.cache.each_alone`), exact for any model, at a lone input's
  speed (1.96x to 3.70x slower on the CPU at base size, far more on a GPU).

:func:`probe` runs when a scorer loads: on :data:`PROBE_ROWS` synthetic inputs (seeded noise images, texts of
2 to 40 words) it computes every row in fixed batches of several compositions (the rows in order, reversed,
a shuffle, and the first input alone in a padded batch) and takes :data:`FIXED` only where every row gets the same
bits in all of them; otherwise :data:`ALONE`. The verdict is part of the scorer's identity
(``forward_passes``, one per input kind), which is remembered per (model, revision, device, dtype, library versions,
batch size) with the identity (:class:`.scorers.Scorers`), recorded in every result's scorer provenance, and part
of every cache key (a value computed one way is never read as the other).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from cultureboard.errors import CultureboardError

from .cache import each_alone

#: The one batch shape every model sees in :data:`FIXED` mode.
BATCH_SIZE = 32
FIXED = f"fixed batches of {BATCH_SIZE}"
ALONE = "one input per forward pass"
#: The rule a result records in ``settings.forward_passes`` (each scorer's provenance says which way it went).
FORWARD_PASSES = f"{FIXED} where the scorer's probe finds rows independent of their batch-mates, else {ALONE}"
#: Synthetic inputs per probe: two batches' worth, so every composition mixes rows of both.
PROBE_ROWS = 2 * BATCH_SIZE


def _take(column, rows: Sequence[int]):
    """Rows ``rows`` of a list, a numpy array or a torch tensor, in that order."""
    return [column[i] for i in rows] if isinstance(column, list) else column[list(rows)]


def fixed_batches(compute: Callable, *columns: Sequence, size: int = BATCH_SIZE) -> list:
    """``compute(*columns)`` in batches of exactly ``size`` rows: the last batch is padded with copies of its last
    row, and the padding's outputs are dropped. Returns the outputs' rows in order."""
    n, out = len(columns[0]), []
    for start in range(0, n, size):
        rows = list(range(start, min(start + size, n)))
        rows += [rows[-1]] * (size - len(rows))
        out.extend(list(compute(*(_take(column, rows) for column in columns)))[:min(size, n - start)])
    return out


def mode_of(identity, kind: str) -> str:
    """The forward-pass mode a scorer ``identity`` records for inputs of ``kind`` (``image``, ``text``, ``pair``);
    :data:`ALONE` where it records none (an identity of no probe is never taken as batch-safe)."""
    return (identity.get("forward_passes") or {}).get(kind, ALONE)


def in_batches(mode: str, compute: Callable, *columns: Sequence) -> list:
    """``compute`` over the rows of ``columns`` as ``mode`` says (:data:`FIXED` or :data:`ALONE`)."""
    if mode == FIXED:
        return fixed_batches(compute, *columns)
    if mode == ALONE:
        return each_alone(compute, *columns)
    raise ValueError(f"unknown forward-pass mode {mode!r}")


def independent_of_batch_mates(compute: Callable, *columns: Sequence, size: int = BATCH_SIZE) -> bool:
    """Whether every row of ``columns`` gets the same output bits from :func:`fixed_batches` whatever rows share
    its batch: the rows in order, reversed, in a seeded shuffle, and the first alone in a padded batch (so a row
    padded to a longer batch-mate, as a tokenizer's ``padding: longest`` does, shows)."""
    n = len(columns[0])
    orders = [np.arange(n), np.arange(n)[::-1], np.random.default_rng(0).permutation(n), np.arange(1)]

    def outputs(order) -> dict[int, bytes]:
        rows = fixed_batches(compute, *(_take(column, order.tolist()) for column in columns), size=size)
        return {int(i): np.asarray(row, dtype=np.float32).tobytes() for i, row in zip(order, rows)}

    first = outputs(orders[0])
    return all(first[i] == value for order in orders[1:] for i, value in outputs(order).items())


def probe(scorer, kind: str) -> dict[str, str] | None:
    """The forward-pass mode of each input kind of a loaded ``scorer`` (see the module doc):
    ``{"image": mode, "text": mode}`` for an embedding scorer (``text`` only where it has a text tower),
    ``{"pair": mode}`` for a pairwise one; None for a judge (its answers are asked one question at a time)."""
    if kind == "judge":
        return None
    transform = _image_transform(scorer)
    pixels = _probe_pixels(transform) if transform is not None else None
    mode = lambda ok: FIXED if ok else ALONE  # noqa: E731
    if kind == "pairwise":
        return {"pair": mode(independent_of_batch_mates(scorer.compare, pixels, pixels.flip(0)))}
    modes = {}
    if pixels is not None:
        modes["image"] = mode(independent_of_batch_mates(scorer.encode_pixels, pixels))
    if getattr(scorer, "text_preprocessing", None) is not None:
        modes["text"] = mode(independent_of_batch_mates(scorer.embed_texts, _probe_texts()))
    return modes


def _image_transform(scorer) -> Callable | None:
    """The scorer's image preprocessing, or None for a text-only scorer (which raises on the attribute)."""
    try:
        return scorer.image_transform
    except (AttributeError, CultureboardError):
        return None


def _probe_pixels(transform: Callable):
    """:data:`PROBE_ROWS` seeded noise images, each through ``transform`` (the scorer's own preprocessing)."""
    import torch
    from PIL import Image

    rng = np.random.default_rng(1)
    return torch.stack([transform(Image.fromarray(rng.integers(0, 256, (48 + 8 * (k % 5), 64, 3), dtype=np.uint8)))
                        for k in range(PROBE_ROWS)])


def _probe_texts() -> list[str]:
    """:data:`PROBE_ROWS` texts of 2 to 40 words, so padding to the longest batch-mate shows if it matters."""
    words = "a photo of traditional food clothing and architecture from many countries at dusk".split()
    return [" ".join(words[(k + j) % len(words)] for j in range(2 + (7 * k) % 39)) for k in range(PROBE_ROWS)]
