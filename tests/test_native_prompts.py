"""Native-language prompt variants (issue 26): countries' languages, Wikidata labels in them (dump and SPARQL),
the translation file, the LLM translation stage with its back-translation check and cache replay, the rows of
cube-awareness-native / cultdiff-native, and the dataset card."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cultureboard.builder import build
from cultureboard.builder.artifact_space import extract
from cultureboard.builder.build import demo_translations_path, sample_dump_path
from cultureboard.builder.llm_backends import CachedLLM, LLMCallError
from cultureboard.builder.llm_cache import ResponseCache
from cultureboard.builder.translate import Request, Translation, load_translations, translate
from cultureboard.countries import load_countries, parse_countries
from cultureboard.errors import CultureboardError
from sparql_server import OxigraphServer

build_module = importlib.import_module("cultureboard.builder.build")  # the module (the package exports its function)
DEMO = ["ES", "MX", "NG"]
NATIVE = ["cube-awareness-native", "cultdiff-native"]


def rows_of(folder: Path, name: str) -> list[dict]:
    return pq.read_table(folder / "data" / name / "test-00000-of-00001.parquet").to_pylist()


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Path, dict]:
    """The demo countries' native variants, built offline from the packaged translation file."""
    out = tmp_path_factory.mktemp("native") / "dataset"
    return out, build(out, countries=DEMO, prompt_sets=["cube-awareness", *NATIVE], cube_images=[2, 2])


# ------------------------------------------------------------------------------------------- languages


def test_country_languages_are_bcp47_and_a_malformed_one_is_a_clear_error():
    table = load_countries()
    assert table.by_iso("NG").languages == ("ha", "yo", "ig") and table.by_iso("ES").languages == ("es",)
    assert table.by_iso("MX").languages == ("es",) and table.by_iso("US").languages == ()
    assert table.by_iso("BR").languages == ("pt-BR",)
    header = "iso2,qid,name,name_in_sentence,adjective,continent,region_group,aliases,languages\n"
    for bad in ("es_ES", "EN", "en", "pt-br", "Yoruba"):
        with pytest.raises(CultureboardError) as err:
            parse_countries(header + f"XX,Q1,X,X,X,Europe,GN,,{bad}\n", "countries.csv")
        assert err.value.message.startswith("countries.csv (row XX, languages)") and "BCP 47" in err.value.message


def test_wikidata_labels_in_the_countries_languages_from_the_dump_and_from_sparql(tmp_path):
    """Both knowledge-base paths read the sample dump's Spanish labels, and only in the requested languages."""
    args = dict(concepts=["cuisine", "landmarks", "art"], countries=["ES", "MX", "NG"], native_labels=True)
    _, via_dump = extract(dump=str(sample_dump_path()), **args)
    with OxigraphServer(sample_dump_path(), tmp_path) as url:
        _, via_sparql = extract(sparql=url, **args)
    assert via_dump["native_labels"] == via_sparql["native_labels"]
    assert via_dump["native_labels"]["Q212121"] == {"es": "paella"}
    assert via_dump["native_labels"]["Q171517"] == {"es": "Palacio Real de Madrid"}
    _, italy = extract(dump=str(sample_dump_path()), concepts=["cuisine"], countries=["IT"], native_labels=True)
    assert italy["native_labels"] == {}  # no Italian label in the sample; Spanish ones are not asked for
    assert "native_labels" not in extract(dump=str(sample_dump_path()), **{**args, "native_labels": False})[1]


def test_a_label_in_the_tag_itself_wins_over_one_in_its_language_subtag():
    from cultureboard.builder.kb import pick_labels

    assert pick_labels({"pt-br": "Feijoada (BR)", "pt": "Feijoada"}, ["pt-BR"]) == {"pt-BR": "Feijoada (BR)"}
    assert pick_labels({"pt": "Feijoada", "es": "Paella"}, ["pt-BR", "yo"]) == {"pt-BR": "Feijoada"}
    assert pick_labels({"zh": "饺子", "zh-hans": "饺子 (简)"}, ["zh-Hans"]) == {"zh-Hans": "饺子 (简)"}


# ------------------------------------------------------------------------------------ translation file


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "translations.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("entry, message", [
    ("{language: es_ES, en: A, text: B, back: A}", "language 'es_ES' is not a BCP 47 tag"),
    ("{language: en, en: A, text: B, back: A}", "language 'en' is not a BCP 47 tag"),
    ("{language: es, en: A, text: B}", "has no back string"),
    ("{language: es, en: A, text: B, back: A, score: 1}", "is not a mapping of only"),
])
def test_a_bad_translation_file_names_the_file_and_entry(tmp_path, entry, message):
    path = write(tmp_path, f"translations:\n  - {entry}\n")
    with pytest.raises(CultureboardError, match=message) as err:
        load_translations(path)
    assert err.value.message.startswith(f"{path} (translations entry 1")


def test_a_repeated_translation_is_an_error_and_the_packaged_file_loads(tmp_path):
    path = write(tmp_path, "translations:\n" + "  - {language: es, en: A, text: B, back: A}\n" * 2)
    with pytest.raises(CultureboardError, match="repeats the es translation"):
        load_translations(path)
    packaged = load_translations(demo_translations_path())
    assert len(packaged) == 67 and {lang for lang, _ in packaged} == {"es", "ha", "yo", "ig"}


def test_a_bad_translation_file_stops_the_build_before_the_work(tmp_path):
    path = write(tmp_path, "translations:\n  - {language: yo_NG, en: A, text: B, back: A}\n")
    with pytest.raises(CultureboardError, match="yo_NG"):
        build(tmp_path / "out", countries=["NG"], prompt_sets=["cube-awareness-native"], translations=str(path))
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------------- the LLM stage


class FakeTranslator:
    """Translates by prefixing the language tag; translates back by removing it. A prompt naming ``garbled``
    comes back as something else entirely; every other request (the refinement stage's) is answered 'Yes.'."""

    name = "fake"

    def __init__(self, model: str = "translator", fail: bool = False):
        self.model, self.fail, self.requests = model, fail, []

    def generate(self, messages, params):
        if self.fail:
            raise LLMCallError("refused_connection", "down")
        content = messages[-1]["content"]
        self.requests.append(content)
        if "into English" in content:
            text = content.split("\n\n", 1)[1]
            return "A bowl of soup on a table." if "garbled" in text else text.split("] ", 1)[1]
        if "Translate this" in content:
            tag = content.split("BCP 47 tag '")[1].split("'")[0]
            return f"[{tag}] " + content.split("\n\n", 1)[1]
        return "Yes." if content.startswith("Can you classify") else ""


def request(text: str, language: str = "yo", prompt_id: str = "s/q1/ng", label: str | None = None) -> Request:
    return Request(prompt_id, "NG", "s", text, language, "akara", label)


def llm(tmp_path: Path, backend=None) -> CachedLLM:
    return CachedLLM(backend or FakeTranslator(), ResponseCache(tmp_path / "cache.jsonl"))


def test_the_translation_file_wins_over_the_llm(tmp_path):
    text = "A high resolution image of akara from Nigerian cuisine."
    override = Translation("Àwòrán àkàrà.", "A picture of akara from Nigerian cuisine.", "override")
    model = llm(tmp_path)
    result = translate([request(text, "yo"), request(text, "ha")], {("yo", text): override}, model, 0.9)
    assert result.kept["s/q1/ng", "yo"].text == "Àwòrán àkàrà." and result.kept["s/q1/ng", "yo"].source == "override"
    assert result.kept["s/q1/ng", "ha"].text == f"[ha] {text}" and result.kept["s/q1/ng", "ha"].source == "llm:fake:translator"
    assert not any("'yo'" in r for r in model.backend.requests)  # the file's entry was never asked for
    assert result.report["languages"]["yo"]["override"] == 1 and result.report["languages"]["ha"]["llm"] == 1
    assert [d["decision"] for d in result.decisions] == ["kept"] and result.decisions[0]["name"] == "ha"
    assert result.kept["s/q1/ng", "ha"].score == pytest.approx(1.0, abs=1e-3)  # back-translation == English


def test_the_wikidata_label_is_given_to_the_translator(tmp_path):
    model = llm(tmp_path)
    translate([request("A panoramic view of Alhambra in Spain.", "es", label="La Alhambra")], {}, model, 0.9)
    assert 'Write the name "akara" as "La Alhambra"' in model.backend.requests[0]


def test_a_low_back_translation_score_flags_and_drops_the_row(tmp_path):
    text = "A high resolution image of garbled jollof rice from Nigerian cuisine."
    bad_override = Translation("Àwòrán.", "A photograph of a mountain at night.", "override")
    result = translate([request(text, "ha"), request(text, "yo", prompt_id="s/q2/ng")],
                       {("yo", text): bad_override}, llm(tmp_path), 0.9)
    assert result.kept == {}
    flagged = result.report["flagged"]
    assert [(f["prompt_id"], f["language"], f["source"]) for f in flagged] == [
        ("s/q1/ng", "ha", "llm:fake:translator"), ("s/q2/ng", "yo", "override")]
    assert all(f["score"] < 0.9 for f in flagged) and flagged[0]["back"] == "A bowl of soup on a table."
    assert [d["decision"] for d in result.decisions] == ["flagged"]
    assert result.report["languages"]["ha"] == {"override": 0, "llm": 0, "flagged": 1, "absent": 0}
    lowered = translate([request(text, "ha")], {}, llm(tmp_path), 0.0)  # the threshold is what decides
    assert ("s/q1/ng", "ha") in lowered.kept


def test_without_llm_or_entry_a_row_is_absent_and_a_failed_call_too(tmp_path):
    result = translate([request("A", "yo"), request("B", "ha")], {}, None, 0.9)
    assert result.kept == {} and result.report["absent"] == 2 and result.decisions == []
    down = translate([request("A", "yo")], {}, llm(tmp_path / "down", FakeTranslator(fail=True)), 0.9)
    assert down.kept == {} and down.report["absent"] == 1
    assert [(d["decision"], d["reason"]) for d in down.decisions] == [("absent", "refused_connection")]


# ------------------------------------------------------------------------------------------ the build


def test_native_rows_pair_with_an_english_row_of_the_same_set(demo):
    out, provenance = demo
    base = {r["artifact_id"]: r for r in rows_of(out, "cube-awareness")}
    for name in NATIVE:
        rows = rows_of(out, name)
        by_id = {r["prompt_id"]: r for r in rows}
        assert len(by_id) == len(rows) and {r["prompt_set"] for r in rows} == {name}
        english = [r for r in rows if r["language"] == "en"]
        native = [r for r in rows if r["language"] != "en"]
        assert english and native and all(r["translation_of"] is None and r["translation_check"] is None for r in english)
        for r in native:
            en = by_id[r["translation_of"]]
            assert en["language"] == "en" and r["language"] in load_countries().by_iso(r["country"]).languages
            for column in ("artifact_id", "country", "seeds", "images_per_prompt", "seed_scheme", "category",
                           "template", "negative_prompt"):
                assert r[column] == en[column], column
            assert r["translation_source"] == "override" and 0.9 <= r["translation_check"] <= 1
            assert r["prompt_id"] == en["prompt_id"][: -len("/en")] + "/" + r["language"]
        assert {r["translation_of"] for r in native} == {r["prompt_id"] for r in english}  # no English row unpaired
    awareness = rows_of(out, "cube-awareness-native")
    assert {r["country"] for r in awareness} == set(DEMO) and len(awareness) == 27 + 12 + 45
    assert all(r["text"] == base[r["artifact_id"]]["text"] and r["seeds"] == [0, 1] for r in awareness
               if r["language"] == "en")
    assert all(r["language"] is None for r in rows_of(out, "cube-awareness"))
    assert provenance["translations"]["kept"] == 67 and provenance["translations"]["flagged"] == []


def test_native_rows_name_the_artifact_by_its_wikidata_label(demo):
    out, _ = demo
    names = {(r["artifact_id"], r["language"]): r["artifact_name"] for r in rows_of(out, "cultdiff-native")}
    assert names["Q171517", "es"] == "Palacio Real de Madrid" and names["Q171517", "en"] == "Royal Palace of Madrid"
    assert names["Q305419", "es"] == "Basilica of Our Lady of Guadalupe"  # no Spanish label in the sample dump


def test_the_card_lists_languages_sources_and_checks(demo):
    out, _ = demo
    card = (out / "README.md").read_text(encoding="utf-8")
    section = card.split("## Languages")[1].split("## ")[0]
    assert "translations_demo.yaml" in section and "below 0.9 are flagged" in section
    for line in ("| `es` | 22 | 0 | 0 | 0 |", "| `ha` | 15 | 0 | 0 | 0 |", "| `yo` | 15 | 0 | 0 | 0 |"):
        assert line in section
    assert "`translation_of`" in card


def test_without_llm_and_without_file_the_native_sets_are_empty_and_counted(tmp_path):
    provenance = build(tmp_path / "ds", countries=["NG"], concepts=["cuisine"], prompt_sets=["cube-awareness-native"],
                       translations="none")
    assert provenance["rows"]["cube-awareness-native"] == 0
    t = provenance["translations"]
    assert t["absent"] == t["requests"] == 3 * provenance["rows"]["artifacts-curated"] and t["kept"] == 0


def test_the_translation_cache_replays_without_the_llm(tmp_path, monkeypatch):
    """A build with an LLM stores every translation call; a second build given that cache and an LLM that fails
    every call gives the same rows, byte for byte."""
    options = dict(countries=["NG"], concepts=["cuisine"], prompt_sets=["cube-awareness-native"], translations="none",
                   llm="openai:translator")
    monkeypatch.setattr(build_module, "backend_from_spec", lambda spec, **_: FakeTranslator())
    first = build(tmp_path / "one", **options)
    assert first["translations"]["calls"] == 2 * first["translations"]["kept"] > 0
    decisions = rows_of(tmp_path / "one", "llm-decisions")
    assert sum(d["stage"] == "translation" for d in decisions) == first["translations"]["kept"]
    monkeypatch.setattr(build_module, "backend_from_spec", lambda spec, **_: FakeTranslator(fail=True))
    second = build(tmp_path / "two", llm_cache=str(tmp_path / "one" / "llm" / "cache.jsonl"), **options)
    assert second["translations"]["cache_hits"] == second["translations"]["calls"] == first["translations"]["calls"]
    shard = "data/cube-awareness-native/test-00000-of-00001.parquet"
    assert (tmp_path / "two" / shard).read_bytes() == (tmp_path / "one" / shard).read_bytes()
    native = [r for r in rows_of(tmp_path / "two", "cube-awareness-native") if r["language"] != "en"]
    assert {r["translation_source"] for r in native} == {"llm:fake:translator"}
    assert json.loads((tmp_path / "two" / "build.json").read_text())["translations"]["llm"] == "fake:translator"


def test_the_threshold_option_is_a_fraction(tmp_path):
    with pytest.raises(CultureboardError, match="translation.threshold"):
        build(tmp_path / "out", prompt_sets=["cultdiff-native"], translation_threshold=1.5)


def test_the_cli_passes_the_translation_options(tmp_path, capsys):
    from cultureboard.cli import main

    out = tmp_path / "ds"
    code = main(["build", "--out", str(out), "--countries", "NG", "--concepts", "cuisine",
                 "--prompt-sets", "cube-awareness-native", "--translations", "none", "--json"])
    assert code == 0 and json.loads(capsys.readouterr().out)["rows"]["cube-awareness-native"] == 0
    assert json.loads((out / "build.json").read_text())["translations"]["kept"] == 0
    code = main(["build", "--out", str(tmp_path / "other"), "--prompt-sets", "cultdiff-native",
                 "--translation-threshold", "1.5"])
    err = capsys.readouterr().err
    assert code == 2 and "--translation-threshold 1.5: is not a fraction" in err and "Traceback" not in err
