"""Image files as every stage reads them: one set of suffixes, and pixels with their EXIF orientation applied."""

from __future__ import annotations

import os

#: File suffixes of the image formats a submission, a reference folder or the site may hold.
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp"})


def open_rgb(path: str | os.PathLike):
    """The image at ``path`` as an RGB ``PIL.Image``, rotated / mirrored as its EXIF orientation says.

    Pixels are always read through here (scoring, thumbnails), so a photo stored sideways with an
    orientation tag is scored as it is shown.
    """
    from PIL import Image, ImageOps

    with Image.open(path) as image:
        return ImageOps.exif_transpose(image).convert("RGB")
