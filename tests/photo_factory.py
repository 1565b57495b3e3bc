"""Procedural stand-ins for photographs (no photograph is committed): one subject, a house, photographed many times.

Each photo has a background of 1/f ("pink") noise, like the spectrum of natural images, a sky-to-ground light
gradient, and the house (walls, roof, door, windows) at its own position, scale, colours and lighting, with a few
objects around it: distinct photographs of one subject, the hard negatives of a copy detector.
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, ImageDraw, ImageEnhance, ImageOps


def pink_noise(rng: np.random.Generator, size: tuple[int, int]) -> np.ndarray:
    """A (h, w) field of 1/f noise scaled to 0..1."""
    h, w = size
    fy, fx = np.meshgrid(np.fft.fftfreq(h), np.fft.rfftfreq(w), indexing="ij")
    f = np.hypot(fy, fx)
    f[0, 0] = 1
    spectrum = (rng.normal(size=f.shape) + 1j * rng.normal(size=f.shape)) / f
    field = np.fft.irfft2(spectrum, s=(h, w))
    return (field - field.min()) / (np.ptp(field) or 1)


def house_photo(seed: int, size: tuple[int, int] = (384, 288)) -> Image.Image:
    """Photo ``seed`` of the house: the same seed gives the same pixels."""
    rng = np.random.default_rng([7, seed])
    w, h = size
    ground = np.linspace(0, 1, h)[:, None, None]
    sky, earth = np.array([120, 160, 220]) * rng.uniform(0.7, 1.1), np.array([90, 120, 60]) * rng.uniform(0.7, 1.2)
    texture = pink_noise(rng, (h, w))[..., None]
    horizon = rng.uniform(0.45, 0.7)
    base = np.where(ground < horizon, sky, earth) * (0.6 + 0.8 * texture)
    image = Image.fromarray(np.clip(base, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    scale = rng.uniform(0.35, 0.6)
    bw, bh = scale * w, scale * w * rng.uniform(0.55, 0.8)
    x0 = rng.uniform(0.05, 0.95 - scale) * w
    y1 = horizon * h + rng.uniform(-0.05, 0.15) * h
    y0 = y1 - bh
    wall = tuple(int(c) for c in np.array([200, 170, 130]) * rng.uniform(0.7, 1.15, 3))
    draw.rectangle([x0, y0, x0 + bw, y1], fill=wall)
    draw.polygon([(x0 - 0.05 * bw, y0), (x0 + bw / 2, y0 - rng.uniform(0.3, 0.6) * bh), (x0 + 1.05 * bw, y0)],
                 fill=tuple(int(c) for c in np.array([140, 50, 40]) * rng.uniform(0.7, 1.2, 3)))
    door = x0 + rng.uniform(0.15, 0.7) * bw
    draw.rectangle([door, y1 - 0.45 * bh, door + 0.18 * bw, y1], fill=(70, 45, 30))
    for i in range(int(rng.integers(2, 5))):
        wx = x0 + (0.08 + 0.22 * i) * bw
        if abs(wx - door) > 0.2 * bw:
            draw.rectangle([wx, y0 + 0.2 * bh, wx + 0.14 * bw, y0 + 0.45 * bh], fill=(60, 80, 110))
    for _ in range(int(rng.integers(2, 6))):  # bushes, trees, stones around it
        cx, cy, r = rng.uniform(0, w), rng.uniform(horizon * h, h), rng.uniform(0.02, 0.08) * w
        draw.ellipse([cx - r, cy - r, cx + r, cy + 0.7 * r], fill=tuple(int(c) for c in rng.integers(20, 140, 3)))
    light = np.linspace(rng.uniform(0.7, 1.0), rng.uniform(0.9, 1.2), w)[None, :, None]
    pixels = np.asarray(image, dtype=float) * light + rng.normal(0, 4, (h, w, 3))
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))


def jpeg(image: Image.Image, quality: int = 60) -> Image.Image:
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, "JPEG", quality=quality)
    return Image.open(io.BytesIO(buffer.getvalue()))


def hue_shift(image: Image.Image, degrees: float) -> Image.Image:
    h, s, v = image.convert("HSV").split()
    turned = ((np.asarray(h, dtype=int) + round(degrees * 256 / 360)) % 256).astype(np.uint8)
    return Image.merge("HSV", [Image.fromarray(turned), s, v]).convert("RGB")


def tint(image: Image.Image, gains: tuple[float, float, float] = (1.15, 1.0, 0.85)) -> Image.Image:
    pixels = np.asarray(image.convert("RGB"), dtype=float) * np.array(gains)
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))


def crop(image: Image.Image, left: float, top: float, right: float, bottom: float) -> Image.Image:
    w, h = image.size
    return image.crop((round(left * w), round(top * h), round(w - right * w), round(h - bottom * h)))


def copy_edits() -> tuple[dict, dict]:
    """({name: edit} that a copy detector must see through, {name: edit} beyond what it promises)."""
    promised = {
        "resized to half": lambda im: im.resize((im.width // 2, im.height // 2), Image.Resampling.BICUBIC),
        "JPEG q=60": jpeg,
        "cropped 10% (5% off each side)": lambda im: crop(im, 0.05, 0.05, 0.05, 0.05),
        "cropped 10% (off left and top)": lambda im: crop(im, 0.10, 0.10, 0, 0),
        "cropped 10% (off the right)": lambda im: crop(im, 0, 0, 0.10, 0),
        "mirrored": ImageOps.mirror,
        "tinted (R x1.15, B x0.85)": tint,
        "graded (hue 15 deg, +10% light, +20% colour)":
            lambda im: ImageEnhance.Color(ImageEnhance.Brightness(hue_shift(im, 15)).enhance(1.1)).enhance(1.2),
        "square 256 px, JPEG q=60": lambda im: jpeg(ImageOps.fit(im, (256, 256), method=Image.Resampling.BICUBIC)),
        "mirrored, cropped 10%, JPEG q=60": lambda im: jpeg(ImageOps.mirror(crop(im, 0.05, 0.05, 0.05, 0.05))),
    }
    beyond = {
        "cropped 5% off the right": lambda im: crop(im, 0, 0, 0.05, 0),
        "cropped 15% (centred)": lambda im: crop(im, 0.075, 0.075, 0.075, 0.075),
        "hue turned 60 deg": lambda im: hue_shift(im, 60),
    }
    return promised, beyond
