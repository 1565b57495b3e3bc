"""Hostile Commons answers against ``cultureboard fetch-references`` (through the real CLI, against the stand-in
of tests/commons_server.py): licence spellings, answers of the wrong shape, rename cycles, repeating
continuations and servers that drip.

Corpus count (for the README; ``test_hostile_counts.py`` keeps it true): 83 cases, 71 rejected cleanly, 12
accepted by design. Rejected: 52 non-free or unclear licence spellings (NOT_FREE: the image left out, its reason in
references-missing), 15 API answers of the wrong shape (WRONG_SHAPES: one error line, exit 1, the dataset's
existing references kept), a continuation repeating over three titles (stopped at the first repeat), a file and
an API answer dripping a byte at a time (past their time limit), and a rename cycle (the title left out with the
reason, the run ends). Accepted by design: 10 free spellings (FREE: kept) and 2 odd but usable answers (lone
surrogates in the metadata, kept as U+FFFD; a javascript: page URL, kept without it).
"""

from __future__ import annotations

import copy
import threading

import pytest
from commons_server import CommonsServer, FakeFile
from test_references import CONTACT, GOOD, make_dataset, read

from cultureboard.builder import commons
from cultureboard.builder.licences import is_free
from cultureboard.cli import main

# (id, LicenseShortName, License code, UsageTerms, NonFree): never kept
NOT_FREE = [
    ("nc", "CC BY-NC 4.0", None, None, None),
    ("nd", "CC BY-ND 4.0", None, None, None),
    ("nc-sa", "CC BY-NC-SA 3.0", None, None, None),
    ("nc-nd", "CC BY-NC-ND 2.0", None, None, None),
    ("nc-code", "cc-by-nc-4.0", None, None, None),
    ("noncommercial-word", "CC BY NonCommercial 4.0", None, None, None),
    ("non-commercial-hyphen", "CC BY Non-Commercial 4.0", None, None, None),
    ("non-commercial-words", "CC BY Non Commercial 4.0", None, None, None),
    ("noderivatives-word", "CC BY NoDerivatives 4.0", None, None, None),
    ("no-derivatives-words", "CC BY No Derivatives 4.0", None, None, None),
    ("no-derivs", "CC BY No-Derivs 2.0", None, None, None),
    ("words-nc", "Creative Commons Attribution-NonCommercial 4.0 International", None, None, None),
    ("words-nd", "Creative Commons Attribution-NoDerivs 3.0 Unported", None, None, None),
    ("words-nc-sa", "Creative Commons Attribution-NonCommercial-ShareAlike 4.0", None, None, None),
    ("attribution-nc", "Attribution-NonCommercial", None, None, None),
    ("glued", "CCBYNC4.0", None, None, None),
    ("glued-hyphen", "CCBY-NC", None, None, None),
    ("glued-lower", "ccbyncsa", None, None, None),
    ("glued-free", "CCBYSA4.0", None, None, None),  # free, but not recognisable as written: unclear, left out
    ("full-width-nc", "ＣＣ ＢＹ－ＮＣ ４．０", None, None, None),
    ("full-width-nd-ideographic-space", "ＣＣ\u3000ＢＹ－ＮＤ", None, None, None),
    ("bracketed-non-commercial", "CC BY-SA 4.0 (non-commercial)", None, None, None),
    ("square-bracketed-nc", "CC BY-SA 4.0 [NC]", None, None, None),
    ("braced-no-derivatives", "CC BY 4.0 {no derivatives}", None, None, None),
    ("bracketed-nc-only", "CC BY-SA 4.0 (NC only)", None, None, None),
    ("comma-qualifier", "CC BY-SA 4.0, non-commercial use only", None, None, None),
    ("dash-qualifier", "CC BY 4.0 \u2014 for non-commercial use", None, None, None),
    ("trailing-nc", "CC BY 4.0 NC", None, None, None),
    ("nc-then-port-word", "cc by nc migrated", None, None, None),
    ("pd-non-commercial", "Public domain (non-commercial use only)", None, None, None),
    ("pd-nc-code", "PD-NC", None, None, None),
    ("cc0-except", "CC0 (except commercial use)", None, None, None),
    ("gfdl-qualified", "GFDL, no derivatives", None, None, None),
    ("unicode-hyphen", "CC BY\u2010NC 4.0", None, None, None),
    ("soft-hyphen", "CC BY\u00adNC 4.0", None, None, None),
    ("zero-width-space", "CC BY-NC\u200b 4.0", None, None, None),
    ("newline", "CC BY 4.0\nNC", None, None, None),
    ("cyrillic-homoglyphs", "\u0421\u0421 BY 4.0", None, None, None),
    ("fair-use", "Fair use", None, None, None),
    ("non-free", "Non-free", None, None, None),
    ("all-rights-reserved", "All rights reserved", None, None, None),
    ("copyright-line", "\u00a9 2020 the museum, all rights reserved", None, None, None),
    ("copyrighted", "Copyrighted", None, None, None),
    ("permission", "Used with permission", None, None, None),
    ("except-logo", "CC BY-SA 4.0 except the logo", None, None, None),
    ("editorial", "Free for editorial use", None, None, None),
    ("blank", "   ", None, None, None),
    ("code-says-nc", "CC BY 4.0", "cc-by-nc-4.0", None, None),
    ("usage-terms-say-nc", "CC BY 4.0", "cc-by-4.0", "Creative Commons Attribution-NonCommercial 4.0", None),
    ("code-says-nd-glued", "CC BY-SA 4.0", "cc-by-sa-4.0-nd", None, None),
    ("non-free-mark", "CC BY-SA 4.0", "cc-by-sa-4.0", None, "true"),
    ("non-free-mark-unclear", "CC BY-SA 4.0", "cc-by-sa-4.0", None, "maybe"),
]
# (id, LicenseShortName, License code, UsageTerms): kept
FREE = [
    ("cc-by-sa", "CC BY-SA 4.0", "cc-by-sa-4.0", "Creative Commons Attribution-Share Alike 4.0"),
    ("full-width-by-sa", "ＣＣ ＢＹ－ＳＡ ４．０", None, None),
    ("migrated", "CC BY-SA 3.0", "cc-by-sa-3.0-migrated", None),
    ("versions", "CC BY-SA 3.0", "cc-by-sa-3.0,2.5,2.0,1.0", None),
    ("ported", "CC BY 2.0 FR", "cc-by-2.0-fr", None),
    ("cc0", "CC0", "cc0", "Creative Commons Zero, Public Domain Declaration"),
    ("public-domain", "Public domain", "pd", None),
    ("pd-old", "Public domain", "pd-old-70", None),
    ("gfdl", "GFDL", "gfdl", None),
    ("words-by-sa", "Creative Commons Attribution-ShareAlike 4.0 International", None, None),
]


def fake(name: str, short, code, usage, non_free=None) -> FakeFile:
    return FakeFile(name, GOOD, license=short, license_code=code, usage_terms=usage, non_free=non_free or False)


def rows(names: list[str]) -> list[dict]:
    return [{"qid": f"Q{i}", "name": name, "country": "IT", "concept": "cuisine", "image": name,
             "commons_category": None, "source": "wikidata"} for i, name in enumerate(names, 1)]


def fetch(capsys, folder, server) -> tuple[int, str]:
    code = main(["fetch-references", "--dataset", str(folder), "--commons-api", server.api, "--contact", CONTACT,
                 "--connections", "1", "--max-side", "256"])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def kept_files(folder) -> dict:
    """Every file of the dataset folder with its bytes (the download staging folder left out)."""
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file() and ".references-download" not in p.parts}


def finishes(call, seconds: float = 60.0):
    """``call()``'s value, run on a thread: a hang (the defect these tests guard against) fails instead of waiting."""
    box = {}
    worker = threading.Thread(target=lambda: box.setdefault("value", call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "the command hung"
    return box["value"]


@pytest.mark.parametrize("text", [[t for t in c[1:4] if t][-1] for c in NOT_FREE if c[4] is None and c[1].strip()])
def test_no_non_free_spelling_is_recognised_as_free(text):
    """The field of each case that carries the non-free part (the last one given)."""
    assert not is_free(text)


@pytest.mark.parametrize("text", [t for c in FREE for t in c[1:] if t])
def test_free_spellings_are_recognised(text):
    assert is_free(text)


def test_fetch_references_keeps_only_licences_recognised_as_free(capsys, tmp_path, monkeypatch):
    """One run over every spelling: the free ones kept, each other one left out with its licence as the reason."""
    files = [fake(f"Non free {c[0]}.jpg", *c[1:]) for c in NOT_FREE] + [fake(f"Free {c[0]}.jpg", *c[1:]) for c in FREE]
    folder = make_dataset(tmp_path / "dataset", rows([f.name for f in files]))
    with CommonsServer(files) as server:
        code, err = fetch(capsys, folder, server)
    assert code == 0, err
    kept = {r["file"] for r in read(folder, "references")}
    assert kept == {f"File:Free {c[0]}.jpg" for c in FREE}
    missing = {r["name"]: r["reason"] for r in read(folder, "references-missing")}
    assert sorted(missing) == sorted(f"Non free {c[0]}.jpg" for c in NOT_FREE)
    for name, reason in missing.items():
        assert any(words in reason for words in ("licence", "NonFree")), (name, reason)


# (id, the answer's replacement: a function of (params, answer)): one error line, exit 1, nothing written
def _imageinfo(change):
    def reshape(params, answer):
        if params.get("prop") != "imageinfo":
            return answer
        answer = copy.deepcopy(answer)
        return change(answer)
    return reshape


def _members(change):
    return lambda params, answer: change(copy.deepcopy(answer)) if params.get("list") == "categorymembers" else answer


def _set(answer, path: list, value):
    node = answer
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return answer


WRONG_SHAPES = [
    ("no-query", _imageinfo(lambda a: {"batchcomplete": True})),
    ("no-pages", _imageinfo(lambda a: {"batchcomplete": True, "query": {}})),
    ("pages-a-mapping", _imageinfo(lambda a: _set(a, ["query", "pages"], {"-1": a["query"]["pages"][0]}))),
    ("pages-a-string", _imageinfo(lambda a: _set(a, ["query", "pages"], "none"))),
    ("page-without-title", _imageinfo(lambda a: _set(a, ["query", "pages"], [{"ns": 6}]))),
    ("imageinfo-a-mapping", _imageinfo(lambda a: _set(a, ["query", "pages", 0, "imageinfo"], {"url": "x"}))),
    ("renames-not-mappings", _imageinfo(lambda a: _set(a, ["query", "normalized"], ["File:A"]))),
    ("rename-to-a-number", _imageinfo(lambda a: _set(a, ["query", "redirects"], [{"from": "File:A", "to": 7}]))),
    ("continue-a-list", _imageinfo(lambda a: _set(a, ["continue"], ["iicontinue"]))),
    ("continue-repeats", _imageinfo(lambda a: _set(a, ["continue"], {"iicontinue": "1", "continue": "||"}))),
    ("members-missing", _members(lambda a: {"batchcomplete": True, "query": {}})),
    ("members-a-mapping", _members(lambda a: _set(a, ["query", "categorymembers"], {"0": "File:A.jpg"}))),
    ("member-title-a-number", _members(lambda a: _set(a, ["query", "categorymembers"], [{"ns": 6, "title": 5}]))),
    ("deep-nesting", lambda params, answer: b"[" * 100_000 + b"]" * 100_000),
    ("a-json-string", lambda params, answer: "query"),
]


@pytest.mark.parametrize("reshape", [pytest.param(c[1], id=c[0]) for c in WRONG_SHAPES])
def test_an_answer_of_the_wrong_shape_stops_the_run_and_keeps_the_references(capsys, tmp_path, reshape):
    """Not "no images": the dataset's earlier references stay as they were, byte for byte."""
    files = [FakeFile("Bread.jpg", GOOD)]
    folder = make_dataset(tmp_path / "dataset", [{**rows(["Bread.jpg"])[0], "commons_category": "Bread"}])
    with CommonsServer(files, {"Bread": ["Bread.jpg"]}) as server:
        assert fetch(capsys, folder, server)[0] == 0
        before = kept_files(folder)
        server.reshape = reshape
        code, err = finishes(lambda: fetch(capsys, folder, server))
    assert code == 1 and err.count("\n") == 1 and err.startswith(f"error: --commons-api {server.api}: "), err
    assert kept_files(folder) == before


def test_a_repeating_continuation_stops_at_its_first_repeat(capsys, tmp_path):
    """Three titles would allow three continuations; the repeat is seen at the second answer."""
    names = ["Bread.jpg", "Cake.jpg", "Pie.jpg"]
    folder = make_dataset(tmp_path / "dataset", rows(names))
    with CommonsServer([FakeFile(n, GOOD) for n in names]) as server:
        server.reshape = dict(WRONG_SHAPES)["continue-repeats"]
        code, err = finishes(lambda: fetch(capsys, folder, server))
        queries = server.requests.count("/w/api.php")
    assert code == 1 and "answered a continued imageinfo query in a shape" in err, err
    assert queries == 2


def test_a_dripping_file_is_left_out_at_its_time_limit(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(commons, "FILE_SECONDS", 1.0)
    files = [FakeFile("Drip.jpg", GOOD, behaviour="drip"), FakeFile("Bread.jpg", GOOD)]
    folder = make_dataset(tmp_path / "dataset", rows(["Drip.jpg", "Bread.jpg"]))
    with CommonsServer(files) as server:
        code, err = finishes(lambda: fetch(capsys, folder, server))
    assert code == 0, err
    assert [r["file"] for r in read(folder, "references")] == ["File:Bread.jpg"]
    [missing] = read(folder, "references-missing")
    assert "still sending after its time limit" in missing["reason"], missing


@pytest.mark.parametrize("limit, said", [("API_SECONDS", "1 s an answer"), ("API_RUN_SECONDS", "1 s a run")])
def test_a_dripping_api_stops_the_run_in_one_line(capsys, tmp_path, monkeypatch, limit, said):
    """An answer may take no more than API_SECONDS, and every answer of the run together no more than
    API_RUN_SECONDS."""
    monkeypatch.setattr(commons, limit, 1.0)
    folder = make_dataset(tmp_path / "dataset", rows(["Bread.jpg"]))
    with CommonsServer([FakeFile("Bread.jpg", GOOD)]) as server:
        server.api_drip = True
        code, err = finishes(lambda: fetch(capsys, folder, server))
    assert code == 1 and err.count("\n") == 1 and "answered a query too slowly" in err and said in err, err


def test_a_rename_cycle_leaves_the_title_out(capsys, tmp_path):
    def cycle(params, answer):
        if params.get("prop") == "imageinfo":
            answer["query"]["redirects"] = [{"from": "File:Loop a.jpg", "to": "File:Loop b.jpg"},
                                            {"from": "File:Loop b.jpg", "to": "File:Loop a.jpg"}]
        return answer

    folder = make_dataset(tmp_path / "dataset", rows(["Loop a.jpg", "Bread.jpg"]))
    with CommonsServer([FakeFile("Bread.jpg", GOOD)]) as server:
        server.reshape = cycle
        code, err = finishes(lambda: fetch(capsys, folder, server))
    assert code == 0, err
    [missing] = read(folder, "references-missing")
    assert "renames on Commons form a cycle" in missing["reason"], missing


def test_odd_but_usable_metadata_is_kept_cleaned(capsys, tmp_path):
    """A lone surrogate in the author (JSON carries it, UTF-8 cannot) becomes U+FFFD; a javascript: description
    page never reaches the card."""
    def odd(params, answer):
        if params.get("prop") == "imageinfo":
            info = answer["query"]["pages"][0]["imageinfo"][0]
            info["extmetadata"]["Artist"]["value"] = "Ann \ud800"
            info["descriptionurl"] = "javascript:alert(1)"
        return answer

    folder = make_dataset(tmp_path / "dataset", rows(["Bread.jpg"]))
    with CommonsServer([FakeFile("Bread.jpg", GOOD)]) as server:
        server.reshape = odd
        code, err = fetch(capsys, folder, server)
    assert code == 0, err
    [row] = read(folder, "references")
    assert row["author"] == "Ann \ufffd" and row["file_page"] == ""
    assert "javascript:" not in (folder / "README.md").read_text(encoding="utf-8")
