"""Measure the near-reference threshold of an embedding scorer, and print the entry to record for it.

    python benchmarks/near_reference_threshold.py --scorers tiny --scorer dinov2-base [--photos 50] [--device cpu]
    python benchmarks/near_reference_threshold.py --scorers default --scorer dinov2-base --device cuda   # real weights

Pairs (the same as ``benchmarks/copy_thresholds.py``): each of ``--photos`` procedural photographs of one subject
(``tests/photo_factory.py`` house_photo 0..n-1, 384 x 288 px; not real photographs) against its copies edited the
ways validate promises to see through (resized, JPEG q=60, cropped by 10% three ways, mirrored, tinted,
colour-graded, fitted to a square and re-encoded, mirrored + cropped + re-encoded: ``copy_edits``), and every pair
of distinct photographs. For each the cosine of the scorer's unit embeddings (higher = closer).

The threshold t (an image is near_reference when max_g cos >= t, :mod:`cultureboard.evaluators.engine.near_reference`):

* separated (every promised copy above every distinct pair): the midpoint of the lowest copy and the highest
  distinct pair, rounded down to 4 decimals;
* not separated: the smallest 4-decimal value above every distinct pair (no distinct pair is ever flagged: a
  false positive leaves an honest image out of a score), with the promised edits whose copies fall below it
  listed as missed (validate's perceptual hash still refuses those).

Prints the measurements and the YAML entry, keyed by the scorer's identity (model id @ resolved revision), to add
to ``evaluators/engine/data/near_reference.yaml``. A scorer that cannot load is one error line.
"""

from __future__ import annotations

import argparse
import math
import sys
from datetime import date
from itertools import combinations
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from photo_factory import copy_edits, house_photo  # noqa: E402

from cultureboard.errors import CultureboardError  # noqa: E402
from cultureboard.evaluators.engine.near_reference import embedder_key  # noqa: E402

STEP = 1e-4


def _embed(scorer, images, batch: int = 32) -> np.ndarray:
    return np.concatenate([scorer.embed_images(images[i:i + batch]) for i in range(0, len(images), batch)])


def measure(scorer, n: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """({edit: cos of each photo's copy with the photo}, cos of each pair of distinct photos)."""
    photos = [house_photo(i) for i in range(n)]
    plain = _embed(scorer, photos)
    promised, _ = copy_edits()
    copies = {name: (_embed(scorer, [edit(p) for p in photos]) * plain).sum(axis=1) for name, edit in promised.items()}
    gram = plain @ plain.T
    return copies, np.array([gram[i, j] for i, j in combinations(range(n), 2)])


def choose(copies: dict[str, np.ndarray], distinct: np.ndarray) -> tuple[float, bool, dict[str, float]]:
    """(threshold, separated, {edit: share of its copies below the threshold (missed)}) by the module's rule."""
    lowest, highest = min(float(v.min()) for v in copies.values()), float(distinct.max())
    separated = lowest > highest
    if separated:
        t = math.floor((lowest + highest) / 2 / STEP) * STEP
    else:
        t = (math.floor(highest / STEP) + 1) * STEP
    t = round(t, 4)
    assert t > highest and (not separated or t <= lowest), (t, lowest, highest)
    return t, separated, {name: round(float((v < t).mean()), 4) for name, v in copies.items() if (v < t).any()}


def entry(identity: dict, name: str, standin: bool, n: int, copies, distinct) -> dict:
    t, separated, missed = choose(copies, distinct)
    return {embedder_key(identity): {
        "threshold": t,
        "preprocessing": identity.get("preprocessing"),
        "measured": {
            "by": "benchmarks/near_reference_threshold.py", "date": date.today().isoformat(),
            "scorer": f"{name} ({'a tiny random stand-in: its threshold separates nothing real' if standin else 'real weights'})",
            "on": f"{n} procedural photographs of one subject (tests/photo_factory.py house_photo 0-{n - 1}, "
                  "384 x 288 px; not real photographs) and their copies edited as copy_edits() does",
            "copies_lowest": {k: round(float(v.min()), 6) for k, v in copies.items()},
            "distinct_pairs": len(distinct), "distinct_highest": round(float(distinct.max()), 6),
            "separated": separated,
            "rule": ("midpoint of the lowest copy and the highest distinct pair, rounded down to 4 decimals"
                     if separated else "the smallest 4-decimal value above every distinct pair (no distinct pair "
                                       "flagged); the copies below it are missed"),
            **({"missed": missed} if missed else {}),
        }}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scorers", default="tiny", help="a scorer config file, 'tiny' or 'default'")
    parser.add_argument("--scorer", default="dinov2-base", help="the embedding scorer of the check")
    parser.add_argument("--photos", type=int, default=50)
    parser.add_argument("--device", default=None)
    args = parser.parse_args()
    from cultureboard.device import choose_device, choose_dtype
    from cultureboard.evaluators.engine.scorers import Scorers
    from cultureboard.standins import resolve_scorers

    try:
        device = choose_device(args.device)
        pool = Scorers(resolve_scorers(args.scorers), device, choose_dtype(device, None))
        scorer = pool.model(args.scorer)
        identity = pool.identity(args.scorer)
    except CultureboardError as exc:
        sys.exit(f"error: {exc.message}")
    copies, distinct = measure(scorer, args.photos)
    print(f"{args.scorer} = {embedder_key(identity)}; {args.photos} photos of one subject; cosine, higher = closer")
    for name, v in copies.items():
        print(f"  copy {name:45s} {v.min():.6f} .. {v.max():.6f} (median {np.median(v):.6f})")
    print(f"  distinct pairs ({len(distinct)}){'':30s} {distinct.min():.6f} .. {distinct.max():.6f} "
          f"(99th percentile {np.percentile(distinct, 99):.6f})")
    record = entry(identity, args.scorer, bool(identity.get("standin")), args.photos, copies, distinct)
    (key, value), = record.items()
    print(f"threshold {value['threshold']}; separated: {value['measured']['separated']}"
          + (f"; missed: {value['measured']['missed']}" if value["measured"].get("missed") else ""))
    print("\n# add to evaluators/engine/data/near_reference.yaml:")
    print(yaml.safe_dump(record, sort_keys=False, allow_unicode=True, width=110))


if __name__ == "__main__":
    main()
