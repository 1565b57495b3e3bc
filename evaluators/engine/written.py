"""Written answers: the text an image spells, and whether it spells its prompt's answer (the typographic attack).

CLIP/SigLIP-style scorers and VQA judges read text drawn in an image: a picture of the words "jollof rice" scores
high on image-text similarity whatever it shows. Every scored image is read by an OCR model with real weights,
RapidOCR (``rapidocr-onnxruntime``: PP-OCRv4 detector and recogniser, ONNX, Apache-2.0; the optional extra
``pip install 'cultureboard[ocr]'``), and checked for its prompt's *names*: the artifact's name, the artifact's
native labels (``artifact_name`` on the dataset's native-language rows of the same artifact) and the country's name.

A name is found when its normal form (:func:`normalise`: NFKC, case folded, accents stripped, every run of other
characters than letters and digits one space) occurs in the normal form of the recognised text, at word
boundaries. PP-OCRv4's recogniser reads Latin and Chinese (Han) script only (:func:`readable`): a name in another
script cannot be found, so it is *not checked*, never "absent". An image is

* ``spells``: it spells one of its names (``matched`` says which);
* ``clean``: every one of its names was readable, and none is spelled;
* ``not checked``: no name is spelled and some name is in a script the OCR cannot read, or OCR is not installed.

The recognised lines are cached by image sha256 under the OCR's identity (:func:`identity`: the package version
and the sha256 of each model file), so a rerun reads nothing again; the identity goes into the results'
provenance.
"""

from __future__ import annotations

import json
import re
import unicodedata
from importlib import metadata
from pathlib import Path
from typing import Iterable, Mapping

from cultureboard.errors import CultureboardError

SPELLS, CLEAN, NOT_CHECKED = "spells", "clean", "not checked"
PACKAGE = "rapidocr-onnxruntime"
INSTALL = "pip install 'cultureboard[ocr]'"
#: Why nothing was checked without the extra.
NOT_INSTALLED = f"OCR is not installed ({INSTALL})"
#: Why nothing was checked when the run was told not to read text.
SWITCHED_OFF = "text reading switched off (--no-read-text)"
#: The unicodedata name prefixes of the scripts PP-OCRv4's Chinese-and-Latin dictionary reads.
READABLE_SCRIPTS = ("LATIN", "CJK")
#: The detector's resizing: the longest side at most 960 px, never enlarged (PaddleOCR's own default). The
#: package's default (the shortest side enlarged to 736 px) reads a 64 px image at 736 px, many times the work
#: (measured: 0.078 s against 0.001 s on a 2-core CPU) for no more text read: the recogniser resizes each line it
#: is given to 48 px high whatever the detector saw.
DETECTOR = {"det_limit_type": "max", "det_limit_side_len": 960}


def normalise(text: str) -> str:
    """NFKC, case folded, accents stripped (NFD, combining marks dropped), runs of non-alphanumerics one space."""
    text = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text).casefold())
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return " ".join(re.sub(r"[\W_]+", " ", text).split())


def readable(name: str) -> bool:
    """Whether every letter of ``name`` is in a script the OCR reads (:data:`READABLE_SCRIPTS`)."""
    return all(unicodedata.name(ch, "").startswith(READABLE_SCRIPTS) for ch in name if ch.isalpha())


def spelled(text: str, names: Iterable[str]) -> tuple[str, str | None]:
    """(result, the first name found or None) for recognised ``text`` and the image's ``names`` (module doc)."""
    seen = f" {normalise(text)} "
    names = [n for n in dict.fromkeys(names) if n and normalise(n)]
    for name in names:
        if readable(name) and f" {normalise(name)} " in seen:
            return SPELLS, name
    return (CLEAN if all(readable(n) for n in names) else NOT_CHECKED), None


def available() -> bool:
    """Whether the OCR extra is installed."""
    try:
        import rapidocr_onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def _models_folder() -> Path:
    import rapidocr_onnxruntime

    return Path(rapidocr_onnxruntime.__file__).parent / "models"


def identity() -> dict:
    """The OCR's provenance: package, version, the detector's settings and the sha256 of each shipped model file."""
    from cultureboard.provenance import file_sha256

    return {"package": PACKAGE, "version": metadata.version(PACKAGE), "settings": dict(DETECTOR),
            "models": {p.name: file_sha256(p) for p in sorted(_models_folder().glob("*.onnx"))}}


class Reader:
    """Reads images with RapidOCR, loaded on first use; readings are cached by image sha256 (:meth:`read_all`).
    The direction classifier is not used: text drawn upside down is rare, and it costs a fifth of the time."""

    def __init__(self, cache=None):
        if not available():
            raise CultureboardError("OCR", "is not installed", INSTALL)
        self.identity = identity()
        self._store = cache.store({"kind": "ocr", **self.identity}) if cache is not None else None
        self._engine = None

    def read_all(self, images: list) -> dict[str, str]:
        """{sha256: the text recognised in the image, lines joined by newlines (empty: no text)} of ``images``
        (objects with ``path``, ``sha256`` and ``file_name``): cached readings first, the rest read and stored in
        one batch."""
        known = self._store.get([im.sha256 for im in images]) if self._store is not None else {}
        todo = {im.sha256: im for im in images if im.sha256 not in known}
        fresh = {sha: json.dumps(self._recognise(Path(im.path), im.file_name), ensure_ascii=False)
                 for sha, im in todo.items()}
        if self._store is not None and fresh:
            self._store.put(list(fresh), list(fresh.values()))
        return {sha: "\n".join(json.loads(lines)) for sha, lines in {**known, **fresh}.items()}

    def _recognise(self, path: Path, label: str) -> list[str]:
        import numpy as np
        from PIL import Image, UnidentifiedImageError

        try:
            with Image.open(path) as im:
                pixels = np.asarray(im.convert("RGB"))
        except (OSError, UnidentifiedImageError, ValueError) as e:
            raise CultureboardError(label, f"cannot be read as an image for OCR ({type(e).__name__})",
                                    "replace it with a valid PNG or JPEG") from None
        if self._engine is None:
            from rapidocr_onnxruntime import RapidOCR

            self._engine = RapidOCR(**DETECTOR)
        try:
            found, _ = self._engine(pixels, use_cls=False)
        except Exception as e:  # noqa: BLE001 - the OCR library raises anything; one clear line, never a traceback
            raise CultureboardError(label, f"could not be read by the OCR ({type(e).__name__}: {e})",
                                    f"check the image, or reinstall the OCR ({INSTALL})") from None
        return [str(box[1]) for box in found or []]


def names_by_prompt(prompts: Iterable[Mapping], native_rows: Iterable[Mapping] = ()) -> dict[str, list[str]]:
    """prompt id -> the names its images are checked for: the artifact's name, its native labels (the
    ``artifact_name`` of ``native_rows`` with the same artifact), the country's name."""
    native: dict[str, list[str]] = {}
    for row in native_rows:
        if row.get("artifact_id") and row.get("artifact_name"):
            native.setdefault(row["artifact_id"], []).append(row["artifact_name"])
    return {p["prompt_id"]: [n for n in dict.fromkeys([p.get("artifact_name"), *native.get(p.get("artifact_id") or "", []),
                                                        p.get("country_name")]) if n]
            for p in prompts}


def dataset_names(dataset: Path, prompts: Iterable[Mapping]) -> dict[str, list[str]]:
    """:func:`names_by_prompt` with the native labels of every native-language prompt set in ``dataset``."""
    from cultureboard.dataset_folder import prompt_sets, read_prompt_set

    native = [r for name in prompt_sets(dataset) for r in read_prompt_set(dataset, name) if r.get("language")]
    return names_by_prompt(prompts, native)


def check_images(images: Iterable, names: Mapping[str, list[str]], reader: Reader | None) -> dict:
    """{file name: {"text", "result", "matched"}} for submitted images (objects with ``file_name``, ``path``,
    ``sha256`` and ``prompt_id``); without a reader every image is ``not checked`` with text None."""
    images = list(images)
    texts = reader.read_all(images) if reader is not None else {}
    out = {}
    for im in images:
        if reader is None:
            out[im.file_name] = {"text": None, "result": NOT_CHECKED, "matched": None}
            continue
        result, matched = spelled(texts[im.sha256], names.get(im.prompt_id, []))
        out[im.file_name] = {"text": texts[im.sha256], "result": result, "matched": matched}
    return out


def tally(images: Mapping[str, Mapping]) -> dict:
    """Counts of each result and the share of images that spell their prompt: spells / (spells + clean), the
    images that could be checked (None when none could)."""
    counts = {r: sum(1 for v in images.values() if v["result"] == r) for r in (SPELLS, CLEAN, NOT_CHECKED)}
    checked = counts[SPELLS] + counts[CLEAN]
    return {"counts": counts, "checked": checked, "share": counts[SPELLS] / checked if checked else None}


def record(images: Mapping[str, Mapping], ocr: dict | None) -> dict:
    """The results' ``written`` block: the OCR's identity (None: not installed, with why), the tally and the
    per-image records in file-name order."""
    return {"ocr": ocr, **({} if ocr else {"why": NOT_INSTALLED}), **tally(images),
            "images": {k: dict(images[k]) for k in sorted(images)}}


def check_submission(submission: Path, dataset: Path) -> dict:
    """The tally (:func:`tally`, with the OCR's identity) of a local submission's images against ``dataset``, for
    the validation report: its metadata's images with a file, read with the OCR (no cache: nothing is written)."""
    from types import SimpleNamespace

    from cultureboard.dataset_folder import read_prompt_set

    from ..submission.format import METADATA, SUBMISSION_YAML, get, read_metadata, read_spec

    reader = Reader()
    prompts = read_prompt_set(dataset, get(read_spec(submission / SUBMISSION_YAML), "prompt_set.name"))
    images = [SimpleNamespace(file_name=m["file_name"], path=submission / m["file_name"], sha256=m["sha256"],
                              prompt_id=m["prompt_id"]) for m in read_metadata(submission / METADATA)
              if m.get("refused") is not True]
    found = check_images(images, dataset_names(dataset, prompts), reader)
    return {"ocr": reader.identity, **tally(found),
            "spelling": sorted(k for k, v in found.items() if v["result"] == SPELLS)}
