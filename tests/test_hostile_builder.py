"""Hostile inputs to the builder, each run through the real CLI (``cultureboard.cli.main``).

Each case must end without a traceback, either rejected cleanly (a non-zero exit, one ``error:`` line
naming the file or option at fault, and no output folder) or accepted by design (exit 0, the damage
counted: malformed dump lines are skipped and counted up to ``--max-malformed``).

Corpus: 63 cases, 52 rejected cleanly, 11 accepted by design:

- Wikidata dump lines (``artifacts --dump``): 11 accepted by design (10 counted as malformed lines,
  among them one line inflating past the line limit; one statement value of the wrong type ignored),
  1 rejected (more malformed lines than ``--max-malformed``);
- SPARQL answers of the wrong shape (``artifacts --sparql``): 8 rejected;
- option values (``artifacts``, ``build``, ``build --config``): 17 rejected;
- cube_1k.json rows (``import cube-1k``): 10 rejected;
- CuRe CSVs (``import cure``): 6 rejected;
- curation files (``build --curation``): 10 rejected.
"""

from __future__ import annotations

import functools
import gzip
import http.server
import json
import re
import threading
from pathlib import Path

import pytest

from cultureboard.builder import kb_dump, kb_sparql
from cultureboard.builder.importers import CURE_AXES
from cultureboard.cli import main
from cultureboard.http import with_retries
from test_traversal import DISH, graph
from wikidata_factory import entity, write_dump

CONCEPTS_FILE = f"cuisine:\n  roots:\n    - {{qid: {DISH}, name: dish}}\n"


def run_cli(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_rejected(code: int, out: str, err: str, names: str, exit_code: int | None = None) -> str:
    """A clean rejection: non-zero exit, no traceback, exactly one ``error:`` line naming ``names``."""
    assert "Traceback" not in out + err
    assert code != 0 and (exit_code is None or code == exit_code), (code, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert names in lines[0], (names, lines[0])
    assert "(fix: " in lines[0]
    return lines[0]


# ------------------------------------------------------------------------------------------ dump lines


def statement(value, prop: str = "P31") -> dict:
    return {"mainsnak": {"snaktype": "value", "property": prop, "datavalue": {"value": value}}, "rank": "normal"}


def item(qid: str) -> dict:
    return {"id": qid}


_TIME = "-01-01T00:00:00Z"
#: name -> (a hostile dump line, str or bytes, and the number of malformed lines it counts as)
DUMP_LINES = {
    "entity id of 30 digits": (json.dumps({"id": "Q" + "9" * 30}), 1),
    "entity id of 5,000 digits": (json.dumps({"id": "Q" + "9" * 5000}), 1),
    "entity id with non-ASCII digits": (json.dumps({"id": "Q\u0663\u0664"}), 1),
    "P31 value of 25 digits": (json.dumps({"id": "Q5", "claims": {"P31": [statement(item("Q" + "9" * 25))]}}), 1),
    "P495 value of 25 digits on a candidate": (json.dumps(
        {"id": "Q6", "claims": {"P31": [statement(item(DISH))], "P495": [statement(item("Q" + "9" * 25), "P495")]}}), 1),
    "line nested 100,000 deep": ('{"id":"Q7","x":' + "[" * 100_000 + "]" * 100_000 + "}", 1),
    "P580 year of 5,000 digits": (json.dumps(
        {"id": "Q8", "claims": {"P580": [statement({"time": "+" + "9" * 5000 + _TIME}, "P580")]}}), 1),
    "P571 year beyond 64 bits on a candidate": (json.dumps({"id": "Q9", "claims": {
        "P31": [statement(item(DISH))], "P495": [statement(item("Q38"), "P495")],
        "P571": [statement({"time": "+" + "9" * 25 + _TIME}, "P571")]}}), 1),
    "invalid UTF-8": (b'{"id":"Q10","labels":{"en":{"value":"\xff\xfe"}}}', 1),
    "P580 time that is a number (ignored value)": (json.dumps(
        {"id": "Q11", "claims": {"P580": [statement({"time": 5}, "P580")]}}), 0),
}


@pytest.fixture(scope="module")
def concepts_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("concepts") / "concepts.yaml"
    path.write_text(CONCEPTS_FILE)
    return path


def write_hostile_dump(path: Path, line: str | bytes, filler: int = 200) -> Path:
    """The test graph, ``filler`` more entities, then ``line``, in the dump's layout."""
    entities = graph() + [entity(f"Q{7000 + i}", f"filler {i}") for i in range(filler)]
    head = ("[\n" + ",\n".join(json.dumps(e) for e in entities) + ",\n").encode()
    path.write_bytes(head + (line if isinstance(line, bytes) else line.encode()) + b"\n]\n")
    return path


def artifacts_args(dump: Path, out: Path, concepts_file: Path, *extra: str) -> list[str]:
    return ["artifacts", "--dump", str(dump), "--concepts", "cuisine", "--countries", "IT", "--concepts-file",
            str(concepts_file), "--out", str(out), *extra]


@pytest.mark.parametrize("name", list(DUMP_LINES))
def test_hostile_dump_line_is_counted_not_fatal(tmp_path, capsys, concepts_file, name):
    line, counted = DUMP_LINES[name]
    dump = write_hostile_dump(tmp_path / "dump.json", line)
    code, out, err = run_cli(artifacts_args(dump, tmp_path / "out", concepts_file), capsys)
    assert code == 0 and "Traceback" not in out + err and err == ""
    report = json.loads((tmp_path / "out" / "report.json").read_text())["dump"]
    assert report["malformed"] == counted and report["over_limit"] == 0
    assert report["malformed_examples"] == ([report["lines"]] if counted else [])  # the hostile line, last but "]"


def test_gigantic_line_is_cut_off_at_the_limit_and_counted(tmp_path, capsys, concepts_file, monkeypatch):
    """One line inflating far past the line limit (here lowered to 256 KiB, with 16 KiB reads; the real
    one is 64 MiB) is dropped as it is read and counted; the lines after it keep their numbers."""
    monkeypatch.setattr(kb_dump, "MAX_LINE_BYTES", 256 << 10)
    monkeypatch.setattr(kb_dump, "_READ", 16 << 10)
    dump = tmp_path / "dump.json.gz"
    lines = [json.dumps(e) for e in graph()]
    gigantic = '{"id":"Q1","x":"' + "a" * (8 << 20) + '"}'
    dump.write_bytes(gzip.compress(("[\n" + ",\n".join(lines[:5] + [gigantic] + lines[5:]) + "\n]\n").encode(), 1))
    code, out, err = run_cli(artifacts_args(dump, tmp_path / "out", concepts_file, "--max-malformed", "0.1"), capsys)
    assert code == 0 and "Traceback" not in out + err
    report = json.loads((tmp_path / "out" / "report.json").read_text())["dump"]
    assert report["over_limit"] == 1 and report["malformed"] == 1 and report["malformed_examples"] == [7]
    assert report["entities"] == len(lines)


def test_too_many_hostile_lines_fail_the_build_in_one_line(tmp_path, capsys, concepts_file):
    bad = [line if isinstance(line, bytes) else line.encode() for line, n in DUMP_LINES.values() if n]
    dump = write_hostile_dump(tmp_path / "dump.json", b",\n".join(bad), filler=0)
    code, out, err = run_cli(artifacts_args(dump, tmp_path / "out", concepts_file), capsys)
    line = assert_rejected(code, out, err, str(dump))
    assert "9 of " in line and "above the threshold of 1.00%" in line and not (tmp_path / "out").exists()


# --------------------------------------------------------------------------------------- SPARQL answers


class _Answer(http.server.BaseHTTPRequestHandler):
    body: bytes = b""
    declared: int | None = None  # a Content-Length larger than the body: the connection drops mid-answer

    def do_POST(self):  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/sparql-results+json")
        self.send_header("Content-Length", str(self.declared or len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)
        self.close_connection = True

    def log_message(self, *args):
        pass


@pytest.fixture
def endpoint(monkeypatch):
    """A local server answering every SPARQL query with ``server.handler.body``; retries do not wait."""
    handler = type("Answer", (_Answer,), {})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setattr(kb_sparql, "with_retries", functools.partial(with_retries, sleep=lambda s: None))
    try:
        yield handler, f"http://127.0.0.1:{server.server_address[1]}/sparql"
    finally:
        server.shutdown()
        server.server_close()


_TERM = {"type": "uri", "value": "http://www.wikidata.org/entity/Q1"}
#: name -> (answer body, Content-Length declared or None, words of the expected problem)
SPARQL_ANSWERS = {
    "bindings null": (b'{"results": {"bindings": null}}', None, "no results.bindings list"),
    "top-level list": (b"[]", None, "no results.bindings list"),
    "rows missing their variables": (b'{"results": {"bindings": [{}]}}', None, "a row lacks ?item, ?label"),
    "a term that is a string": (json.dumps({"results": {"bindings": [{"item": "Q1", "label": "x"}]}}).encode(), None,
                                "a term is not {type, value}"),
    "an item that is not a Wikidata IRI": (json.dumps({"results": {"bindings": [
        {"item": {"type": "literal", "value": "Q1"}, "label": {"type": "literal", "value": "x"}}]}}).encode(), None,
        "?item 'Q1' is not a Wikidata item"),
    "not JSON": (b"<html>busy</html>", None, "(not JSON)"),
    "JSON nested 100,000 deep": (b"[" * 100_000 + b"]" * 100_000, None, "(not JSON)"),
    "connection dropped mid-answer": (b'{"results": {"bindi', 4096, "broke off its answer (IncompleteRead)"),
}


@pytest.mark.parametrize("name", list(SPARQL_ANSWERS))
def test_sparql_answer_of_the_wrong_shape_is_one_line(tmp_path, capsys, concepts_file, endpoint, name):
    handler, url = endpoint
    handler.body, handler.declared, problem = SPARQL_ANSWERS[name]
    args = ["artifacts", "--sparql", url, "--concepts", "cuisine", "--countries", "IT", "--concepts-file",
            str(concepts_file), "--out", str(tmp_path / "out")]
    line = assert_rejected(*run_cli(args, capsys), f"--sparql {url}")
    assert problem in line and not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------------- option values

#: name -> (the options added to the command line, the start of the error line, the exit code)
ARTIFACTS_OPTIONS = {
    "--max-malformed nan": (["--max-malformed", "nan"], "--max-malformed nan: is not a fraction between 0 and 1", 2),
    "--max-malformed -0.1": (["--max-malformed", "-0.1"], "--max-malformed -0.1: is not a fraction", 2),
    "--max-malformed 1.5": (["--max-malformed", "1.5"], "--max-malformed 1.5: is not a fraction", 2),
    "--max-malformed inf": (["--max-malformed", "inf"], "--max-malformed inf: is not a fraction", 2),
    "--concepts ,": (["--concepts", ","], "--concepts '': names nothing", 2),
    "--countries ' , '": (["--countries", " , "], "--countries '': names nothing", 2),
    "--countries ''": (["--countries", ""], "--countries '': names nothing", 2),
    "--hops 0": (["--hops", "0"], "--hops 0: is not an integer of at least 1", 2),
}
BUILD_OPTIONS = {
    "--prompt-sets ,": (["--prompt-sets", ","], "--prompt-sets '': names nothing", 2),
    "--concepts ,,": (["--concepts", ",,"], "--concepts '': names nothing", 2),
    "--countries ,": (["--countries", ","], "--countries '': names nothing", 2),
    "--seed -1": (["--seed", "-1"], "--seed -1: is not an integer of at least 0", 2),
}
#: name -> (a build config file, the words naming the entry)
BUILD_CONFIGS = {
    "max_malformed: .nan": ("max_malformed: .nan\n", "(max_malformed: nan): is not a fraction"),
    "countries: 5": ("countries: 5\n", "(countries: 5): is not a list of names"),
    "prompt_sets: []": ("prompt_sets: []\n", "(prompt_sets: []): names nothing"),
    "hops: four": ("hops: four\n", "(hops: 'four'): is not an integer"),
    "an alias": ("concepts: &c [cuisine]\ncountries: *c\n", "config.yaml:2"),
}


@pytest.mark.parametrize("name", list(ARTIFACTS_OPTIONS))
def test_bad_artifacts_option_is_a_usage_error(tmp_path, capsys, concepts_file, name):
    extra, message, exit_code = ARTIFACTS_OPTIONS[name]
    dump = write_dump(tmp_path / "dump.json", graph())
    args = artifacts_args(dump, tmp_path / "out", concepts_file, *extra)
    line = assert_rejected(*run_cli(args, capsys), message, exit_code)
    assert line.startswith("error: " + message)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", list(BUILD_OPTIONS))
def test_bad_build_option_is_a_usage_error(tmp_path, capsys, name):
    extra, message, exit_code = BUILD_OPTIONS[name]
    line = assert_rejected(*run_cli(["build", "--out", str(tmp_path / "out"), *extra], capsys), message, exit_code)
    assert line.startswith("error: " + message)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", list(BUILD_CONFIGS))
def test_bad_build_config_entry_is_named(tmp_path, capsys, name):
    text, names = BUILD_CONFIGS[name]
    config = tmp_path / "config.yaml"
    config.write_text(text)
    args = ["build", "--out", str(tmp_path / "out"), "--config", str(config)]
    line = assert_rejected(*run_cli(args, capsys), str(config), 1)
    assert names in line and not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------------- cube_1k.json

_ROW = {"id": "Q1", "name": "Pizza", "country": "Italy", "domain": "cuisine",
        "prompt": "A high resolution image of Pizza from Italian cuisine, realistic", "P31": "[]"}
#: name -> (the file's text, the words of the expected problem)
CUBE_1K = {
    "id is a number": (json.dumps([{**_ROW, "id": 5}]), "(row 0): id is a number (5), not a string"),
    "id is null": (json.dumps([{**_ROW, "id": None}]), "(row 0): id is null, not a string"),
    "name is a list": (json.dumps([_ROW, {**_ROW, "name": ["Pizza"]}]), "(row 1): name is a list, not a string"),
    "name is NaN": (json.dumps([{**_ROW, "name": float("nan")}]), "name is a number (nan), not a string"),
    "prompt is null": (json.dumps([{**_ROW, "prompt": None}]), "prompt is null, not a string"),
    "P31 is an object": (json.dumps([{**_ROW, "P31": {"a": 1}}]), "P31 is an object, not a string"),
    "P31 nests 10,000 lists": (json.dumps([{**_ROW, "P31": "[" * 10_000 + "]" * 10_000}]),
                               "is not a list of Wikidata QIDs"),
    "rows nested 100,000 deep": ("[" * 100_000 + "]" * 100_000, "nests JSON deeper than the parser goes"),
    "a row that is a string": (json.dumps(["Pizza"]), "(row 0): is a string, not an object of fields"),
    "an empty name": (json.dumps([{**_ROW, "name": "  "}]), "(row 0): has an empty name"),
}


@pytest.mark.parametrize("name", list(CUBE_1K))
def test_hostile_cube_1k_is_one_line_naming_file_and_row(tmp_path, capsys, name):
    text, problem = CUBE_1K[name]
    source = tmp_path / "cube_1k.json"
    source.write_text(text)
    line = assert_rejected(*run_cli(["import", "cube-1k", str(source), "--out", str(tmp_path / "out")], capsys), str(source), 1)
    assert problem in line and not (tmp_path / "out").exists()


# -------------------------------------------------------------------------------------------- CuRe CSVs

_CURE_HEADER = "Category,Region,Item,Continent,Wikimedia_Category,Global North/South,Time\n"


def cure_folder(tmp_path: Path) -> Path:
    """Six small valid CuRe CSVs (one row each)."""

    folder = tmp_path / "cure"
    folder.mkdir()
    for i, axis in enumerate(CURE_AXES):
        (folder / f"{axis}.csv").write_text(_CURE_HEADER + f"Thing_{i},Italy,Item {axis},Europe,Item_{i},Global North,\n")
    return folder


#: name -> (the text of food.csv, the line named, the words of the expected problem)
CURE_CSV = {
    "a field over 128 KiB": (_CURE_HEADER + "Dish,Italy," + "x" * (129 << 10) + ",Europe,X,Global North,\n", 2,
                             "field larger than field limit"),
    "a NUL byte": (_CURE_HEADER + "Dish,Italy,Pizza\0,Europe,X,Global North,\n", 2, "holds a NUL byte"),
    "an unterminated quote": (_CURE_HEADER + 'Dish,Italy,"Pizza,Europe,X,Global North,\n' + "Dish,Italy,Pasta,Europe,X,Global North,\n" * 3,
                              2, "unexpected end of data"),  # the line its row starts on
    "a stray quote": (_CURE_HEADER + 'Dish,Italy,"Pizza" Margherita,Europe,X,Global North,\n', 2, "',' expected after '\"'"),
    "more fields than the header": (_CURE_HEADER + "Dish,Italy,Pizza,Margherita,Europe,X,Global North,\n", 2,
                                    "has 8 fields, the header 7"),
    "not UTF-8": (_CURE_HEADER + "Dish,Italy,Pizza \xe0 la,Europe,X,Global North,\n", 2, "is not UTF-8 (byte 0xe0)"),
}


def test_the_cure_fixture_imports(tmp_path, capsys):
    code, out, err = run_cli(["import", "cure", str(cure_folder(tmp_path)), "--out", str(tmp_path / "out")], capsys)
    assert code == 0 and err == "" and "cure-ladder" in out


@pytest.mark.parametrize("name", list(CURE_CSV))
def test_hostile_cure_csv_is_one_line_naming_file_line_and_fix(tmp_path, capsys, name):
    text, lineno, problem = CURE_CSV[name]
    folder = cure_folder(tmp_path)
    (folder / "food.csv").write_bytes(text.encode("latin-1" if name == "not UTF-8" else "utf-8"))
    names = f"{folder / 'food.csv'} (line {lineno})"
    line = assert_rejected(*run_cli(["import", "cure", str(folder), "--out", str(tmp_path / "out")], capsys), names, 1)
    assert problem in line and not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------ curation files

# 10 levels of 9 aliases each (about 400 bytes): 9**10 values once expanded.
_BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(9))
#: name -> (the curation file, the words of the expected problem)
CURATION = {
    "an alias bomb": (_BOMB, "uses a YAML alias (*name)"),
    "nested 10,000 deep": ("include: " + "[" * 10_000 + "]" * 10_000 + "\n", "nests more than 16 levels deep"),
    "a Python tag": ("include: [!!python/object:os.system {qid: Q1}]\n", "not valid YAML"),
    "an unknown concept": ("include: [{qid: 'manual:x', name: X, country: IT, concept: cusine}]\n",
                           "concept 'cusine' is not one of this build's concepts"),
    "a qid that is a number": ("exclude: [{qid: 123}]\n", "qid is 123, not a string"),
    "country NO read as false": ("exclude: [{qid: Q1, country: NO}]\n", "country is false, not a string"),
    "an unknown country": ("exclude: [{qid: Q1, country: XX}]\n", "country 'XX' is not in the country table"),
    "a misspelt field": ("exclude: [{qid: Q1, contry: IT}]\n", "has unknown field(s) contry"),
    "a name on a non-manual include": ("include: [{qid: Q1, name: X}]\n", "has unknown field(s) name"),
    "a rename to a list": ("rename: [{qid: Q1, name: [a, b]}]\n", "name is ['a', 'b'], not a string"),
}


@pytest.mark.parametrize("name", list(CURATION))
def test_hostile_curation_file_is_rejected_before_the_build(tmp_path, capsys, name):
    text, problem = CURATION[name]
    curation = tmp_path / "curation.yaml"
    curation.write_text(text)
    args = ["build", "--out", str(tmp_path / "out"), "--curation", str(curation), "--countries", "IT",
            "--prompt-sets", "cube-awareness"]
    line = assert_rejected(*run_cli(args, capsys), str(curation), 1)
    assert problem in line and not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------ the count


def test_the_recorded_counts_match_the_corpus():
    """The counts in this module's docstring (which the README quotes) are those of the cases above."""
    accepted = len(DUMP_LINES) + 1  # + the gigantic line
    rejected = (1 + len(SPARQL_ANSWERS) + len(ARTIFACTS_OPTIONS) + len(BUILD_OPTIONS) + len(BUILD_CONFIGS)
                + len(CUBE_1K) + len(CURE_CSV) + len(CURATION))
    total, said_rejected, said_accepted = map(int, re.search(
        r"Corpus: (\d+) cases, (\d+) rejected cleanly, (\d+) accepted by design", __doc__).groups())
    assert (total, said_rejected, said_accepted) == (accepted + rejected, rejected, accepted)


def test_dump_to_rdf_skips_hostile_lines(tmp_path):
    """Lines the dump reader counts as malformed (bad UTF-8, nesting 100,000 deep, a time that is no string) are
    skipped by the RDF conversion too, never a traceback."""
    from cultureboard.builder.kb_rdf import dump_to_ntriples

    good = json.dumps({"id": "Q1", "labels": {"en": {"language": "en", "value": "one"}}, "claims": {}, "sitelinks": {}})
    odd_time = json.dumps({"id": "Q2", "claims": {"P571": [{"mainsnak": {"snaktype": "value", "datavalue": {
        "value": {"time": 1900}}}, "rank": "normal"}]}, "sitelinks": {}})
    dump = tmp_path / "dump.json"
    dump.write_bytes(b"[\n" + good.encode() + b",\n" + b'{"id": "Q3", "labels": "\xff\xfe"},\n' + b"[" * 100_000
                     + b",\n" + odd_time.encode() + b"\n]\n")
    assert dump_to_ntriples(dump, tmp_path / "out.nt") in (1, 2)
    assert "one" in (tmp_path / "out.nt").read_text()


def test_concept_files_refuse_aliases_and_bad_qids(tmp_path):
    from cultureboard.builder.traversal import load_concepts
    from cultureboard.errors import CultureboardError

    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("a: &a [x, x]\nb: &b [*a, *a]\ncuisine: {roots: [{qid: Q1, name: food}]}\n")
    with pytest.raises(CultureboardError, match="alias"):
        load_concepts(bomb)
    long = tmp_path / "long.yaml"
    long.write_text("cuisine: {roots: [{qid: Q" + "9" * 30 + ", name: food}]}\n")
    with pytest.raises(CultureboardError, match="not Wikidata QIDs"):
        load_concepts(long)
