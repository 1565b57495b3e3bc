"""Measure the perceptual-hash distances of copies and of distinct photographs, which the copy threshold is chosen on.

    python benchmarks/copy_thresholds.py [--photos 50]

Copies: each of the photos (the procedural house photographs of ``tests/photo_factory.py``, 384 x 288 px) edited
the ways of :data:`EDITS` (resized, JPEG q=60, cropped by 10% in three ways, mirrored, tinted, colour-graded,
fitted to a square and re-encoded as ``make-control copied-references`` does), and a few edits that are NOT
promised (:data:`BEYOND`: other crops, a hue turned by 60 degrees). Distinct: every pair of the photos, all of one
subject (a house at its own position, scale, colours and light), compared both ways, as validate compares two
images of a submission. Prints each kind's distance range in bits of HASH_SIZE^2 and whether :data:`THRESHOLD`
separates the promised copies from the distinct pairs.
"""

from __future__ import annotations

import argparse
import io
import sys
from itertools import combinations
from pathlib import Path

import numpy as np
from PIL import Image, ImageEnhance, ImageOps

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from photo_factory import copy_edits, house_photo  # noqa: E402

from cultureboard.evaluators.submission.perceptual import HASH_SIZE, THRESHOLD, distances, image_hash, views  # noqa: E402


def measure(n: int) -> tuple[dict[str, list[int]], list[int]]:
    """({edit: distance of each photo's copy to the photo}, [distance of each pair of distinct photos]); a copy is
    compared with the photo's views at the copy's aspect ratio, as validate compares an image with a reference."""
    photos = [house_photo(i) for i in range(n)]
    edits, beyond = copy_edits()
    copies = {}
    for name, edit in {**edits, **{f"{k} (not promised)": v for k, v in beyond.items()}}.items():
        found = []
        for photo in photos:
            copy = edit(photo)
            found.append(int(distances(image_hash(copy)[None], [views(photo, copy.width / copy.height)])[0, 0]))
        copies[name] = found
    plain = np.array([image_hash(p) for p in photos])
    d = distances(plain, [views(p) for p in photos])
    return copies, [int(min(d[i, j], d[j, i])) for i, j in combinations(range(n), 2)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--photos", type=int, default=50)
    args = parser.parse_args()
    copies, distinct = measure(args.photos)
    print(f"phash, {HASH_SIZE ** 2} bits; threshold {THRESHOLD}; {args.photos} photos of one subject")
    worst = 0
    for name, found in copies.items():
        if "not promised" not in name:
            worst = max(worst, max(found))
        print(f"  copy {name:40s} {min(found):3d} .. {max(found):3d} (median {int(np.median(found))})")
    print(f"  distinct pairs ({len(distinct)}){'':24s} {min(distinct):3d} .. {max(distinct):3d} "
          f"(1st percentile {int(np.percentile(distinct, 1))})")
    print(f"separated: {worst <= THRESHOLD < min(distinct)} (largest promised copy {worst}, smallest distinct "
          f"{min(distinct)})")


if __name__ == "__main__":
    main()
