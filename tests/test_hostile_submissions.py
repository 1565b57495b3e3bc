"""Hostile inputs against the submission side: ``cultureboard.images.inspect_image`` on crafted image bytes,
and (below) the real CLI (validate, package, site build) on a corpus of hostile submissions."""

from __future__ import annotations

import hashlib
import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from cultureboard.errors import CultureboardError
from cultureboard.images import IMAGE_CODES, ImageLimits, inspect_image, open_rgb, require_image

# ------------------------------------------------------------------------------------ image bytes

def encode(image: Image.Image, fmt: str = "PNG", **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_header_only(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` over a few bytes of data: a decompression bomb's shape."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def before_iend(png: bytes, *chunks: bytes) -> bytes:
    """``png`` with ``chunks`` inserted after its pixel data, where the image library reads them only on decoding."""
    end = png.rindex(b"IEND") - 4
    return png[:end] + b"".join(chunks) + png[end:]


RED = Image.new("RGB", (64, 80), (200, 0, 0))
PNG = encode(RED)
EXIF_ROTATED = Image.Exif()
EXIF_ROTATED[0x0112] = 6  # "rotate 90 CW to display": stored 64x80, shown 80x64


def codes(data: bytes, **options) -> list[str]:
    return [p.code for p in inspect_image(data, **options).problems]


# ------------------------------------------------------------------------------------ inspect_image

@pytest.mark.parametrize("fmt, suffix", [("PNG", ".png"), ("JPEG", ".jpg"), ("JPEG", ".jpeg"), ("WEBP", ".webp")])
def test_a_plain_image_has_no_problem_and_its_facts(fmt, suffix):
    data = encode(RED, fmt)
    info = inspect_image(data, name=f"a/b{suffix}", size=(64, 80), full_decode=True)
    assert info.problems == ()
    assert info.ok
    assert (info.format, info.width, info.height, info.mode, info.frames, info.orientation) == (fmt, 64, 80, "RGB", 1, 1)
    assert info.n_bytes == len(data)
    assert info.sha256 == hashlib.sha256(data).hexdigest()


def test_lossless_webp_header_gives_its_size():
    info = inspect_image(encode(RED, "WEBP", lossless=True))
    assert (info.width, info.height, info.problems) == (64, 80, ())


def test_a_path_is_read_and_a_link_is_not_followed(tmp_path):
    (tmp_path / "x.png").write_bytes(PNG)
    (tmp_path / "link.png").symlink_to(tmp_path / "x.png")
    assert inspect_image(tmp_path / "x.png").ok
    link = inspect_image(tmp_path / "link.png")
    assert [p.code for p in link.problems] == ["file.unreadable"] and "symbolic link" in link.problems[0].message
    assert link.sha256 is None
    assert codes(tmp_path) == ["file.unreadable"]  # a folder
    assert codes(tmp_path / "absent.png") == ["file.unreadable"]


def test_the_byte_limit_is_checked_before_reading(tmp_path):
    (tmp_path / "x.png").write_bytes(PNG)
    small = ImageLimits(max_file_bytes=len(PNG) - 1)
    assert codes(tmp_path / "x.png", limits=small) == ["file.too_large"]
    assert codes(PNG, limits=small) == ["file.too_large"]


@pytest.mark.parametrize("data, name, code", [
    (PNG, "x.gif", "file.bad_extension"),
    (PNG, "x", "file.bad_extension"),
    (b"GIF89a" + b"\0" * 64, "x.png", "file.not_an_image"),
    (b"#!/bin/sh\necho hi\n", "x.png", "file.not_an_image"),
    (encode(RED, "JPEG"), "x.png", "file.format_mismatch"),
    (PNG[:20], "x.png", "file.truncated"),
    (PNG[:-6], "x.png", "file.truncated"),
    (PNG + b"PK\x03\x04zip", "x.png", "file.trailing_data"),
    (encode(RED, "JPEG")[:-2], "x.jpg", "file.truncated"),
    (encode(RED, "WEBP") + b"xx", "x.webp", "file.truncated"),
])
def test_structure_problems(data, name, code):
    assert code in codes(data, name=name)


def test_format_mismatch_says_what_the_file_is():
    [problem] = inspect_image(encode(RED, "JPEG"), name="x.png").problems
    assert "is a JPEG image" in problem.message and ".jpg" in problem.fix


@pytest.mark.parametrize("data", [
    png_header_only(100_000, 100_000),  # 10^10 pixels: the image library would refuse, or allocate 30 GB
    png_header_only(5000, 64),
    png_header_only(4096, 4097),
])
def test_dimensions_are_checked_from_the_header_before_decoding(data):
    assert codes(data) == ["file.dimensions"]


def test_a_jpeg_header_claiming_huge_dimensions():
    data = bytearray(encode(RED, "JPEG"))
    sof = data.index(b"\xff\xc0")
    data[sof + 5: sof + 9] = struct.pack(">HH", 60000, 60000)
    assert codes(bytes(data)) == ["file.dimensions"]


def test_pixel_count_limit_and_minimum_side():
    assert codes(PNG, limits=ImageLimits(max_pixels=64 * 80 - 1)) == ["file.dimensions"]
    assert codes(PNG, limits=ImageLimits(max_pixels=64 * 80)) == []
    assert codes(encode(Image.new("RGB", (63, 500))), size=None) == ["file.too_small"]


def test_sixteen_bit_greyscale_is_a_problem_and_open_rgb_scales_it(tmp_path):
    data = encode(Image.fromarray(np.full((64, 64), 30000, dtype=np.uint16)))
    info = inspect_image(data)
    assert info.mode == "I;16" and [p.code for p in info.problems] == ["file.bit_depth"]
    (tmp_path / "g.png").write_bytes(data)
    assert open_rgb(tmp_path / "g.png").getpixel((0, 0)) == (117, 117, 117)  # 30000 >> 8, not white


def test_eight_bit_modes_are_fine():
    for mode in ("L", "LA", "P", "RGBA", "1"):
        assert codes(encode(Image.new(mode, (64, 64)))) == [], mode
    assert codes(encode(Image.new("CMYK", (64, 64)), "JPEG")) == []


@pytest.mark.parametrize("fmt", ["PNG", "WEBP"])
def test_animations_are_a_problem(fmt):
    frames = [Image.new("RGB", (64, 64), c) for c in ("red", "blue", "green")]
    info = inspect_image(encode(frames[0], fmt, save_all=True, append_images=frames[1:]))
    assert info.frames == 3
    assert [p.code for p in info.problems] == ["file.animated"]


def test_text_chunk_bombs_after_the_pixel_data():
    ztxt = chunk(b"zTXt", b"comment\0\0" + zlib.compress(b"\0" * (64 * 2**20), 9))  # 64 KB inflating to 64 MB
    itxt = chunk(b"iTXt", b"k\0\1\0\0\0" + zlib.compress(b"a" * (2 * 2**20), 9))
    for bomb in (before_iend(PNG, ztxt), before_iend(PNG, itxt)):
        assert codes(bomb) == ["file.text_bomb"]
    # many small chunks add up
    small = chunk(b"tEXt", b"k\0" + b"x" * 300_000)
    assert codes(before_iend(PNG, small, small, small)) == []
    assert codes(before_iend(PNG, small, small, small, small)) == ["file.text_bomb"]
    # the image library would raise on these when it decodes the pixels: so do we, before
    assert codes(before_iend(PNG, chunk(b"zTXt", b"k\0\5abc"))) == ["file.corrupt"]


def test_text_bomb_would_break_decoding(tmp_path):
    """What the check prevents: the image library refuses the bomb only when the pixels are read."""
    bomb = before_iend(PNG, chunk(b"zTXt", b"comment\0\0" + zlib.compress(b"\0" * (2 * 2**20), 9)))
    (tmp_path / "bomb.png").write_bytes(bomb)
    with Image.open(tmp_path / "bomb.png") as img:
        assert img.size == (64, 80)  # the header opens fine
    with pytest.raises(ValueError):
        open_rgb(tmp_path / "bomb.png")


@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "WEBP"])
def test_exif_orientation_gives_the_displayed_size(fmt):
    data = encode(RED, fmt, exif=EXIF_ROTATED)
    info = inspect_image(data, size=(80, 64))
    assert (info.orientation, info.width, info.height, info.problems) == (6, 80, 64, ())
    [problem] = inspect_image(data, size=(64, 80)).problems
    assert problem.code == "file.wrong_size" and "80x64" in problem.message and "EXIF" in problem.message


def test_png_exif_after_the_pixel_data_counts():
    exif = EXIF_ROTATED.tobytes()
    data = before_iend(PNG, chunk(b"eXIf", exif[6:] if exif.startswith(b"Exif") else exif))
    assert inspect_image(data).orientation == 6


def test_wrong_size():
    [problem] = inspect_image(PNG, size=(64, 64)).problems
    assert problem.code == "file.wrong_size" and "64x80" in problem.message and "64x64" in problem.fix


def _damaged_idat(fix_crc: bool) -> bytes:
    """A PNG whose compressed pixels have one flipped byte (lengths and IEND intact), its CRC-32 recomputed or not."""
    data = bytearray(encode(Image.frombytes("RGB", (64, 64), bytes(range(256)) * 48)))
    start = data.index(b"IDAT")
    length = struct.unpack_from(">I", data, start - 4)[0]
    data[start + 20] ^= 0xFF
    if fix_crc:
        data[start + 4 + length: start + 8 + length] = struct.pack(">I", zlib.crc32(data[start: start + 4 + length]))
    return bytes(data)


def test_full_decode_finds_damage_that_the_structure_hides():
    for fix_crc, what in ((False, "checksum"), (True, "")):
        data = _damaged_idat(fix_crc)
        assert codes(data) == []
        [problem] = inspect_image(data, full_decode=True).problems
        assert problem.code in ("file.corrupt", "file.truncated") and what in problem.message


def test_every_code_is_documented():
    found = set()
    for data, options in [(PNG, {"name": "x.gif"}), (PNG, {"size": (1, 1)}), (png_header_only(9999, 9999), {})]:
        found |= set(codes(data, **options))
    assert found <= set(IMAGE_CODES)


def test_require_image_raises_one_line_naming_the_file():
    assert require_image(PNG, name="a.png").width == 64
    with pytest.raises(CultureboardError) as caught:
        require_image(PNG[:-6], name="images/a.png")
    assert caught.value.source == "images/a.png" and "truncated" in caught.value.problem
