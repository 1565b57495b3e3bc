"""Perceptual hashes that find copies: a picture resized, re-encoded, cropped by a tenth, mirrored or tinted
keeps nearly the same hash; two distinct photographs of one subject do not.

The hash is ``imagehash.phash`` with ``hash_size`` :data:`HASH_SIZE` of the image in greyscale, first resized to
:data:`SIDE` px on its long side: the 2-D DCT of a (4 x HASH_SIZE)^2 thumbnail, one bit per coefficient of its
top-left HASH_SIZE^2 (1 where it exceeds their median). Greyscale and the median make it blind to re-encoding and
to tints and brightness, the low frequencies to resizing. It is not blind to crops, nor to mirrors: a picture is
compared with its :func:`views`, itself cropped by 0 or 10% of each side (none; all of it off one end; half off
each end: 4 x 4 crops), each also mirrored. The distance of an image to a picture is the smallest Hamming distance
of its hash to the picture's views: 0 for the same picture, about HASH_SIZE^2 / 2 for unrelated ones. At most
:data:`THRESHOLD` is a copy. Both numbers were chosen on measured pairs (``benchmarks/copy_thresholds.py``; README
"Copies and near-copies"), which also say what is not found (other crops, hue turned by more than about 20 degrees).

A photograph handed in as a generation is usually fitted to the submission's shape first (a 4:3 photograph fitted
to a 512 px square loses a quarter of its width): a reference photograph's views are taken of it as it is and
centre-fitted to the submission's aspect ratio (``aspect``). An image with almost no structure (a flat colour:
every coefficient near zero, the bits noise) is featureless (:data:`FEATURELESS`) and never compared: two flat
images of different colours would otherwise match (identical bytes are still caught by their sha256).
"""

from __future__ import annotations

from itertools import product

import numpy as np
from PIL import Image, ImageOps

#: Bits a side of the DCT block the hash keeps: HASH_SIZE^2 = 256 bits.
HASH_SIZE = 16
#: The long side (px) an image is resized to before it is hashed and cropped.
SIDE = 256
#: The largest Hamming distance (of 256 bits) at which an image is a copy of a picture (module docstring).
THRESHOLD = 36
#: Below this standard deviation of the greyscale thumbnail (0-255 levels) an image is featureless.
FEATURELESS = 2.0
#: The crops of :func:`views` along one axis: (share off the start, share off the end).
CUTS = ((0.0, 0.0), (0.1, 0.0), (0.05, 0.05), (0.0, 0.1))


def _grey(image: Image.Image) -> Image.Image:
    grey = image.convert("L")
    scale = SIDE / max(grey.size)
    return grey.resize((max(1, round(grey.width * scale)), max(1, round(grey.height * scale))), Image.Resampling.LANCZOS)


def _phash(grey: Image.Image) -> np.ndarray:
    import imagehash

    return imagehash.phash(grey, hash_size=HASH_SIZE).hash.flatten()


def featureless(grey: Image.Image) -> bool:
    thumb = np.asarray(grey.resize((4 * HASH_SIZE, 4 * HASH_SIZE), Image.Resampling.BOX), dtype=float)
    return float(thumb.std()) < FEATURELESS


def image_hash(image: Image.Image) -> np.ndarray | None:
    """The hash of ``image`` (bool array of HASH_SIZE^2 bits), or None when it is featureless."""
    grey = _grey(image)
    return None if featureless(grey) else _phash(grey)


def image_hashes(image: Image.Image) -> np.ndarray | None:
    """The hashes of ``image`` and of its mirror (a (2, HASH_SIZE^2) array), or None when it is featureless."""
    grey = _grey(image)
    return None if featureless(grey) else np.stack([_phash(grey), _phash(ImageOps.mirror(grey))])


def views(image: Image.Image, aspect: float | None = None) -> np.ndarray | None:
    """The hashes of the views of a picture (a (n, HASH_SIZE^2) bool array): of ``image`` and, when ``aspect``
    (width / height) crops it, of ``image`` centre-fitted to ``aspect``, each cropped by :data:`CUTS` x
    :data:`CUTS` and mirrored; None when ``image`` is featureless."""
    shapes = [image]
    if aspect:
        w, h = image.size
        fitted = (w, round(w / aspect)) if w / h < aspect else (round(h * aspect), h)
        if abs(fitted[0] - w) > 1 or abs(fitted[1] - h) > 1:
            shapes.append(ImageOps.fit(image, fitted, method=Image.Resampling.BICUBIC))
    out = []
    for shape in shapes:
        grey = _grey(shape)
        if featureless(grey):
            return None
        w, h = grey.size
        for (left, right), (top, bottom) in product(CUTS, CUTS):
            crop = grey.crop((round(left * w), round(top * h), round(w - right * w), round(h - bottom * h)))
            out += [_phash(crop), _phash(ImageOps.mirror(crop))]
    return np.array(out)


def distances(hashes: np.ndarray, pictures: list[np.ndarray]) -> np.ndarray:
    """The distance of each hash (rows of ``hashes``, (n, bits)) to each picture (its views, (v, bits)): an (n, m)
    int array, the smallest Hamming distance to any of the picture's views."""
    if not len(hashes) or not pictures:
        return np.zeros((len(hashes), len(pictures)), dtype=np.int32)
    packed = np.packbits(hashes, axis=1)
    flat = np.packbits(np.concatenate(pictures), axis=1)
    starts = np.cumsum([0] + [len(p) for p in pictures[:-1]])
    out = np.empty((len(hashes), len(pictures)), dtype=np.int32)
    for i in range(0, len(hashes), 256):  # 256 hashes x all views at a time: bounded memory
        d = np.bitwise_count(packed[i: i + 256, None, :] ^ flat[None]).sum(axis=2, dtype=np.int32)
        out[i: i + 256] = np.minimum.reduceat(d, starts, axis=1)
    return out
