"""Hostile inputs against the submission side: ``cultureboard.images.inspect_image`` on crafted image bytes,
and the real CLI (``validate``, ``package``, ``site build``) on a corpus of hostile submissions.

Corpus count (for the README; ``test_corpus_count`` keeps it true): 124 CLI cases, none ending in a traceback.

* 95 rejected cleanly: validate 36 (VALIDATE_REJECTED, a multi-picture JPEG among them, and a 20,000-line broken
  metadata.jsonl whose report is capped), package 19 (PACKAGE_REJECTED, a multi-picture JPEG and symbolic-link loops
  among them, and 25 mapping problems reported at once), site build 40 (SITE_SKIPPED: the bad entry, a text the site
  may not show among them, is left out with a one-line warning and a note in the footer, the rest is built; a
  results folder with no usable entry, which is one error; SITE_UNVERIFIED: an image whose bytes are not the
  declared, valid ones is not published, with a warning naming the submission; WORKER_DEATHS: a thumbnail worker
  killed, out of memory, refused a write or alive but silent (hung) ends the build in one error line;
  REBUILD_CHANGES: a source changed, replaced or deleted since the previous build is left out as a fresh build
  leaves it out; a dataset prompt holding a NUL, one error and no site);
* 29 accepted by design: validate 10 (VALIDATE_ACCEPTED), package 3 (PACKAGE_ACCEPTED), site build 16 (a raw
  U+2028 inside a metadata string, a linked thumbnail of the earlier build made again, EXIF orientation;
  CSV_FORMULAS: names a spreadsheet would run as a formula after whitespace or in full-width forms (a name with a
  line feed is not shown at all), published with a leading apostrophe in every CSV download; a model name longer
  than a file name, shown in full with a bounded page name; DEEP_CACHES: the previous site's cache files nested
  100,000 deep, ignored and made again; REBUILD_CHANGES: a previous thumbnail or full-size copy altered, replaced by
  a link or missing, or a source replaced by a copy of its bytes, each published again as a fresh build publishes
  it).

The inspect_image unit tests above the corpus are not counted.
"""

from __future__ import annotations

import datetime
import hashlib
import io
import json
import os
import re
import shutil
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
import yaml
from cultureboard.evaluators.submission.format import read_metadata, submission_id
from cultureboard.evaluators.submission.format import read_spec as format_read_spec
from cultureboard.evaluators.submission.validate import Limits, Report, validate
from PIL import Image
from submission_factory import (
    SUBMISSION_ID,
    make_dataset,
    make_submission,
    read_rows,
    read_spec,
    write_rows,
    write_spec,
    yaml_line,
)

from cultureboard.cli import main
from cultureboard.errors import CultureboardError
from cultureboard.images import IMAGE_CODES, ImageLimits, inspect_image, open_rgb, require_image
from cultureboard.naming import slug

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


# ======================================================================================= the hostile corpus
#
# Each case runs the real CLI (``cultureboard.cli.main``) and must end in one of two ways, never in a
# traceback: "rejected" (a non-zero exit and a line naming the file and the problem) or "accepted" by
# design (exit 0, and what was accepted is usable by the next step).

def cli(capsys, *argv: str) -> tuple[int, str]:
    """Exit code and everything printed (stdout, then stderr) of ``cultureboard ARGV``."""
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text, text
    return code, text


# ------------------------------------------------------------------------------------ validate

SUSHI0 = "images/tiny/jp/sushi/0.png"


@pytest.fixture(scope="module")
def tiny_dataset(tmp_path_factory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("ds") / "tiny-dataset")


@pytest.fixture(scope="module")
def pristine(tmp_path_factory, tiny_dataset) -> Path:
    return make_submission(tmp_path_factory.mktemp("pristine"), tiny_dataset)


@pytest.fixture
def sub(tmp_path, pristine) -> Path:
    """A fresh copy of the valid 64 x 64 px submission of submission_factory."""
    return Path(shutil.copytree(pristine, tmp_path / "submissions" / SUBMISSION_ID, symlinks=True))


def spec_edit(change):
    def mutate(folder: Path) -> None:
        spec = read_spec(folder)
        change(spec)
        write_spec(folder, spec)
    return mutate


def yaml_append(text: str):
    def mutate(folder: Path) -> None:
        with open(folder / "submission.yaml", "a", encoding="utf-8") as fh:
            fh.write(text)
    return mutate


def metadata_text(change):
    """Rewrite metadata.jsonl's text (UTF-8, written as given: no escaping of U+2028 and the like)."""
    def mutate(folder: Path) -> None:
        path = folder / "metadata.jsonl"
        path.write_bytes(change(path.read_text(encoding="utf-8")).encode("utf-8"))
    return mutate


def first_line(change):
    """Change metadata.jsonl's first line (a JSON text) with ``change``."""
    return metadata_text(lambda t: change(t.split("\n", 1)[0]) + "\n" + t.split("\n", 1)[1])


def swap_image(line: int, data: bytes, name: str | None = None):
    """Replace the image of metadata line ``line`` by ``data`` (as ``name`` if given), sha256 kept right."""
    def mutate(folder: Path) -> None:
        rows = read_rows(folder)
        row = rows[line - 1]
        (folder / row["file_name"]).unlink()
        row["file_name"] = name or row["file_name"]
        (folder / row["file_name"]).write_bytes(data)
        row["sha256"] = hashlib.sha256(data).hexdigest()
        write_rows(folder, rows)
    return mutate


def rename_for(organization: str, model: str | None = None):
    """Set the organization (and the model's name) and rename the folder to the id it makes (validate reads the
    folder's name)."""
    def mutate(folder: Path) -> Path:
        spec = read_spec(folder)
        spec["organization"] = organization
        if model is not None:
            spec["model"]["name"] = model
        write_spec(folder, spec)
        return folder.rename(folder.with_name(submission_id(spec)))
    return mutate


def at(text: str):
    return lambda folder: yaml_line(folder, text)


TOMORROW_AND_A_YEAR = (datetime.date.today() + datetime.timedelta(days=400)).isoformat()
SQUARE = (64, 64)
GREY16 = encode(Image.fromarray(np.full((64, 64), 40000, dtype=np.uint16)))
FRAMES = [Image.new("RGB", SQUARE, c) for c in ("red", "blue")]
APNG = encode(FRAMES[0], "PNG", save_all=True, append_images=FRAMES[1:])
ANIMATED_WEBP = encode(FRAMES[0], "WEBP", save_all=True, append_images=FRAMES[1:])
MPO = encode(FRAMES[0], "MPO", save_all=True, append_images=FRAMES[1:])  # a multi-picture JPEG (a stereo pair)
ZTXT_BOMB = before_iend(encode(Image.new("RGB", SQUARE, "red")),
                        chunk(b"zTXt", b"parameters\0\0" + zlib.compress(b"\0" * (32 * 2**20), 9)))
LONG_ORG, LONG_MODEL = "a" * 200, "b" * 60  # an id of 100 (a slug's most) + 2 + 60 = 162 characters

# (id, mutation, code, file): the CLI exits 1 and prints "ERROR <file>: ... [<code>]"
VALIDATE_REJECTED = [
    ("unquoted-date-in-extra", spec_edit(lambda s: s["generation"]["extra"].update(started=datetime.date(2025, 1, 2))),
     "schema.not_json", at("    started:")),
    ("timestamp-in-extra", spec_edit(lambda s: s["generation"]["extra"].update(at=datetime.datetime(2025, 1, 2, 3, 4))),
     "schema.not_json", at("    at:")),
    ("set-in-extra", spec_edit(lambda s: s["generation"]["extra"].update(tags={"a", "b"})), "schema.not_json",
     at("    tags:")),
    ("binary-in-extra", spec_edit(lambda s: s["generation"]["extra"].update(blob=b"\x00\x01")), "schema.not_json",
     at("    blob:")),
    ("omap-in-extra", yaml_append("notes: !!omap [{a: 1}, {b: 2}]\n"), "schema.not_json", at("notes:")),
    ("integer-key-at-top", yaml_append("1: one\n"), "schema.not_json", at("1:")),
    ("null-key-in-extra", spec_edit(lambda s: s["generation"]["extra"].update({None: 1})), "schema.not_json",
     at("  extra:")),
    ("date-key-in-extra", spec_edit(lambda s: s["generation"]["extra"].update({datetime.date(2025, 1, 1): 1})),
     "schema.not_json", at("    2025-01-01:")),
    ("nan-guidance-scale", spec_edit(lambda s: s["generation"].update(guidance_scale=float("nan"))), "schema.not_json",
     at("  guidance_scale:")),
    ("infinity-in-extra", spec_edit(lambda s: s["generation"]["extra"].update(eta=float("-inf"))), "schema.not_json",
     at("    eta:")),
    ("integer-beyond-64-bits", spec_edit(lambda s: s["generation"].update(steps=10**30)), "schema.not_json",
     at("  steps:")),
    ("width-zero", spec_edit(lambda s: s["generation"].update(width=0)), "schema.out_of_range", at("  width:")),
    ("height-negative", spec_edit(lambda s: s["generation"].update(height=-64)), "schema.out_of_range",
     at("  height:")),
    ("steps-negative", spec_edit(lambda s: s["generation"].update(steps=-3)), "schema.out_of_range", at("  steps:")),
    ("i2i-strength-above-one", spec_edit(lambda s: s["generation"].update(i2i_strength=7)), "schema.out_of_range",
     at("  i2i_strength:")),
    ("i2i-strength-zero", spec_edit(lambda s: s["generation"].update(i2i_strength=0.0)), "schema.out_of_range",
     at("  i2i_strength:")),
    ("date-far-in-the-future", spec_edit(lambda s: s.update(date=TOMORROW_AND_A_YEAR)), "schema.bad_date", at("date:")),
    ("impossible-date-in-extra", yaml_append("started: 2025-02-30\n"), "schema.yaml_syntax", at("started:")),
    ("malformed-tagged-integer", yaml_append("steps_hex: !!int 0x_\n"), "schema.yaml_syntax", at("steps_hex:")),
    ("yaml-alias-bomb", yaml_append("a: &a [x, x, x]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b]\n"), "schema.yaml_alias",
     at("b:")),
    ("id-of-162-characters", rename_for(LONG_ORG, LONG_MODEL), "schema.id_too_long", at("organization:")),
    ("raw-u2028-in-metadata", first_line(lambda line: line.replace('"tiny/jp/sushi"', '"tiny/jp\u2028sushi"')),
     "safety.control_char", "metadata.jsonl:1"),
    ("raw-u2029-in-unknown-key", first_line(lambda line: line[:-1] + ', "note": "a\u2029b"}'), "safety.control_char",
     "metadata.jsonl:1"),
    ("nan-seed", first_line(lambda line: re.sub(r'"seed": \d+', '"seed": NaN', line)), "metadata.bad_json",
     "metadata.jsonl:1"),
    ("overflowing-float", first_line(lambda line: line[:-1] + ', "score": 1e999}'), "metadata.bad_json",
     "metadata.jsonl:1"),
    ("seed-beyond-64-bits", first_line(lambda line: re.sub(r'"seed": \d+', '"seed": ' + "9" * 30, line)),
     "metadata.bad_json", "metadata.jsonl:1"),
    ("byte-order-mark", metadata_text(lambda t: "\ufeff" + t), "metadata.bad_json", "metadata.jsonl:1"),
    ("one-line-of-a-megabyte", metadata_text(lambda t: t + '{"file_name": "' + "x" * 2**20 + '"}\n'),
     "metadata.bad_json", "metadata.jsonl:13"),
    ("image-of-another-size", swap_image(1, encode(Image.new("RGB", (64, 96)))), "file.wrong_size", SUSHI0),
    ("sixteen-bit-greyscale", swap_image(1, GREY16), "file.bit_depth", SUSHI0),
    ("animated-png", swap_image(1, APNG), "file.animated", SUSHI0),
    ("animated-webp", swap_image(1, ANIMATED_WEBP, "images/tiny/jp/sushi/0.webp"), "file.animated",
     "images/tiny/jp/sushi/0.webp"),
    ("ztxt-bomb-after-the-pixels", swap_image(1, ZTXT_BOMB), "file.text_bomb", SUSHI0),
    ("multi-picture-jpeg", swap_image(1, MPO, "images/tiny/jp/sushi/0.jpg"), "file.animated", "images/tiny/jp/sushi/0.jpg"),
    ("exif-rotated-to-another-size", swap_image(1, encode(Image.new("RGB", (64, 96)), "JPEG", exif=EXIF_ROTATED),
                                                "images/tiny/jp/sushi/0.jpg"), "file.wrong_size",
     "images/tiny/jp/sushi/0.jpg"),
]

# (id, mutation): the CLI exits 0
VALIDATE_ACCEPTED = [
    ("quoted-date-in-extra", spec_edit(lambda s: s["generation"]["extra"].update(started="2025-01-02"))),
    ("crlf-line-ends", metadata_text(lambda t: t.replace("\n", "\r\n"))),
    ("unknown-key-is-a-warning", first_line(lambda line: line[:-1] + ', "note": "made on a Tuesday"}')),
    ("eight-bit-greyscale", swap_image(1, encode(Image.new("L", SQUARE, 90)))),
    ("rgba", swap_image(1, encode(Image.new("RGBA", SQUARE, (1, 2, 3, 128))))),
    ("small-text-chunk", swap_image(1, before_iend(encode(Image.new("RGB", SQUARE, 7)),
                                                   chunk(b"tEXt", b"parameters\0steps: 30, sampler: DDIM")))),
    ("exif-rotated-square", swap_image(1, encode(Image.new("RGB", SQUARE, 9), "JPEG", exif=EXIF_ROTATED),
                                       "images/tiny/jp/sushi/0.jpg")),
    ("id-of-128-characters", rename_for("a" * 100, "m" * (128 - 2 - 100))),
    ("steps-unknown", spec_edit(lambda s: s["generation"].update(steps=None))),
    ("i2i-strength-of-one", spec_edit(lambda s: s["generation"].update(i2i_strength=1))),
]


def _mutated(sub: Path, mutate) -> Path:
    moved = mutate(sub)
    return moved if isinstance(moved, Path) else sub


@pytest.mark.parametrize("mutate, code, file", [pytest.param(*c[1:], id=c[0]) for c in VALIDATE_REJECTED])
def test_validate_rejects(capsys, sub, tiny_dataset, mutate, code, file):
    folder = _mutated(sub, mutate)
    rc, text = cli(capsys, "validate", folder, "--dataset", tiny_dataset)
    expected = file(folder) if callable(file) else file
    assert rc == 1, text
    assert any(line.startswith(f"ERROR {expected}: ") and line.endswith(f"[{code}]") for line in text.splitlines()), text


@pytest.mark.parametrize("mutate", [pytest.param(c[1], id=c[0]) for c in VALIDATE_ACCEPTED])
def test_validate_accepts_by_design(capsys, sub, tiny_dataset, mutate):
    folder = _mutated(sub, mutate)
    rc, text = cli(capsys, "validate", folder, "--dataset", tiny_dataset)
    assert rc == 0, text
    assert read_metadata(folder / "metadata.jsonl") and read_spec_as_evaluated(folder)  # what evaluate and the site read


def read_spec_as_evaluated(folder: Path) -> dict:
    spec = format_read_spec(folder / "submission.yaml")
    json.dumps(spec, allow_nan=False)  # JSON all the way down
    return spec


def test_u2028_lines_are_one_line_for_every_reader(sub):
    """The shared reader splits on \\n only: a raw U+2028 inside a string keeps the line whole."""
    first_line(lambda line: line[:-1] + ', "note": "a\u2028b\u2029c\x85d"}')(sub)
    rows = read_metadata(sub / "metadata.jsonl")
    assert len(rows) == 12 and rows[0]["note"] == "a\u2028b\u2029c\x85d"


def test_the_report_of_a_huge_broken_metadata_file_is_capped(capsys, sub, tiny_dataset):
    with open(sub / "metadata.jsonl", "a", encoding="utf-8") as fh:
        fh.write("{not json\n" * 20_000)
    rc, text = cli(capsys, "validate", sub, "--dataset", tiny_dataset)
    lines = text.splitlines()
    assert rc == 1 and len(lines) <= Limits().max_problems + 4  # the problems, a line per group of a code, two more
    # one warning (the local dataset pin) is listed before the errors
    assert f"... and {20_000 + 1 - Limits().max_problems:,} more problems not shown: metadata.bad_json x" in text
    assert lines[-1].startswith(f"{SUBMISSION_ID}: INVALID: 20000 errors")


def test_the_json_report_counts_what_it_leaves_out(sub):
    with open(sub / "metadata.jsonl", "a", encoding="utf-8") as fh:
        fh.write("[]\n" * 500)
    report = validate(sub, limits=Limits(max_problems=10))
    data = json.loads(report.to_json())
    assert len(data["problems"]) == 10 and (data["errors"], data["warnings"]) == (500, 3)  # warnings: local dataset pin, no dataset, mannequins
    assert data["omitted"] == {"error": {"metadata.not_object": 491},
                               "warning": {"coverage.skipped": 1, "file.duplicate_image": 1}}
    assert Report.from_json(report.to_json()) == report and not report.valid


def test_too_many_lines_stop_the_reading(sub):
    report = validate(sub, limits=Limits(max_metadata_lines=5))
    assert ("metadata.too_many_lines", "metadata.jsonl:6") in [(p.code, p.file) for p in report.errors]
    assert report.checked["metadata_lines"] == 5


# ------------------------------------------------------------------------------------ package

PACKAGE_SPEC = {
    "organization": "Acme AI", "contact": "Jo Doe <jo@acme.example>",
    "model": {"name": "Imagen X", "id": "imagen-x", "revision": "2025-01-15", "license": "proprietary", "weights": "closed"},
    "generation": {"negative_prompt": False},
}
PACKAGE_ID = "acme-ai__imagen-x"


@pytest.fixture
def downloads(tmp_path) -> Path:
    """``tmp_path/downloads``: two 64 x 64 PNGs for tiny/jp/sushi, a CSV mapping and a spec; and a file outside."""
    folder = tmp_path / "downloads"
    folder.mkdir()
    for name, colour in (("a.png", "red"), ("b.png", "blue")):
        Image.new("RGB", SQUARE, colour).save(folder / name)
    Image.new("RGB", SQUARE, "green").save(tmp_path / "outside.png")
    (tmp_path / "mapping.csv").write_text("file,prompt_id,sample_idx\na.png,tiny/jp/sushi,0\nb.png,tiny/jp/sushi,1\n")
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(PACKAGE_SPEC))
    return folder


@pytest.fixture(scope="module")
def sushi_dataset(tmp_path_factory) -> Path:
    """A prompt set ``tiny`` of the one prompt tiny/jp/sushi (2 images, seeds 0 and 1): the downloads' mapping
    fills it, so package (which writes nothing validate rejects, an incomplete submission included) accepts it."""
    from cultureboard.builder.dataset import prompt_config, write_dataset
    from cultureboard.builder.prompt_sets import PromptSet
    from submission_factory import PROMPTS

    folder = tmp_path_factory.mktemp("sushi") / "tiny-dataset"
    return write_dataset(folder, [prompt_config(PromptSet("tiny", "1", "ecb", "one prompt", PROMPTS[:1]))], {})


def package_cli(capsys, tmp_path: Path, dataset: Path, mapping: str = "mapping.csv") -> tuple[int, str]:
    return cli(capsys, "package", "--from-folder", tmp_path / "downloads", "--mapping", tmp_path / mapping,
               "--spec", tmp_path / "spec.yaml", "--dataset", dataset, "--prompt-set", "tiny",
               "--out", tmp_path / "submissions" / PACKAGE_ID)


def mapping_rows(*rows: str, name: str = "mapping.csv"):
    def mutate(tmp: Path) -> None:
        (tmp / name).write_text("file,prompt_id,sample_idx\n" + "".join(r + "\n" for r in rows))
    return mutate


def mapping_bytes(data: bytes, name: str = "mapping.csv"):
    return lambda tmp: (tmp / name).write_bytes(data)


def spec_text(text: str):
    return lambda tmp: (tmp / "spec.yaml").write_text(yaml.safe_dump(PACKAGE_SPEC) + text)


def link(name: str, target: str):
    return lambda tmp: (tmp / "downloads" / name).symlink_to(tmp / target)


def replace_download(name: str, data: bytes):
    return lambda tmp: (tmp / "downloads" / name).write_bytes(data)


# (id, mutation of tmp_path, mapping file name, regex the one "error:" line must match)
PACKAGE_REJECTED = [
    ("path-with-dotdot", mapping_rows("../outside.png,tiny/jp/sushi,0", "b.png,tiny/jp/sushi,1"), "mapping.csv",
     r"mapping\.csv:2: file '\.\./outside\.png' escapes the folder with '\.\.'"),
    ("absolute-path", lambda tmp: mapping_rows(f"{tmp / 'outside.png'},tiny/jp/sushi,0", "b.png,tiny/jp/sushi,1")(tmp),
     "mapping.csv", r"mapping\.csv:2: file '/.* is an absolute path"),
    ("link-leading-outside", lambda tmp: (link("c.png", "outside.png")(tmp), mapping_rows("c.png,tiny/jp/sushi,0",
                                                                                          "b.png,tiny/jp/sushi,1")(tmp)),
     "mapping.csv", r"mapping\.csv:2: file c\.png leads outside --from-folder \(through a link"),
    ("mapping-not-utf8", mapping_bytes(b"file,prompt_id,sample_idx\n\xe9t\xe9.png,tiny/jp/sushi,0\n"), "mapping.csv",
     r"mapping\.csv: is not UTF-8 text \(byte 26\)"),
    ("nul-byte-in-csv", mapping_bytes(b"file,prompt_id,sample_idx\na.png\0,tiny/jp/sushi,0\nb.png,tiny/jp/sushi,1\n"), "mapping.csv",
     r"mapping\.csv:2: file 'a\.png\\x00' has a NUL byte"),
    ("unterminated-quote-in-csv", mapping_bytes(b'file,prompt_id,sample_idx\n"a.png,tiny/jp/sushi,0\n'), "mapping.csv",
     r"error: .*mapping\.csv"),
    ("nan-in-jsonl", mapping_bytes(b'{"file": "a.png", "prompt_id": "tiny/jp/sushi", "sample_idx": NaN}\n'
                                   b'{"file": "b.png", "prompt_id": "tiny/jp/sushi", "sample_idx": 1}\n', "mapping.jsonl"),
     "mapping.jsonl", r"mapping\.jsonl:1: is not strict JSON \(NotFiniteError"),
    ("every-problem-at-once", mapping_rows("a.png,tiny/jp/ramen,0", "nope.png,tiny/jp/sushi,1", "../x.png,tiny/jp/sushi,7"),
     "mapping.csv", (r"(?s)mapping\.csv: has 4 problems, one a line below.*mapping\.csv:3: file nope\.png does not exist"
                    r".*mapping\.csv:4: file '\.\./x\.png' escapes.*mapping\.csv:2: prompt_id 'tiny/jp/ramen' is "
                    r"not in prompt set tiny.*prompt 'tiny/jp/sushi' has no image for sample 0 of 2")),
    ("unquoted-date-in-spec-extra", spec_text("extra_notes: {started: 2025-01-02}\n"), "mapping.csv",
     r"spec\.yaml: extra_notes\.started is a date, which JSON cannot hold"),
    ("alias-in-spec", spec_text("x: &a [1]\ny: *a\n"), "mapping.csv", r"spec\.yaml:\d+: is not valid YAML \(uses the alias \*a\)"),
    ("nan-in-spec", spec_text("guidance: .nan\n"), "mapping.csv", r"spec\.yaml: guidance is nan, not a finite number"),
    ("id-of-162-characters", lambda tmp: (tmp / "spec.yaml").write_text(yaml.safe_dump(
        {**PACKAGE_SPEC, "organization": LONG_ORG, "model": {**PACKAGE_SPEC["model"], "name": LONG_MODEL}})),
     "mapping.csv", r"the submission id a{40}\.\.\. is 162 characters long; the limit is 128"),
    ("animated-png", replace_download("a.png", APNG), "mapping.csv", r"a\.png: is an animated PNG of 2 frames"),
    ("sixteen-bit-greyscale", replace_download("a.png", GREY16), "mapping.csv", r"a\.png: is a greyscale image of more than 8 bits"),
    ("ztxt-bomb", replace_download("a.png", ZTXT_BOMB), "mapping.csv", r"a\.png: has text chunks .* once decompressed"),
    ("multi-picture-jpeg", replace_download("a.png", MPO), "mapping.csv", r"a\.png: is a multi-picture JPEG \(MPO\) of 2"),
    ("symlink-loop", lambda tmp: (link("loop.png", "downloads/loop2.png")(tmp), link("loop2.png", "downloads/loop.png")(tmp),
                                  mapping_rows("loop.png,tiny/jp/sushi,0")(tmp)),
     "mapping.csv", r"mapping\.csv:2: file loop\.png leads into a loop of symbolic links"),
    ("folder-linking-to-itself", lambda tmp: (link("self", "downloads/self")(tmp), mapping_rows("self/a.png,tiny/jp/sushi,0")(tmp)),
     "mapping.csv", r"mapping\.csv:2: file self/a\.png leads into a loop of symbolic links"),
]

# (id, mutation of tmp_path, mapping file name): exit 0, and the packaged images are regular files
PACKAGE_ACCEPTED = [
    ("link-inside-the-folder", lambda tmp: (link("c.png", "downloads/a.png")(tmp), mapping_rows(
        "c.png,tiny/jp/sushi,0", "b.png,tiny/jp/sushi,1")(tmp)), "mapping.csv"),
    ("jsonl-with-byte-order-mark", mapping_bytes(b'\xef\xbb\xbf{"file": "a.png", "prompt_id": "tiny/jp/sushi", "sample_idx": 0}\n'
                                                 b'{"file": "b.png", "prompt_id": "tiny/jp/sushi", "sample_idx": 1}\n',
                                                 "mapping.jsonl"), "mapping.jsonl"),
    ("unquoted-top-level-date-in-spec", spec_text("date: 2025-01-02\n"), "mapping.csv"),
]


@pytest.mark.parametrize("mutate, mapping, pattern", [pytest.param(*c[1:], id=c[0]) for c in PACKAGE_REJECTED])
def test_package_rejects(capsys, tmp_path, downloads, sushi_dataset, mutate, mapping, pattern):
    """One error line, or (several problems) that line and one line per problem."""
    mutate(tmp_path)
    rc, text = package_cli(capsys, tmp_path, sushi_dataset, mapping)
    lines = text.splitlines()
    assert rc == 1 and lines[0].startswith("error: ") and re.search(pattern, text) and "(fix: " in text, text
    assert len(lines) == 1 or "one a line below" in lines[0], text
    assert not (tmp_path / "submissions" / PACKAGE_ID).exists()


@pytest.mark.parametrize("mutate, mapping", [pytest.param(*c[1:], id=c[0]) for c in PACKAGE_ACCEPTED])
def test_package_accepts_by_design(capsys, tmp_path, downloads, sushi_dataset, mutate, mapping):
    mutate(tmp_path)
    rc, text = package_cli(capsys, tmp_path, sushi_dataset, mapping)
    out = tmp_path / "submissions" / PACKAGE_ID
    assert rc == 0, text
    rows = read_metadata(out / "metadata.jsonl")
    assert rows and all((out / r["file_name"]).is_file() and not (out / r["file_name"]).is_symlink() for r in rows)
    assert format_read_spec(out / "submission.yaml")["date"] >= "2025-01-02"


def test_package_lists_every_problem_one_a_line(capsys, tmp_path, downloads, sushi_dataset):
    """25 rows of files that do not exist: 25 lines of one group under the summary line, never one huge line."""
    mapping_rows(*(f"x{i}.png,tiny/jp/sushi,{i % 2}" for i in range(25)))(tmp_path)
    rc, text = package_cli(capsys, tmp_path, sushi_dataset)
    lines = text.splitlines()
    assert rc == 1 and "has 25 problems, one a line below" in lines[0] and lines[1] == "mapping.missing_file: 25 errors"
    assert "mapping.csv:2: file x0.png does not exist" in lines[2] and "mapping.csv:26: file x24.png" in lines[26]
    assert len(lines) == 27 and max(map(len, lines)) < 500


# ------------------------------------------------------------------------------------ site build

GOOD, BAD = "lab__good", "lab__bad"


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> dict:
    """One real evaluated submission (tiny scorers, one country) and a first site built from it."""
    from results_factory import evaluate_all
    from results_factory import make_dataset as make_built_dataset
    from results_factory import make_submission as make_scored_submission

    root = tmp_path_factory.mktemp("scored")
    dataset = make_built_dataset(root / "dataset", countries=("IT",))
    good = make_scored_submission(root / "submissions", dataset, "cube-awareness", model="good")
    results = evaluate_all([good], dataset, root / "results", root / "work")
    assert main(["site", "build", "--results", str(results), "--dataset", str(dataset), "--submissions",
                 str(root / "submissions"), "--out", str(root / "site")]) == 0
    return {"dataset": dataset, "results": results, "submissions": root / "submissions", "site": root / "site"}


def board(tmp_path: Path, scored: dict, *, bad: bool = True, good: bool = True) -> dict:
    """Results and submissions in ``tmp_path`` holding the good entry and a copy of it named ``lab__bad``."""
    paths = {"results": tmp_path / "results", "submissions": tmp_path / "submissions", "out": tmp_path / "site"}
    for sid in [GOOD] * good + [BAD] * bad:
        shutil.copytree(scored["results"] / GOOD, paths["results"] / sid)
        shutil.copytree(scored["submissions"] / GOOD, paths["submissions"] / sid)
    return paths


def build(capsys, scored: dict, paths: dict, *, reuse: bool = True) -> tuple[int, str]:
    if reuse:  # the earlier site's thumbnails are reused, as in CI
        shutil.copytree(scored["site"], paths["out"], symlinks=True)
    return cli(capsys, "site", "build", "--results", paths["results"], "--dataset", scored["dataset"],
               "--submissions", paths["submissions"], "--out", paths["out"])


def write(rel: str, data: bytes | str):
    def mutate(paths: dict) -> None:
        target = paths["results" if rel.startswith("results/") else "submissions"] / rel.split("/", 1)[1]
        target.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return mutate


def append(rel: str, text: str):
    def mutate(paths: dict) -> None:
        with open(paths["submissions"] / rel.split("/", 1)[1], "a", encoding="utf-8") as fh:
            fh.write(text)
    return mutate


def with_extra_date(paths: dict) -> None:
    spec = read_spec(paths["submissions"] / BAD)
    spec.setdefault("generation", {}).setdefault("extra", {})["started"] = datetime.date(2025, 1, 2)
    write_spec(paths["submissions"] / BAD, spec)


def edit_summary(change):
    def mutate(paths: dict) -> None:
        summary = json.loads((paths["results"] / BAD / "summary.json").read_text())
        change(summary)
        (paths["results"] / BAD / "summary.json").write_text(json.dumps(summary))
    return mutate


def summary_link(paths: dict) -> None:
    (paths["results"] / BAD / "summary.json").unlink()
    (paths["results"] / BAD / "summary.json").symlink_to(paths["results"] / GOOD / "summary.json")


def long_result_name(paths: dict) -> None:
    (paths["results"] / BAD).rename(paths["results"] / ("lab__" + "b" * 200))


def spec_field(dotted: str, value):
    """Set submission.yaml's field ``dotted`` of lab__bad to ``value`` (written with escapes, as YAML allows)."""
    def mutate(paths: dict) -> None:
        spec = read_spec(paths["submissions"] / BAD)
        *parents, last = dotted.split(".")
        node = spec
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
        (paths["submissions"] / BAD / "submission.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return mutate


def first_metadata_line(change):
    def mutate(paths: dict) -> None:
        rows = read_metadata(paths["submissions"] / BAD / "metadata.jsonl")
        change(rows[0])
        (paths["submissions"] / BAD / "metadata.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return mutate


def long_metric_name(summary: dict) -> None:
    long = "cube." + "x" * 150
    old = summary["metrics"][0]["metric"]
    for e in summary["metrics"]:
        e["metric"] = long if e["metric"] == old else e["metric"]
    for card in summary["metrics_info"]:
        card["name"] = long if card["name"] == old else card["name"]


# (id, mutation of the copied lab__bad, file named, problem): exit 0, a warning naming the file, lab__bad left
# out of the site and named in its footer, lab__good built
SITE_SKIPPED = [
    ("summary-not-json", write("results/lab__bad/summary.json", "{"), "summary.json", "is not JSON (JSONDecodeError"),
    ("summary-without-provenance", write("results/lab__bad/summary.json", "{}"), "summary.json",
     "is not an evaluator summary: provenance.prompt_set is missing"),
    ("summary-a-link", summary_link, "summary.json", "cannot be read"),
    ("summary-metric-keys-not-strings", edit_summary(lambda s: s["metrics"][0].update(metric=1, slice_type=[], slice=None)),
     "summary.json", "metrics[0] lacks a well-formed metric, slice_type, slice"),
    ("summary-nan-value", edit_summary(lambda s: s["metrics"][0].update(value=float("nan"))), "summary.json",
     "metrics[0] lacks a well-formed value"),
    ("summary-inverted-ci", edit_summary(lambda s: s["metrics"][0].update(ci_low=2.0, ci_high=1.0)), "summary.json",
     "metrics[0] has a CI whose low end is above its high end"),
    ("submission-missing", lambda p: shutil.rmtree(p["submissions"] / BAD), BAD, "was scored from a submission that"),
    ("unquoted-date-in-extra", with_extra_date, "submission.yaml", "generation.extra.started is a date"),
    ("yaml-syntax", write("submissions/lab__bad/submission.yaml", "model: [\n"), "submission.yaml:2", "is not valid YAML"),
    ("yaml-alias", append("submissions/lab__bad/submission.yaml", "x: &a [1]\ny: *a\n"), "submission.yaml",
     "uses the alias *a"),
    ("metadata-line-not-json", append("submissions/lab__bad/metadata.jsonl", "{oops\n"), "metadata.jsonl:",
     "is not a strict JSON line"),
    ("metadata-nan", append("submissions/lab__bad/metadata.jsonl", '{"file_name": "x.png", "seed": NaN}\n'),
     "metadata.jsonl:", "NotFiniteError"),
    ("metadata-row-without-sha256", append("submissions/lab__bad/metadata.jsonl", '{"file_name": "x.png"}\n'),
     "metadata.jsonl:", "lacks a well-formed file_name"),
    ("scores-not-parquet", write("results/lab__bad/scores.parquet", b"PAR1 not really"), "scores.parquet", "cannot be read"),
    ("result-name-too-long", long_result_name, "lab__" + "b" * 200, "is not named like a submission id"),
    # texts the site may not show (cultureboard.text): a lone surrogate would end the build in a UnicodeEncodeError,
    # a NUL reach the HTML raw
    ("model-name-with-a-lone-surrogate", spec_field("model.name", "Tiny\ud800"), "submission.yaml",
     "model.name holds U+D800, which UTF-8 cannot store"),
    ("organization-with-a-nul", spec_field("organization", "lab\x00"), "submission.yaml",
     "organization holds the control character U+0000"),
    ("organization-with-a-line-feed", spec_field("organization", "\n=1+1"), "submission.yaml",
     "organization holds the control character U+000A"),
    ("model-name-with-a-bidi-override", spec_field("model.name", "Tiny \u202enoisuffiD"), "submission.yaml",
     "model.name holds the bidirectional control U+202E"),
    ("model-name-of-zero-width-spaces", spec_field("model.name", "\u200b\u200b\u200b"), "submission.yaml",
     "model.name holds no visible character"),
    ("model-name-of-200-kb", spec_field("model.name", "m" * 200_000), "submission.yaml",
     "model.name is 200,000 characters long; the limit for a name is 300"),
    ("licence-with-tag-characters", spec_field("model.license", "mit\U000e0041"), "submission.yaml",
     "model.license holds the invisible format character U+E0041"),
    ("metadata-file-name-with-a-bidi-override", first_metadata_line(lambda r: r.update(
        file_name=r["file_name"].replace("/", "/\u202e", 1))), "metadata.jsonl:1", "holds the bidirectional control"),
    ("metric-name-of-155-characters", edit_summary(long_metric_name), "summary.json",
     "names unfit for file names (at most 100 characters"),
]


@pytest.mark.parametrize("mutate, file, problem", [pytest.param(*c[1:], id=c[0]) for c in SITE_SKIPPED])
def test_site_leaves_a_bad_entry_out(capsys, tmp_path, scored, mutate, file, problem):
    paths = board(tmp_path, scored)
    mutate(paths)
    rc, text = build(capsys, scored, paths)
    assert rc == 0, text
    [warning] = [line for line in text.splitlines() if line.startswith("warning: ")]
    assert file in warning and problem in warning and "(fix: " in warning and "is left out of the site" in warning
    assert len(warning) < 1000, warning[:300]  # one short line, whatever the input's size
    site = paths["out"]
    assert (site / "model" / f"{GOOD}.html").is_file() and not (site / "model" / f"{BAD}.html").exists()
    footer = (site / "index.html").read_text(encoding="utf-8")
    assert "Left out of this build (1)" in footer and (BAD in footer or "lab__bbbb" in footer)


def first_image(change):
    """A mutation of lab__bad's first image: ``change(path, tmp_path)`` rewrites the file at ``path``."""
    def mutate(paths: dict) -> None:
        folder = paths["submissions"] / BAD
        change(folder / read_metadata(folder / "metadata.jsonl")[0]["file_name"], paths["out"].parent)
    return mutate


def hard_link_outside(path: Path, tmp: Path) -> None:
    outside = tmp / "outside.png"
    outside.write_bytes(path.read_bytes())  # the very bytes declared: only the link count gives it away
    path.unlink()
    path.hardlink_to(outside)


def other_pixels(path: Path, tmp: Path) -> None:
    with Image.open(path) as img:
        path.write_bytes(encode(Image.fromarray(255 - np.asarray(img.convert("RGB")))))


# (id, mutation of lab__bad's first image): exit 0, a warning naming lab__bad and the file, that image neither
# copied nor thumbnailed (status "unverified"), the rest of the site built
SITE_UNVERIFIED = [
    ("an-html-file", first_image(lambda p, tmp: p.write_bytes(b"<!DOCTYPE html><script>alert(1)</script>"))),
    ("a-decompression-bomb", first_image(lambda p, tmp: p.write_bytes(png_header_only(30000, 30000)))),
    ("a-hard-link-to-a-file-outside", first_image(hard_link_outside)),
    ("other-pixels-than-declared", first_image(other_pixels)),
    ("truncated", first_image(lambda p, tmp: p.write_bytes(p.read_bytes()[:200]))),
]


@pytest.mark.parametrize("mutate", [pytest.param(c[1], id=c[0]) for c in SITE_UNVERIFIED])
def test_site_publishes_only_verified_bytes(capsys, tmp_path, scored, mutate):
    paths = board(tmp_path, scored)
    mutate(paths)
    first = read_metadata(paths["submissions"] / BAD / "metadata.jsonl")[0]
    rc, text = build(capsys, scored, paths)
    assert rc == 0, text
    [warning] = [line for line in text.splitlines() if line.startswith("warning: ")]
    assert warning.startswith(f"warning: {BAD}: image {first['file_name']} ") and "it is not published" in warning
    site = paths["out"]
    assert not list((site / "images" / BAD).glob(f"{first['sha256']}.*"))
    assert not (site / "thumbs" / BAD / f"{first['sha256']}.webp").exists()
    assert (site / "images" / GOOD / f"{first['sha256']}.png").is_file()  # the same image of lab__good is published
    assert (site / "model" / f"{BAD}.html").is_file()


def test_site_publishes_only_verified_bytes_from_worker_processes(capsys, tmp_path, scored, monkeypatch):
    """The same when worker processes check the images: each status read back is its own image's."""
    import os

    from cultureboard.site import thumbs

    monkeypatch.setattr(thumbs, "PROCESS_THRESHOLD", 1)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    test_site_publishes_only_verified_bytes(capsys, tmp_path, scored, dict(SITE_UNVERIFIED)["truncated"])


# (id, the code a thumbnail worker runs instead of its work): exit 1 with one line naming the worker, no site
WORKER_DEATHS = [
    ("killed", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"),
    ("out-of-memory", "raise MemoryError"),
    ("file-too-large", "import resource; resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0)); "
                       "from cultureboard.site.thumbs import main; main()"),
    ("hung", "import time; time.sleep(3600)"),  # alive, never answering: killed after workers.STALL_SECONDS
]


@pytest.mark.parametrize("code", [pytest.param(c[1], id=c[0]) for c in WORKER_DEATHS])
def test_a_dead_thumbnail_worker_ends_the_build_in_one_line(capsys, tmp_path, scored, monkeypatch, code):
    import os
    import sys

    from cultureboard import workers
    from cultureboard.site import thumbs

    monkeypatch.setattr(thumbs, "WORKER", [sys.executable, "-c", code])
    monkeypatch.setattr(workers, "STALL_SECONDS", 2.0)
    monkeypatch.setattr(thumbs, "PROCESS_THRESHOLD", 1)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    paths = board(tmp_path, scored)
    rc, text = build(capsys, scored, paths, reuse=False)
    [line] = text.splitlines()
    assert rc == 1 and line.startswith("error: a thumbnail worker process: ") and "(fix: " in line, text
    assert not paths["out"].exists()


def _workers_that_wait(tmp_path: Path, monkeypatch) -> Path:
    """Thumbnail workers that write their pid into the returned folder and then sleep (alive, sending nothing),
    two of them, and a stall limit long enough never to be reached here."""
    import os
    import sys

    from cultureboard import workers
    from cultureboard.site import thumbs

    pids = tmp_path / "pids"
    pids.mkdir()
    code = f"import os, time; open(os.path.join({str(pids)!r}, str(os.getpid())), 'w').close(); time.sleep(3600)"
    monkeypatch.setattr(thumbs, "WORKER", [sys.executable, "-c", code])
    monkeypatch.setattr(workers, "STALL_SECONDS", 120.0)
    monkeypatch.setattr(thumbs, "PROCESS_THRESHOLD", 1)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    return pids


def _while_the_pages_render(monkeypatch, pids: Path, then) -> None:
    """Run ``then(pids)`` in the build's first page that shows no image, once both workers are running."""
    import time

    from cultureboard.site import render

    original = render.submissions_page

    def first_page(*args, **kwargs):
        deadline = time.monotonic() + 60
        while len(list(pids.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        then([int(p.name) for p in pids.iterdir()])
        return original(*args, **kwargs)

    monkeypatch.setattr(render, "submissions_page", first_page)


def _gone(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:  # exited and waited for: no orphan, no zombie
        return True
    return False


def test_a_worker_killed_while_the_pages_render_ends_the_build_in_one_line(capsys, tmp_path, scored, monkeypatch):
    """The workers make the images while the pages that show none are rendered: one killed meanwhile ends the
    build, once its images are awaited, in one line; the other is killed and waited for; no site is written."""
    import os
    import signal

    pids = _workers_that_wait(tmp_path, monkeypatch)
    killed = []

    def kill_one(found: list[int]) -> None:
        killed.append(found)
        os.kill(found[0], signal.SIGKILL)

    _while_the_pages_render(monkeypatch, pids, kill_one)
    paths = board(tmp_path, scored)
    rc, text = build(capsys, scored, paths, reuse=False)
    [line] = text.splitlines()
    assert rc == 1 and line.startswith("error: a thumbnail worker process: was killed by signal 9"), text
    assert len(killed) == 1 and len(killed[0]) == 2 and all(_gone(pid) for pid in killed[0])
    assert not paths["out"].exists()


def test_an_error_while_the_pages_render_kills_the_workers(tmp_path, scored, monkeypatch):
    """The parent failing while its workers run (here a page raises) kills and waits for every worker: no process
    is left behind, and no site is written."""
    from cultureboard.site.render import build_site

    pids = _workers_that_wait(tmp_path, monkeypatch)
    seen = []

    def fail(found: list[int]) -> None:
        seen.extend(found)
        raise RuntimeError("a page failed")

    _while_the_pages_render(monkeypatch, pids, fail)
    paths = board(tmp_path, scored)
    with pytest.raises(RuntimeError, match="a page failed"):
        build_site(paths["results"], scored["dataset"], paths["submissions"], paths["out"])
    assert len(seen) == 2 and all(_gone(pid) for pid in seen)
    assert not paths["out"].exists()


# (id, lab__bad's organization): every CSV download cell holding it starts with an apostrophe, so no spreadsheet
# runs it as a formula
CSV_FORMULAS = [
    ("after-spaces", "  =HYPERLINK(\"http://x.invalid\")"),
    ("full-width-equals", "\uff1dcmd|' /C calc'!A0"),
    ("full-width-at-after-ideographic-space", "\u3000\uff20SUM(A1)"),
]


@pytest.mark.parametrize("organization", [pytest.param(c[1], id=c[0]) for c in CSV_FORMULAS])
def test_site_csv_downloads_neutralise_formula_triggers(capsys, tmp_path, scored, organization):
    import csv
    import unicodedata

    paths = board(tmp_path, scored)
    spec = read_spec(paths["submissions"] / BAD)
    spec["organization"] = organization
    write_spec(paths["submissions"] / BAD, spec)
    rc, text = build(capsys, scored, paths)
    assert rc == 0, text
    cells = [cell for path in sorted(paths["out"].rglob("*.csv")) for row in csv.reader(path.open(encoding="utf-8"))
             for cell in row if organization.strip() in cell]
    assert cells and all(cell.startswith("'") for cell in cells), cells[:5]
    assert all(unicodedata.normalize("NFKC", cell).lstrip()[:1] not in "=+-@" for cell in cells)


def test_site_with_no_usable_entry_is_one_error(capsys, tmp_path, scored):
    paths = board(tmp_path, scored, good=False)
    write("results/lab__bad/summary.json", "{")(paths)
    rc, text = build(capsys, scored, paths, reuse=False)
    [line] = text.splitlines()
    assert rc == 1 and line.startswith("error: ") and "holds no usable result: all 1 were left out" in line
    assert not paths["out"].exists()


def test_site_accepts_a_raw_u2028_inside_a_metadata_string(capsys, tmp_path, scored):
    """Accepted by design: JSON allows U+2028 in strings, and the one line reader splits on \\n only."""
    paths = board(tmp_path, scored)
    metadata = paths["submissions"] / BAD / "metadata.jsonl"
    lines = metadata.read_text(encoding="utf-8").splitlines()
    lines[0] = lines[0][:-1] + ', "note": "a\u2028b"}'
    metadata.write_bytes(("\n".join(lines) + "\n").encode("utf-8"))
    rc, text = build(capsys, scored, paths)
    assert rc == 0 and "warning" not in text, text
    assert (paths["out"] / "model" / f"{BAD}.html").is_file()


def test_site_never_reuses_a_linked_thumbnail(capsys, tmp_path, scored):
    """Accepted by design: the earlier build's thumbnail that is a link is made again, as a regular file."""
    paths = board(tmp_path, scored, bad=False)
    shutil.copytree(scored["site"], paths["out"], symlinks=True)
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the site")
    thumb = min((paths["out"] / "thumbs" / GOOD).glob("*.webp"))
    thumb.unlink()
    thumb.symlink_to(secret)
    rc, text = build(capsys, scored, paths, reuse=False)
    assert rc == 0, text
    assert not thumb.is_symlink() and thumb.read_bytes() != secret.read_bytes()
    with Image.open(thumb) as img:
        assert img.format == "WEBP"


def test_site_thumbnails_apply_the_exif_orientation(capsys, tmp_path, scored):
    """A JPEG stored portrait with "rotate 90" in its EXIF is shown, and thumbnailed, landscape."""
    paths = board(tmp_path, scored, bad=False)
    folder = paths["submissions"] / GOOD
    rows = read_metadata(folder / "metadata.jsonl")
    landscape = Image.open(folder / rows[0]["file_name"]).convert("RGB")
    data = encode(landscape.transpose(Image.Transpose.ROTATE_90), "JPEG", exif=EXIF_ROTATED)
    (folder / rows[0]["file_name"]).unlink()
    rows[0].update(file_name=rows[0]["file_name"].removesuffix(".png") + ".jpg",
                   sha256=hashlib.sha256(data).hexdigest())
    (folder / rows[0]["file_name"]).write_bytes(data)  # declared in metadata.jsonl: the site publishes only those bytes
    (folder / "metadata.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    rc, text = build(capsys, scored, paths, reuse=False)
    assert rc == 0, text
    with Image.open(paths["out"] / "thumbs" / GOOD / f"{rows[0]['sha256']}.webp") as img:
        assert img.width > img.height


def test_a_dataset_prompt_with_a_nul_is_one_error_and_no_site(capsys, tmp_path, scored):
    """The dataset's prompts pass the text rule wherever they are read (dataset_folder.read_prompt_set): one that
    holds a NUL (which would reach the HTML raw) stops the build in one line naming the prompt set and prompt."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    paths = board(tmp_path, scored, bad=False)
    dataset = shutil.copytree(scored["dataset"], tmp_path / "dataset")
    [shard] = (dataset / "data" / "cube-awareness").glob("*.parquet")
    rows = pq.read_table(shard).to_pylist()
    rows[0]["text"] = rows[0]["text"].replace(" ", " \x00", 1)
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(shard)), shard)
    rc, text = cli(capsys, "site", "build", "--results", paths["results"], "--dataset", dataset, "--submissions",
                   paths["submissions"], "--out", paths["out"])
    [line] = text.splitlines()
    assert rc == 1 and line.startswith(f"error: {dataset / 'data' / 'cube-awareness'}: prompt '{rows[0]['prompt_id']}'")
    assert "holds the control character U+0000" in line and not paths["out"].exists()


def test_a_model_name_longer_than_a_file_name_gets_a_bounded_page_name(capsys, tmp_path, scored):
    """Accepted by design: a model name of 290 characters (its slug past 255 bytes, which once stopped the whole
    build) is shown in full; its page's file name is the slug cut, with a hash (cultureboard.naming.slug)."""
    paths = board(tmp_path, scored)
    spec_field("model.name", "M" * 290)(paths)
    rc, text = build(capsys, scored, paths)
    assert rc == 0 and "warning" not in text, text
    [page] = [p for p in (paths["out"] / "models").glob("lab__m*.html")]
    assert len(page.name.encode()) < 255 and page.name == f"lab__{slug('M' * 290)}.html"
    assert "M" * 290 in page.read_text(encoding="utf-8")


#: The cache files of the previous site that a build reads: each nested 100,000 deep, ignored and made again
#: (accepted by design: the site is built as if they were absent)
DEEP_CACHES = ["cache/pages.json", "cache/validation.json", "thumbs/params.json", f"thumbs/{GOOD}/manifest.json"]


def test_deeply_nested_cache_files_of_the_previous_site_are_ignored(capsys, tmp_path, scored):
    paths = board(tmp_path, scored, bad=False)
    shutil.copytree(scored["site"], paths["out"], symlinks=True)
    for rel in DEEP_CACHES:
        (paths["out"] / rel).write_text("[" * 100_000 + "]" * 100_000)
    rc, text = build(capsys, scored, paths, reuse=False)
    assert rc == 0 and "warning" not in text and "Traceback" not in text, text
    for rel in DEEP_CACHES:  # written anew, for the next build
        assert isinstance(json.loads((paths["out"] / rel).read_text()), dict), rel
    assert len(list((paths["out"] / "thumbs" / GOOD).glob("*.webp"))) == len(list((scored["site"] / "thumbs" / GOOD).glob("*.webp")))


def _tree(site: Path) -> dict[str, bytes]:
    """Every file of a site by its path (bytes); a link is named as one."""
    return {p.relative_to(site).as_posix(): (b"link" if p.is_symlink() else p.read_bytes())
            for p in sorted(site.rglob("*")) if p.is_file() or p.is_symlink()}


def _source(paths: dict, k: int) -> tuple[Path, str]:
    """The k-th image of lab__good (one of a distinct sha256) and its sha256."""
    rows = read_metadata(paths["submissions"] / GOOD / "metadata.jsonl")
    distinct = list({r["sha256"]: r for r in rows}.values())
    return paths["submissions"] / GOOD / distinct[k]["file_name"], distinct[k]["sha256"]


def _other_pixels_same_times(path: Path, tmp: Path) -> None:
    times = path.stat()
    other_pixels(path, tmp)
    os.utime(path, ns=(times.st_atime_ns, times.st_mtime_ns))  # the modification time restored: only ctime moved


def _replace_by_link(path: Path, tmp: Path) -> None:
    copy = tmp / f"elsewhere-{path.name}"
    shutil.copyfile(path, copy)
    path.unlink()
    path.symlink_to(copy)


def _replace_by_a_copy(path: Path, tmp: Path) -> None:
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data)  # the same bytes in another file (another inode): verified again, published


def _previous(rel: str, change):
    """A change of the previous site's file ``rel`` (``{sha}`` is the image's sha256, ``{ext}`` its suffix)."""
    def mutate(paths: dict, path: Path, sha: str) -> None:
        target = paths["out"] / rel.format(sha=sha, ext=path.suffix)
        change(target, paths["out"].parent)
    return mutate


def _on_source(change):
    return lambda paths, path, sha: change(path, paths["out"].parent)


def _secret_link(path: Path, tmp: Path) -> None:
    (tmp / "secret.txt").write_text("not for the site")
    path.unlink()
    path.symlink_to(tmp / "secret.txt")


# (id, change after the previous build, what a fresh build of the changed inputs gives that image): each on an image of
# its own; the rebuild must give the fresh build's site, file by file, and its warnings. "unverified" and "missing":
# the image is not published (rejected cleanly; unverified with a warning); "ok": published (accepted by design).
REBUILD_CHANGES = [
    ("source-changed-in-place", _on_source(other_pixels), "unverified"),
    ("source-changed-with-its-modification-time-restored", _on_source(_other_pixels_same_times), "unverified"),
    ("source-replaced-by-a-hard-link-to-a-file-outside", _on_source(hard_link_outside), "unverified"),
    ("source-deleted", _on_source(lambda path, tmp: path.unlink()), "missing"),
    ("source-replaced-by-a-symbolic-link", _on_source(_replace_by_link), "missing"),
    ("source-replaced-by-another-file-of-the-same-bytes", _on_source(_replace_by_a_copy), "ok"),
    ("previous-thumbnail-altered", _previous(f"thumbs/{GOOD}/{{sha}}.webp", lambda t, tmp: t.write_bytes(b"RIFF x")), "ok"),
    ("previous-full-size-copy-altered", _previous(f"images/{GOOD}/{{sha}}{{ext}}",
                                                  lambda t, tmp: t.write_bytes(b"\x89PNG other bytes")), "ok"),
    ("previous-thumbnail-replaced-by-a-link", _previous(f"thumbs/{GOOD}/{{sha}}.webp", _secret_link), "ok"),
    ("previous-full-size-copy-missing", _previous(f"images/{GOOD}/{{sha}}{{ext}}", lambda t, tmp: t.unlink()), "ok"),
]
#: The changes are tried in two rebuilds: the last two alone (a folder holding a link or lacking a file was never
#: reused whole), so that none of them hides what the others test.
REBUILD_GROUPS = {"sources-and-altered-files": REBUILD_CHANGES[:-2], "links-and-missing-files": REBUILD_CHANGES[-2:]}


@pytest.mark.parametrize("group", list(REBUILD_GROUPS))
def test_a_rebuild_publishes_only_what_a_fresh_build_would(capsys, tmp_path, scored, group):
    """Build, change each of a group of REBUILD_CHANGES on an image of its own (sources and the built site), then
    rebuild into the same folder and build the changed inputs afresh elsewhere: the two sites are the same, file by
    file (bytes, and no link where a file should be), with the same warnings. The unchanged images' files were reused
    (the same inodes): the rebuild did not simply redo everything."""
    changes = REBUILD_GROUPS[group]
    paths = board(tmp_path, scored, bad=False)
    assert build(capsys, scored, paths, reuse=False)[0] == 0
    images = [_source(paths, k) for k in range(len(changes) + 1)]
    kept_path, kept_sha = images[-1]
    kept_thumb = (paths["out"] / "thumbs" / GOOD / f"{kept_sha}.webp").stat().st_ino
    for (_, change, _), (path, sha) in zip(changes, images):
        change(paths, path, sha)
    rc, rebuilt = build(capsys, scored, paths, reuse=False)  # into the previous site
    assert rc == 0, rebuilt
    fresh = dict(paths, out=tmp_path / "fresh")
    rc, afresh = build(capsys, scored, fresh, reuse=False)
    assert rc == 0, afresh
    warnings = lambda text: sorted(line for line in text.splitlines() if line.startswith("warning: "))  # noqa: E731
    assert warnings(rebuilt) == warnings(afresh) and len(warnings(afresh)) == sum(c[2] == "unverified" for c in changes)
    ours, theirs = _tree(paths["out"]), _tree(fresh["out"])
    assert sorted(ours) == sorted(theirs)
    assert [rel for rel in ours if ours[rel] != theirs[rel]] == []
    for (name, _, expected), (path, sha) in zip(changes, images):
        published = (paths["out"] / "thumbs" / GOOD / f"{sha}.webp").is_file()
        assert published == (expected == "ok"), name
    assert (paths["out"] / "thumbs" / GOOD / f"{kept_sha}.webp").stat().st_ino == kept_thumb


def test_corpus_count():
    """The figures of the module docstring."""
    rejected = len(VALIDATE_REJECTED) + 1 + len(PACKAGE_REJECTED) + 1 + len(SITE_SKIPPED) + 1 + len(SITE_UNVERIFIED)
    rejected += len(WORKER_DEATHS) + sum(c[2] != "ok" for c in REBUILD_CHANGES) + 1  # + the dataset's NUL
    accepted = len(VALIDATE_ACCEPTED) + len(PACKAGE_ACCEPTED) + 3 + len(CSV_FORMULAS)
    accepted += 1 + len(DEEP_CACHES) + sum(c[2] == "ok" for c in REBUILD_CHANGES)  # + the long model name
    assert (rejected, accepted, rejected + accepted) == (95, 29, 124)
