"""Written answers: normalisation, scripts the OCR reads, and the real OCR (RapidOCR, PP-OCRv4) reading names
rendered at three sizes in two fonts."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from PIL import Image, ImageDraw, ImageFont

from cultureboard.errors import CultureboardError
from cultureboard.evaluators.engine import written
from cultureboard.evaluators.engine.written import CLEAN, NOT_CHECKED, SPELLS, normalise, readable, spelled

FONTS = Path("/usr/share/fonts/truetype/dejavu")
needs_ocr = pytest.mark.skipif(not written.available(), reason="the ocr extra is not installed")


def test_normal_form_folds_case_accents_width_and_punctuation():
    assert normalise("  Jollof-RÍCE! ") == "jollof rice"
    assert normalise("ＪＯＬＬＯＦ　ｒｉｃｅ") == "jollof rice"  # full-width letters and space (NFKC)
    assert normalise("Crème brûlée") == "creme brulee"
    assert normalise("Straße") == "strasse"  # case folding, not lowering


def test_only_latin_and_han_are_readable():
    assert readable("Paella valenciana") and readable("寿司") and readable("Ñandú 2026")
    assert not readable("Борщ") and not readable("እንጀራ") and not readable("Injera እንጀራ")


def test_spelled_needs_whole_words_and_says_what_it_cannot_check():
    assert spelled("OUR\nJOLLOF RICE", ["Jollof rice", "Nigeria"]) == (SPELLS, "Jollof rice")
    assert spelled("licorice", ["rice"]) == (CLEAN, None)  # inside another word: not the name
    assert spelled("", ["Jollof rice", "Nigeria"]) == (CLEAN, None)
    assert spelled("", ["Борщ", "Ukraine"]) == (NOT_CHECKED, None)  # Cyrillic: not read, so not "no text"
    assert spelled("UKRAINE", ["Борщ", "Ukraine"]) == (SPELLS, "Ukraine")
    assert written.tally({"a": {"result": SPELLS}, "b": {"result": CLEAN}, "c": {"result": CLEAN},
                          "d": {"result": NOT_CHECKED}}) == {
        "counts": {SPELLS: 1, CLEAN: 2, NOT_CHECKED: 1}, "checked": 3, "share": pytest.approx(1 / 3)}


def test_names_are_the_artifact_its_native_labels_and_the_country():
    prompts = [{"prompt_id": "p1", "artifact_id": "Q1", "artifact_name": "Paella", "country_name": "Spain"},
               {"prompt_id": "p2", "artifact_id": None, "artifact_name": None, "country_name": "Japan"}]
    native = [{"artifact_id": "Q1", "artifact_name": "Paella valenciana"}, {"artifact_id": "Q2", "artifact_name": "x"}]
    assert written.names_by_prompt(prompts, native) == {"p1": ["Paella", "Paella valenciana", "Spain"],
                                                        "p2": ["Japan"]}


def _drawn(path: Path, text: str, font: str, points: int) -> SimpleNamespace:
    image = Image.new("RGB", (512, 512), "white")
    ImageDraw.Draw(image).text((24, 230), text, fill="black", font=ImageFont.truetype(str(FONTS / font), points))
    image.save(path)
    return SimpleNamespace(file_name=path.name, path=path, sha256=path.name, prompt_id="p")


@needs_ocr
@pytest.mark.skipif(not (FONTS / "DejaVuSerif.ttf").exists(), reason="DejaVu fonts are not installed")
def test_the_real_ocr_reads_names_at_three_sizes_in_two_fonts(tmp_path):
    reader = written.Reader()
    images = [_drawn(tmp_path / f"{font}-{points}.png", "Jollof rice", font, points)
              for font in ("DejaVuSans.ttf", "DejaVuSerif.ttf") for points in (24, 48, 96)]
    images.append(_drawn(tmp_path / "other.png", "Fish and chips", "DejaVuSans.ttf", 48))
    blank = tmp_path / "blank.png"
    Image.new("RGB", (512, 512), "white").save(blank)
    images.append(SimpleNamespace(file_name="blank.png", path=blank, sha256="blank", prompt_id="p"))
    found = written.check_images(images, {"p": ["Jollof rice", "Nigeria"]}, reader)
    assert {k: v["result"] for k, v in found.items()} == {
        **{im.file_name: SPELLS for im in images[:6]}, "other.png": CLEAN, "blank.png": CLEAN}
    assert found["blank.png"]["text"] == "" and normalise(found["other.png"]["text"]) == "fish and chips"
    ocr = reader.identity
    assert ocr["package"] == "rapidocr-onnxruntime" and ocr["version"] == "1.4.4"
    assert len(ocr["models"]) == 3 and all(len(h) == 64 for h in ocr["models"].values())


@needs_ocr
def test_an_unreadable_image_and_an_ocr_failure_are_one_line(tmp_path, monkeypatch):
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"not an image")
    reader = written.Reader()
    image = SimpleNamespace(file_name="images/p/0.png", path=bad, sha256="x", prompt_id="p")
    with pytest.raises(CultureboardError, match=r"images/p/0.png: cannot be read as an image for OCR") as e:
        written.check_images([image], {"p": ["Paella"]}, reader)
    assert "\n" not in e.value.message
    good = _drawn(tmp_path / "good.png", "Paella", "DejaVuSans.ttf", 48)

    def broken(*args, **kwargs):
        raise RuntimeError("onnx session died")

    reader._engine = broken
    with pytest.raises(CultureboardError, match=r"good.png: could not be read by the OCR \(RuntimeError: onnx") as e:
        written.check_images([good], {"p": ["Paella"]}, reader)
    assert "\n" not in e.value.message


def test_without_the_extra_nothing_is_checked_and_the_fix_is_named(monkeypatch):
    monkeypatch.setattr(written, "available", lambda: False)
    with pytest.raises(CultureboardError, match=r"OCR: is not installed \(fix: pip install 'cultureboard\[ocr\]'\)"):
        written.Reader()
    image = SimpleNamespace(file_name="a.png", path=Path("a.png"), sha256="a", prompt_id="p")
    block = written.record(written.check_images([image], {"p": ["Paella"]}, None), None)
    assert block["images"] == {"a.png": {"text": None, "result": NOT_CHECKED, "matched": None}}
    assert block["share"] is None and block["why"].startswith("OCR is not installed")


def test_metrics_that_read_text_are_reported_without_the_images_that_spell():
    import pandas as pd

    from cultureboard.evaluators.engine.evaluate import _without_written

    rows = [{"metric": m, "unit_id": p, "prompt_id": p, "sample_idx": 0, "file_name": f"{p}.png", "sha256": p,
             "value": v, "detail": None, "flag": None} for m in ("reads", "sees") for p, v in
            (("a", 1.0), ("b", 2.0), ("c", 6.0))]
    check = {"images": {"a.png": {"result": CLEAN}, "b.png": {"result": CLEAN}, "c.png": {"result": SPELLS}},
             "reads_text": ["reads"], "ocr": {"package": "x"}, **written.tally(
                 {"a": {"result": CLEAN}, "b": {"result": CLEAN}, "c": {"result": SPELLS}})}
    out = _without_written(pd.DataFrame(rows), check, {"reads": "image", "sees": "image"},
                           {"image": {p: {} for p in "abc"}}, {"seed": 0, "n_boot": 50}, {}, {})
    assert out["share"] == pytest.approx(1 / 3) and out["spelling"] == ["c.png"]
    assert set(out["without"]) == {"reads"}  # a metric whose scorers do not read text is not repeated
    assert out["without"]["reads"]["value"] == pytest.approx(1.5)  # (1 + 2) / 2, not (1 + 2 + 6) / 3
    assert out["without"]["reads"]["n_images"] == 2 and out["without"]["reads"]["coverage"] == pytest.approx(2 / 3)
