"""Hostile inputs to the builder, each run through the real CLI (``cultureboard.cli.main``).

Each case must end without a traceback, either rejected cleanly (a non-zero exit, one ``error:`` line
naming the file or option at fault, and no output folder) or accepted by design (exit 0, the damage
counted: malformed dump lines are skipped and counted up to ``--max-malformed``).

Corpus: 106 cases, 79 rejected cleanly, 27 accepted by design:

- Wikidata dump lines (``artifacts --dump``): 14 accepted by design (10 counted as malformed lines,
  among them one line inflating past the line limit; one statement value of the wrong type ignored; 3 artifacts
  whose name the dataset may not hold, left out and listed), 1 rejected (more malformed lines than
  ``--max-malformed``);
- SPARQL answers of the wrong shape (``artifacts --sparql``): 8 rejected;
- option values (``artifacts``, ``build``, ``build --config``): 20 rejected;
- cube_1k.json rows (``import cube-1k``): 10 rejected;
- CuRe CSVs (``import cure``): 6 rejected;
- curation files (``build --curation``): 13 rejected;
- translation files (``build --translations``): 19 rejected (a text the dataset may not hold, in any field; a
  repeated key; a malformed flag), 8 accepted by design (texts of five scripts kept; an echo of the English
  flagged, unless said to be meant; an entry matching no prompt named in a warning);
- the LLM stage's translations (``build --llm``): 5 accepted by design (an echo or a bidi override flagged; a
  lone surrogate, a NUL or a body nested 100,000 deep an absent translation);
- the LLM response cache (``build --llm-cache``): 2 rejected.
"""

from __future__ import annotations

import functools
import gzip
import http.server
import json
import re
import threading
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cultureboard.builder import kb_dump, kb_sparql
from cultureboard.builder.importers import CURE_AXES
from cultureboard.cli import main
from cultureboard.http import with_retries
from llm_server import ScriptedLLMServer
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
    "--llm-deadline 0": (["--llm-deadline", "0"], "--llm-deadline 0.0: is not a number of seconds above 0", 2),
    "--llm-deadline nan": (["--llm-deadline", "nan"], "--llm-deadline nan: is not a number of seconds above 0", 2),
}
#: name -> (a build config file, the words naming the entry)
BUILD_CONFIGS = {
    "max_malformed: .nan": ("max_malformed: .nan\n", "(max_malformed: nan): is not a fraction"),
    "countries: 5": ("countries: 5\n", "(countries: 5): is not a list of names"),
    "prompt_sets: []": ("prompt_sets: []\n", "(prompt_sets: []): names nothing"),
    "hops: four": ("hops: four\n", "(hops: 'four'): is not an integer"),
    "an alias": ("concepts: &c [cuisine]\ncountries: *c\n", "config.yaml:2"),
    "a repeated key": ("countries: [IT]\nhops: 2\ncountries: [JP]\n", "config.yaml:3: repeats the key 'countries' of line 1"),
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
    "a repeated key in an entry": ("exclude:\n  - qid: Q1\n    country: IT\n    qid: Q2\n",
                                   "curation.yaml:4: repeats the key 'qid' of line 2"),
    "a rename to a bidi override": ('rename: [{qid: Q1, name: "Pizza \\u202eazziP"}]\n',
                                    "holds the bidirectional control U+202E"),
    "a rename to zero-width spaces": ('rename: [{qid: Q1, name: "\\u200b\\u200b"}]\n', "holds no visible character"),
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


# ------------------------------------------------------------------------ texts of the native variants
# One rule (cultureboard.text.text_problem) decides which texts may enter the dataset: English prompts and names,
# the translation file's entries, the LLM stage's translations and answers, the response cache.

NATIVE = ["--countries", "NG", "--concepts", "cuisine", "--prompt-sets", "cube-awareness-native"]
EGUSI = "A high resolution image of egusi soup from Nigerian cuisine."
EFO = "A high resolution image of efo riro from Nigerian cuisine."
STREET = "A high resolution image of street food in Nigeria from Nigerian cuisine."


def yaml_quoted(text: str) -> str:
    """``text`` as a YAML double-quoted scalar: every character that is not printable written as an escape (a
    YAML stream may not hold them raw), so the file holds exactly ``text``."""
    def one(c: str) -> str:
        if c in '"\\':
            return "\\" + c
        if c.isprintable() and not "\ud800" <= c <= "\udfff":
            return c
        return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}"
    return '"' + "".join(map(one, text)) + '"'


def translation_file(folder: Path, entries: list[dict]) -> Path:
    path = folder / "translations.yaml"
    lines = ["translations:"]
    for entry in entries:
        lines += [f"  - {key}: {yaml_quoted(value) if isinstance(value, str) else str(value).lower()}"
                  if k == 0 else f"    {key}: {yaml_quoted(value) if isinstance(value, str) else str(value).lower()}"
                  for k, (key, value) in enumerate(entry.items())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


YORUBA = "Àwòrán ọbẹ̀ ẹ̀gúsí láti inú oúnjẹ Nàìjíríà."
#: name -> (the field of a translation entry, its hostile value, words of the one error line)
TRANSLATION_TEXTS = {
    "a lone surrogate": ("text", "\ud800 ẹ̀gúsí", "holds U+D800, which UTF-8 cannot store"),
    "a NUL byte": ("text", "ọbẹ̀\x00 ẹ̀gúsí", "holds the control character U+0000"),
    "an escape (ESC)": ("text", "ọbẹ̀ \x1b[31mẹ̀gúsí", "holds the control character U+001B"),
    "a C1 control": ("text", "ọbẹ̀ \x9b ẹ̀gúsí", "holds the control character U+009B"),
    "a bidi override": ("text", "ọbẹ̀ \u202eísúgẹ̀ẹ", "holds the bidirectional control U+202E"),
    "a bidi isolate": ("text", "ọbẹ̀ \u2067ẹ̀gúsí\u2069", "holds the bidirectional control U+2067"),
    "a line break": ("text", "ọbẹ̀\nẹ̀gúsí", "holds the control character U+000A"),
    "a paragraph separator": ("text", "ọbẹ̀\u2029ẹ̀gúsí", "holds the line break U+2029"),
    "only zero-width characters": ("text", "\u200b\u200c\u200d", "holds no visible character"),
    "tag characters": ("text", "ọbẹ̀ ẹ̀gúsí\U000e0041\U000e0042", "holds the invisible format character U+E0041"),
    "an unassigned code point": ("text", "ọbẹ̀ \u0378", "holds the unassigned code point U+0378"),
    "a private-use code point": ("text", "ọbẹ̀ \ue000", "holds the private-use code point U+E000"),
    "stacked combining marks": ("text", "ọbẹ̀ e" + "\u0301\u0300\u0304\u0306\u030c\u0308" * 3,
                                "stacks more than 4 combining marks"),
    "a million characters": ("text", "ọbẹ̀ " * 200_000, "characters long; the limit for a prompt is 2,000"),
    "a bidi override in the back-translation": ("back", EGUSI + "\u202e", "holds the bidirectional control U+202E"),
    "a NUL in the note": ("note", "checked by\x00 nobody", "holds the control character U+0000"),
    "a bidi override in the English": ("en", "\u202e" + EGUSI, "holds the bidirectional control U+202E"),
}


@pytest.mark.parametrize("name", list(TRANSLATION_TEXTS))
def test_a_hostile_translation_text_is_refused_naming_its_entry(tmp_path, capsys, name):
    """The translation file's texts pass the rule the English prompts pass, before any work."""
    field, value, words = TRANSLATION_TEXTS[name]
    path = translation_file(tmp_path, [{"language": "yo", "en": EGUSI, "text": YORUBA, "back": EGUSI, field: value}])
    out = tmp_path / "out"
    line = assert_rejected(*run_cli(["build", "--out", str(out), *NATIVE, "--translations", str(path)], capsys),
                           f"{path} (translations entry 1, {field})", 1)
    assert words in line and len(line) < 1000 and not out.exists()


#: name -> (the raw translation file, words of the one error line)
TRANSLATION_FILES = {
    "a repeated key": (f"translations:\n  - language: yo\n    en: {yaml_quoted(EGUSI)}\n    text: {yaml_quoted(YORUBA)}\n"
                       f"    text: {yaml_quoted(EGUSI)}\n    back: {yaml_quoted(EGUSI)}\n",
                       "translations.yaml:5: repeats the key 'text' of line 4"),
    "same_as_english that is not a boolean": (
        f"translations:\n  - {{language: yo, en: {yaml_quoted(EGUSI)}, text: {yaml_quoted(EGUSI)}, back: {yaml_quoted(EGUSI)},"
        " same_as_english: 'yes please'}\n", "same_as_english is 'yes please', not true or false"),
}


@pytest.mark.parametrize("name", list(TRANSLATION_FILES))
def test_a_malformed_translation_file_is_refused(tmp_path, capsys, name):
    text, words = TRANSLATION_FILES[name]
    path = tmp_path / "translations.yaml"
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    line = assert_rejected(*run_cli(["build", "--out", str(out), *NATIVE, "--translations", str(path)], capsys),
                           str(path), 1)
    assert words in line and not out.exists()


#: Texts of five scripts a translation must be able to hold (marks stacked as the scripts stack them): each is kept.
REAL_SCRIPTS = {
    "Devanagari": "क्षत्रिय न्यूज़ीलैंड की एक तस्वीर",
    "Thai": "น้ำพริกจากอาหารไนจีเรีย",
    "Arabic with its vowel marks": "صُورَةٌ مُحَمَّدِيَّةٌ لِحَسَاءِ الإِيغُوسِي",
    "Hebrew with points": "בְּרֵאשִׁית תְּמוּנָה שֶׁל מָרָק",
    "Yoruba with tone marks": YORUBA,
}
#: The other entries of the same file, each accepted by design: (entry, what the build does with it).
FILE_ENTRIES = {
    "a translation that is its English prompt": (
        {"language": "ig", "en": EFO, "text": EFO.upper().replace(".", " !"), "back": EFO}, "flagged"),
    "the same, said to be meant (same_as_english)": (
        {"language": "ha", "en": STREET, "text": STREET, "back": STREET, "same_as_english": True}, "kept"),
    "an entry matching no prompt": ({"language": "yo", "en": "A high resolution image of nothing at all.",
                                     "text": YORUBA, "back": "A high resolution image of nothing at all."}, "unmatched"),
}


def test_real_scripts_pass_and_odd_entries_are_flagged_or_named(tmp_path, capsys):
    """One build with a translation file holding a text of each of REAL_SCRIPTS (kept, as they are) and each of
    FILE_ENTRIES: an echo of the English is flagged, unless said to be meant; an entry that matches no prompt is
    listed in build.json and named in one warning line."""
    pairs = [("ha", EGUSI), ("yo", EGUSI), ("ig", EGUSI), ("ha", EFO), ("yo", EFO)]
    entries = [{"language": language, "en": en, "text": text, "back": en}
               for (language, en), text in zip(pairs, REAL_SCRIPTS.values())]
    path = translation_file(tmp_path, entries + [entry for entry, _ in FILE_ENTRIES.values()])
    out = tmp_path / "out"
    code, stdout, err = run_cli(["build", "--out", str(out), *NATIVE, "--translations", str(path)], capsys)
    assert code == 0 and "Traceback" not in err, err
    [warning] = err.strip().splitlines()
    assert warning.startswith("warning: translations.yaml: 1 of its entries in this build's languages match no "
                              "English prompt") and "entry 8: yo 'A high resolution image of nothing" in warning
    rows = pq.read_table(out / "data" / "cube-awareness-native" / "test-00000-of-00001.parquet").to_pylist()
    kept = {(r["language"], r["text"]) for r in rows}
    assert all((language, text) in kept for (language, _), text in zip(pairs, REAL_SCRIPTS.values()))
    assert ("ha", STREET) in kept and ("ig", FILE_ENTRIES["a translation that is its English prompt"][0]["text"]) not in kept
    report = json.loads((out / "build.json").read_text(encoding="utf-8"))["translations"]
    [echo] = [f for f in report["flagged"] if f["language"] == "ig" and f["prompt_id"].startswith(
        "cube-awareness/") and f["text"].startswith("A HIGH")]
    assert echo["reason"].startswith("the translation is the English prompt itself") and echo["score"] is None
    assert report["unmatched"] == [{"entry": 8, "language": "yo", "en": "A high resolution image of nothing at all."}]


class _Translator(http.server.BaseHTTPRequestHandler):
    """An OpenAI-protocol LLM: 'Yes.' to the filter questions; a translation request gets, by its artifact and
    language, one of LLM_ANSWERS (as the raw body or as the answer's content), else a tagged translation; a
    back-translation request gets the English prompt back (the tag removed)."""

    def do_POST(self):  # noqa: N802 (http.server's name)
        content = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["messages"][-1]["content"]
        text = content.split("\n\n", 1)[-1]
        body = None
        if "into English" in content:
            answer = text.split("] ", 1)[-1]
        elif content.startswith("Translate this"):
            language = content.split("BCP 47 tag '")[1].split("'")[0]
            answer, body = next(((a, b) for (dish, lang), (a, b, _) in LLM_ANSWERS.items()
                                 if dish in text and lang == language), (f"[{language}] {text}", None))
            answer = text if answer == "ECHO" else answer
        else:  # the refinement stage's questions
            answer = ScriptedLLMServer.answer(content)
        data = body or json.dumps({"choices": [{"message": {"role": "assistant", "content": answer}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


#: (dish, language) -> (the translation's content, or a raw body instead, the decision it gets): each accepted by
#: design (the build ends 0, the translation is flagged with its reason or absent, never used)
LLM_ANSWERS = {
    ("egusi soup", "ha"): ("ECHO", None, "flagged: the translation is the English prompt itself"),
    ("egusi soup", "yo"): ("\u202eÀwòrán ọbẹ̀ ẹ̀gúsí", None, "flagged: the translation holds the bidirectional control"),
    ("egusi soup", "ig"): ("\ud800 ofe egusi", None, "absent: bad_response"),
    ("efo riro", "ha"): ("efo\x00 riro", None, "absent: bad_response"),
    ("efo riro", "yo"): ("", b'{"choices": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "absent: bad_response"),
}


def test_the_llm_stage_flags_echoes_and_texts_the_dataset_may_not_hold(tmp_path, capsys, monkeypatch):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Translator)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("CULTUREBOARD_LLM_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/v1")
    monkeypatch.setenv("CULTUREBOARD_LLM_API_KEY", "sk-test")
    out = tmp_path / "out"
    try:
        code, _, err = run_cli(["build", "--out", str(out), *NATIVE, "--translations", "none", "--llm",
                                "openai:translator"], capsys)
    finally:
        server.shutdown()
        server.server_close()
    assert code == 0 and "Traceback" not in err, err
    decisions = [d for d in pq.read_table(out / "data" / "llm-decisions").to_pylist() if d["stage"] == "translation"]
    qids = {r["name"]: r["qid"] for r in pq.read_table(out / "data" / "artifacts-curated").to_pylist()}
    for (dish, language), (_, _, expected) in LLM_ANSWERS.items():
        [d] = [d for d in decisions if (d["artifact_id"], d["name"]) == (f"cube-awareness/{qids[dish].lower()}/ng",
                                                                         language)]
        decision, _, reason = expected.partition(": ")
        assert d["decision"] == decision and d["reason"].startswith(reason), (dish, language, d)
    native = pq.read_table(out / "data" / "cube-awareness-native").to_pylist()
    assert native and all(r["text"].startswith("[") for r in native if r["language"] != "en")  # only the good ones


#: name -> (a line of the --llm-cache file, the words of the one error line)
LLM_CACHES = {
    "a record nested 100,000 deep": ('{"key": ' + "[" * 100_000 + "]" * 100_000 + "}",
                                     "nested deeper than the JSON parser goes"),
    "a response with a lone surrogate": (json.dumps({"key": "k", "response": "\ud800", "error": None}),
                                         "its response holds U+D800"),
}


@pytest.mark.parametrize("name", list(LLM_CACHES))
def test_a_hostile_llm_cache_is_one_line_naming_its_line(tmp_path, capsys, monkeypatch, name):
    line, words = LLM_CACHES[name]
    cache = tmp_path / "cache.jsonl"
    cache.write_text(json.dumps({"key": "a", "response": "Yes.", "error": None}) + "\n" + line + "\n")
    monkeypatch.setenv("CULTUREBOARD_LLM_BASE_URL", "http://127.0.0.1:9/v1")  # never asked: the cache fails first
    monkeypatch.setenv("CULTUREBOARD_LLM_API_KEY", "sk-test")
    args = ["build", "--out", str(tmp_path / "out"), "--countries", "IT", "--concepts", "cuisine", "--prompt-sets",
            "cube-awareness", "--llm", "openai:x", "--llm-cache", str(cache)]
    error = assert_rejected(*run_cli(args, capsys), "cache.jsonl:2", 1)
    assert words in error and not (tmp_path / "out").exists()


def named(label: str) -> str:
    """A dump line: a dish of Italy named ``label``."""
    return json.dumps({"id": "Q9001", "labels": {"en": {"language": "en", "value": label}},
                       "claims": {"P31": [statement(item(DISH))], "P495": [statement(item("Q38"), "P495")]}})


#: name -> a dump line of a candidate artifact whose English name the dataset may not hold: left out of the
#: artifacts and listed in report.json (accepted by design: the rest is extracted)
REFUSED_NAMES = {
    "a bidi override": named("Pizza \u202eazziP"),
    "a NUL byte": named("Pizza\u0000"),
    "only zero-width spaces": named("\u200b\u200b"),
}


@pytest.mark.parametrize("name", list(REFUSED_NAMES))
def test_an_artifact_whose_name_the_dataset_may_not_hold_is_left_out_and_listed(tmp_path, capsys, concepts_file,
                                                                                 name):
    dump = write_hostile_dump(tmp_path / "dump.json", REFUSED_NAMES[name], filler=0)
    code, out, err = run_cli(artifacts_args(dump, tmp_path / "out", concepts_file), capsys)
    assert code == 0 and "Traceback" not in out + err
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    [refused] = report["names_refused"]
    assert refused["qid"] == "Q9001" and refused["problem"].startswith("its name holds")
    assert "Q9001" not in set(pq.read_table(tmp_path / "out" / "artifacts.parquet").column("qid").to_pylist())


# ------------------------------------------------------------------------------------------ the count


def test_the_recorded_counts_match_the_corpus():
    """The counts in this module's docstring (which the README quotes) are those of the cases above."""
    accepted = (len(DUMP_LINES) + 1  # + the gigantic line
                + len(REAL_SCRIPTS) + len(FILE_ENTRIES) + len(LLM_ANSWERS) + len(REFUSED_NAMES))
    rejected = (1 + len(SPARQL_ANSWERS) + len(ARTIFACTS_OPTIONS) + len(BUILD_OPTIONS) + len(BUILD_CONFIGS)
                + len(CUBE_1K) + len(CURE_CSV) + len(CURATION) + len(TRANSLATION_TEXTS) + len(TRANSLATION_FILES)
                + len(LLM_CACHES))
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
