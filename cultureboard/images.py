"""Image files as every stage reads them: one set of suffixes, one inspection, and pixels with their EXIF
orientation applied.

:func:`inspect_image` is the one check of an image file that some stage is about to trust: a submission's
images (``validate``; the evaluator after downloading Hub-hosted ones) and downloaded reference
photographs. It reads the file once and decodes no pixel unless asked to, in this order:

1. bytes: a regular file (links are not followed), at most ``max_file_bytes``;
2. format: sniffed from the first bytes (PNG, JPEG, WebP), and the same as the file name's extension;
3. size, from the header alone, before the image library sees the file: each side within
   ``min_side``..``max_side`` and ``width * height <= max_pixels`` (a decompression bomb stops here);
4. structure: a PNG's chunks walked by their lengths to ``IEND``, which must end the file, and its text
   chunks' decompressed size summed (zTXt / iTXt bombs), a JPEG's end-of-image marker, a WebP's RIFF
   length; the image library then parses the header;
5. content that would be scored wrong: more than 8 bits per grey sample (16-bit greyscale, read as white
   by an RGB conversion), several frames (an animated PNG or WebP, a multi-picture JPEG (MPO) or any other image
   of more than one frame: only the first would be scored), an
   unreadable EXIF block (the orientation could not be applied), and, given ``size``, a displayed size
   (after the EXIF orientation) other than the expected one;
6. with ``full_decode``, every PNG chunk's CRC-32 and every pixel.

Problems are returned as data (code, message, fix), never raised, so a caller lists them all;
:func:`require_image` raises them as one :class:`~cultureboard.errors.CultureboardError` instead.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import stat
import struct
import zlib
from dataclasses import dataclass

#: File suffixes of the image formats a submission, a reference folder or the site may hold.
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp"})
#: The format each suffix promises, and the suffix each format gets.
FORMAT_OF_SUFFIX = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG", ".webp": "WEBP"}
SUFFIX_OF_FORMAT = {"PNG": ".png", "JPEG": ".jpg", "WEBP": ".webp"}

#: Problem codes of :func:`inspect_image` (stable: validate reports, tests and PR comments key on them).
IMAGE_CODES: dict[str, str] = {
    "file.unreadable": "a file cannot be read (permissions, I/O error, not a regular file)",
    "file.too_large": "a file larger than its byte limit",
    "file.bad_extension": "an image extension other than .png, .jpg, .jpeg, .webp",
    "file.not_an_image": "not a PNG, JPEG or WebP image, or a header too damaged to read",
    "file.format_mismatch": "the real format differs from the extension",
    "file.dimensions": "width, height or pixel count above the limits (checked before decoding)",
    "file.too_small": "width or height below the minimum",
    "file.wrong_size": "a displayed size (after EXIF orientation) other than the expected width x height",
    "file.bit_depth": "more than 8 bits per grey sample (16-bit or 32-bit greyscale)",
    "file.animated": "several frames (animated PNG or WebP, a multi-picture JPEG); only the first would be scored",
    "file.text_bomb": "PNG text chunks (tEXt, zTXt, iTXt) larger than the limit once decompressed",
    "file.truncated": "the file ends early",
    "file.trailing_data": "data after the image's end",
    "file.corrupt": "a damaged structure, checksum, EXIF block or pixel data",
}

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_WIDE_GREY = ("I", "F")  # PIL modes of more than 8 bits per grey sample ("I;16", "I;16B", ... start with "I")
_ORIENTATION = 0x0112
_TRANSPOSED = (5, 6, 7, 8)  # EXIF orientations that swap width and height


@dataclass(frozen=True)
class ImageLimits:
    """Limits on one image file; the defaults fit 512-2048 px generations (a downloader of photographs
    passes larger ones)."""

    max_file_bytes: int = 20 * 2**20
    min_side: int = 64
    max_side: int = 4096
    max_pixels: int = 4096 * 4096
    max_text_bytes: int = 2**20  # PNG text chunks, decompressed, summed (the image library's own cap is 1 MiB a chunk)


@dataclass(frozen=True)
class ImageProblem:
    code: str  # a key of IMAGE_CODES
    message: str  # what is wrong, without the file's name (the caller names it)
    fix: str


@dataclass(frozen=True)
class ImageInfo:
    """What :func:`inspect_image` found. ``width`` / ``height`` are as displayed (EXIF orientation applied);
    fields it could not reach are None (``format``, sizes, ``mode``) or 0 (``frames``)."""

    sha256: str | None  # of the bytes inspected; None when the file could not be read
    n_bytes: int
    format: str | None  # "PNG", "JPEG" or "WEBP"
    width: int | None
    height: int | None
    mode: str | None  # PIL mode, e.g. RGB, RGBA, L, P, I;16
    frames: int
    orientation: int  # EXIF orientation 1..8 (1: stored as shown)
    problems: tuple[ImageProblem, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def inspect_image(source: str | os.PathLike | bytes, *, name: str | None = None, limits: ImageLimits = ImageLimits(),
                  size: tuple[int, int] | None = None, full_decode: bool = False, check_extension: bool = True) -> ImageInfo:
    """Check the image file ``source`` (a path, read without following a link, or its bytes) as the module
    docstring lists; every problem found is in the returned :class:`ImageInfo`.

    ``name`` is the file name whose extension must match the format (default: the path's; bytes without a
    name, or ``check_extension=False``, skip that check: a caller that names the file by its format). ``size`` is the expected displayed ``(width, height)``. ``full_decode`` also
    checks PNG CRCs and decodes every pixel (about 20x the cost of hashing a 512 px PNG).
    """
    found = _Inspection(limits)
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if len(data) > limits.max_file_bytes:
            return found.too_large(len(data))
    else:
        name = os.fspath(source) if name is None else name
        data = found.read(os.fspath(source))
        if data is None:
            return found.info()
    if not check_extension:
        name = None
    found.sha256, found.n_bytes = hashlib.sha256(data).hexdigest(), len(data)
    found.check(data, name, size, full_decode)
    return found.info()


def require_image(source: str | os.PathLike | bytes, *, name: str | None = None, limits: ImageLimits = ImageLimits(),
                  size: tuple[int, int] | None = None, full_decode: bool = False, check_extension: bool = True) -> ImageInfo:
    """:func:`inspect_image`, raising a :class:`~cultureboard.errors.CultureboardError` that names ``name``
    (or the path) and every problem when there is one."""
    from cultureboard.errors import CultureboardError

    info = inspect_image(source, name=name, limits=limits, size=size, full_decode=full_decode,
                         check_extension=check_extension)
    if info.problems:
        where = name or (os.fspath(source) if not isinstance(source, (bytes, bytearray, memoryview)) else "image")
        raise CultureboardError(where, "; ".join(p.message for p in info.problems), info.problems[0].fix)
    return info


class _Inspection:
    """The state of one inspection: what is known so far and the problems found."""

    def __init__(self, limits: ImageLimits):
        self.limits = limits
        self.problems: list[ImageProblem] = []
        self.sha256: str | None = None
        self.n_bytes = 0
        self.format: str | None = None
        self.size: tuple[int, int] | None = None  # as displayed
        self.mode: str | None = None
        self.frames = 0
        self.orientation = 1

    def info(self) -> ImageInfo:
        width, height = self.size or (None, None)
        return ImageInfo(self.sha256, self.n_bytes, self.format, width, height, self.mode, self.frames, self.orientation,
                         tuple(self.problems))

    def problem(self, code: str, message: str, fix: str) -> None:
        self.problems.append(ImageProblem(code, message, fix))

    def too_large(self, n: int) -> ImageInfo:
        self.n_bytes = n
        self.problem("file.too_large", f"is {n:,} bytes; the limit is {self.limits.max_file_bytes:,}",
                     "save it as PNG with compression, or as high-quality JPEG / WebP")
        return self.info()

    def read(self, path: str) -> bytes | None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # never follows a link or blocks on a pipe
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                self.problem("file.unreadable", "is a symbolic link (never followed)", "replace the link with the file")
            else:
                self.problem("file.unreadable", f"cannot be read ({exc.strerror})", "check that it is a readable file")
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                self.problem("file.unreadable", "is not a regular file", "replace it with the image file")
                return None
            if st.st_size > self.limits.max_file_bytes:
                self.too_large(st.st_size)
                return None
            with open(fd, "rb", closefd=False) as fh:
                data = fh.read(st.st_size + 1)  # sized by fstat: a larger read size costs an allocation of that size
                if len(data) > st.st_size:  # it grew since fstat
                    data += fh.read(self.limits.max_file_bytes + 1 - len(data))
        except OSError as exc:
            self.problem("file.unreadable", f"cannot be read ({exc.strerror})", "check that it is a readable file")
            return None
        finally:
            os.close(fd)
        if len(data) > self.limits.max_file_bytes:  # grew while being read
            self.too_large(len(data))
            return None
        return data

    def check(self, data: bytes, name: str | None, expected: tuple[int, int] | None, full_decode: bool) -> None:
        fmt = _sniff(data)
        suffix = os.path.splitext(name)[1].lower() if name is not None else None
        if suffix is not None and suffix not in FORMAT_OF_SUFFIX:
            return self.problem("file.bad_extension", f"has the extension {suffix or '(none)'!r}", "use .png, .jpg, .jpeg or .webp")
        if fmt is None:
            return self.problem("file.not_an_image", "is not a PNG, JPEG or WebP image", "re-save it as PNG")
        self.format = fmt
        if suffix is not None and FORMAT_OF_SUFFIX[suffix] != fmt:
            self.problem("file.format_mismatch", f"is a {fmt} image but its extension {suffix} says {FORMAT_OF_SUFFIX[suffix]}",
                         f"rename it to end in {SUFFIX_OF_FORMAT[fmt]}, or re-save it as {FORMAT_OF_SUFFIX[suffix]}")
        stored = _header_size(fmt, data)
        if stored is None:
            return self.problem("file.truncated" if len(data) < 64 else "file.not_an_image",
                                f"has no readable {fmt} header with its width and height", "re-save or re-download the image")
        if not self.within_limits(*stored):
            return
        structure = {"PNG": self.png_chunks, "JPEG": _jpeg_end, "WEBP": _webp_end}[fmt](data)
        if structure is not None:
            return self.problem(*structure, "re-save or re-download the image; it must end where the image ends")
        self.parse(data, fmt, expected, full_decode)

    def within_limits(self, width: int, height: int) -> bool:
        lim = self.limits
        if width > lim.max_side or height > lim.max_side or width * height > lim.max_pixels:
            self.problem("file.dimensions", f"is {width}x{height} pixels; the limits are {lim.max_side} px a side and "
                         f"{lim.max_pixels:,} pixels", "submit images at the resolution the model generates, downscaled "
                         "if above the limits")
            return False
        if min(width, height) < lim.min_side:
            self.problem("file.too_small", f"is {width}x{height} pixels; the minimum is {lim.min_side} px a side",
                         "submit images at the resolution the model generates")
        return True

    def png_chunks(self, data: bytes) -> tuple[str, str] | None:
        """Walk the chunks to IEND; sum the text chunks' decompressed sizes (a problem if over the limit)."""
        pos, text, budget = 8, 0, self.limits.max_text_bytes
        while pos + 8 <= len(data):
            length, kind = struct.unpack_from(">I4s", data, pos)
            body = data[pos + 8: pos + 8 + length]
            pos += 12 + length
            if pos > len(data):
                break
            if kind == b"IEND":
                return None if pos == len(data) else ("file.trailing_data", f"has {len(data) - pos:,} bytes after its end chunk (IEND)")
            if kind in (b"tEXt", b"zTXt", b"iTXt") and text <= budget:
                size = _text_size(kind, body, budget - text + 1)
                if size is None:
                    self.problem("file.corrupt", f"has a {kind.decode()} chunk with an unknown compression method",
                                 "re-save the image without text metadata")
                else:
                    text += size
                    if text > budget:
                        self.problem("file.text_bomb", f"has text chunks (tEXt / zTXt / iTXt) of more than {budget:,} "
                                     "bytes once decompressed", "re-save the image without text metadata")
        return "file.truncated", "ends before its end chunk (IEND): it is truncated"

    def parse(self, data: bytes, fmt: str, expected: tuple[int, int] | None, full_decode: bool) -> None:
        """What the image library reads from the header: mode, frames, EXIF orientation; then the pixels if asked."""
        from PIL import Image

        try:
            with Image.open(io.BytesIO(data), formats=[fmt]) as img:
                width, height = img.size
                self.mode, self.frames = img.mode, getattr(img, "n_frames", 1)
                exif = _png_exif(data) if fmt == "PNG" else img.getexif()
                self.orientation = int(exif.get(_ORIENTATION, 1)) if exif is not None else 1
                if full_decode:
                    img.verify()  # PNG: the CRC-32 of every chunk
        except Exception as exc:  # noqa: BLE001 - a decoder's reaction to hostile bytes can be any exception
            return self.problem(*_damage(exc), "re-save the image")
        self.size = (height, width) if self.orientation in _TRANSPOSED else (width, height)
        if self.mode.startswith(_WIDE_GREY):
            self.problem("file.bit_depth", f"is a greyscale image of more than 8 bits a sample (mode {self.mode}), "
                         "which an RGB conversion turns white", "save it as 8-bit RGB (or 8-bit greyscale)")
        if self.frames > 1:
            kind = "a multi-picture JPEG (MPO)" if fmt == "JPEG" else f"an animated {fmt}"
            self.problem("file.animated", f"is {kind} of {self.frames} frames; only the first would be scored",
                         "save the one generated frame as a still image")
        if expected is not None and self.size != tuple(expected):
            shown = " as displayed (after its EXIF orientation)" if self.orientation in _TRANSPOSED else ""
            self.problem("file.wrong_size", f"is {self.size[0]}x{self.size[1]} pixels{shown}, not the expected "
                         f"{expected[0]}x{expected[1]}", f"submit every image at {expected[0]}x{expected[1]}, as generated")
        if full_decode:
            try:
                with Image.open(io.BytesIO(data), formats=[fmt]) as img:
                    img.load()
            except Exception as exc:  # noqa: BLE001 - as above
                self.problem(*_damage(exc), "re-save or re-download the image")


def _damage(exc: Exception) -> tuple[str, str]:
    if "runcated" in str(exc):
        return "file.truncated", f"is truncated ({exc})"
    return "file.corrupt", f"is damaged ({exc.__class__.__name__}: {exc})"


def _sniff(data: bytes) -> str | None:
    """PNG, JPEG or WEBP by the file's first bytes; None for anything else."""
    if data.startswith(_PNG_SIGNATURE):
        return "PNG"
    if data.startswith(b"\xff\xd8\xff"):
        return "JPEG"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WEBP"
    return None


def _header_size(fmt: str, data: bytes) -> tuple[int, int] | None:
    """The stored (width, height) from the header bytes alone; None if the header is cut or malformed."""
    if fmt == "PNG":
        if data[12:16] != b"IHDR" or len(data) < 24:
            return None
        return struct.unpack_from(">II", data, 16)
    if fmt == "WEBP":
        kind = data[12:16]
        if kind == b"VP8X" and len(data) >= 30:
            return 1 + int.from_bytes(data[24:27], "little"), 1 + int.from_bytes(data[27:30], "little")
        if kind == b"VP8L" and len(data) >= 25 and data[20] == 0x2F:
            bits = int.from_bytes(data[21:25], "little")
            return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
        if kind == b"VP8 " and len(data) >= 30 and data[23:26] == b"\x9d\x01\x2a":
            return int.from_bytes(data[26:28], "little") & 0x3FFF, int.from_bytes(data[28:30], "little") & 0x3FFF
        return None
    pos = 2  # JPEG: walk the marker segments to the first start-of-frame
    while pos + 4 <= len(data):
        if data[pos] != 0xFF:
            return None
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):  # markers without a length
            pos += 2
            continue
        length = int.from_bytes(data[pos + 2: pos + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            if pos + 9 > len(data):
                return None
            height, width = struct.unpack_from(">HH", data, pos + 5)
            return width, height
        if length < 2:
            return None
        pos += 2 + length
    return None


def _jpeg_end(data: bytes) -> tuple[str, str] | None:
    if not data.endswith(b"\xff\xd9"):
        return "file.truncated", "does not end with the JPEG end-of-image marker: it is truncated or has data appended"
    return None


def _webp_end(data: bytes) -> tuple[str, str] | None:
    if int.from_bytes(data[4:8], "little") + 8 + len(data) % 2 != len(data):
        return "file.truncated", "has a RIFF length that differs from its size: it is truncated or has data appended"
    return None


def _text_size(kind: bytes, body: bytes, budget: int) -> int | None:
    """Decompressed size of a PNG text chunk, counted up to ``budget`` bytes (more means over); None when
    its compression method is one the image library refuses."""
    _keyword, _, rest = body.partition(b"\0")
    if kind == b"tEXt":
        return len(rest)
    if kind == b"zTXt":
        if rest and rest[0] != 0:
            return None
        return _inflated_size(rest[1:], budget)
    if len(rest) < 2 or rest[0] == 0:  # iTXt, uncompressed
        return len(rest)
    _lang, _, rest2 = rest[2:].partition(b"\0")
    _translated, _, text = rest2.partition(b"\0")
    return _inflated_size(text, budget) if rest[1] == 0 else len(text)


def _inflated_size(compressed: bytes, budget: int) -> int:
    """How many bytes ``compressed`` inflates to, counting at most ``budget`` (a corrupt stream counts what it gave)."""
    inflater, total = zlib.decompressobj(), 0
    try:
        chunk = inflater.decompress(compressed, budget)
        while chunk and total <= budget:
            total += len(chunk)
            chunk = inflater.decompress(inflater.unconsumed_tail, budget) if inflater.unconsumed_tail else b""
    except zlib.error:
        pass
    return total


def _png_exif(data: bytes):
    """The EXIF of a PNG's eXIf chunk (wherever it is: the image library reads one after the pixel data
    only when it decodes them), or None."""
    from PIL import Image

    pos = 8
    while pos + 8 <= len(data):
        length, kind = struct.unpack_from(">I4s", data, pos)
        if kind == b"eXIf":
            exif = Image.Exif()
            exif.load(data[pos + 8: pos + 8 + length])
            return exif
        if kind == b"IEND":
            return None
        pos += 12 + length
    return None


def open_rgb(path: str | os.PathLike):
    """The image at ``path`` as an RGB ``PIL.Image``, rotated / mirrored as its EXIF orientation says.

    Pixels are always read through here (scoring, thumbnails), so a photo stored sideways with an
    orientation tag is scored as it is shown. 16-bit greyscale (mode ``I;16``, which a plain conversion
    turns white) is scaled to 8 bits first: ``v8 = v16 >> 8``.
    """
    from PIL import Image, ImageOps

    with Image.open(path) as image:
        oriented = ImageOps.exif_transpose(image)
        if oriented.mode.startswith("I;16"):
            import numpy as np

            oriented = Image.fromarray((np.asarray(oriented, dtype=np.uint16) >> 8).astype(np.uint8), "L")
        return oriented.convert("RGB")
