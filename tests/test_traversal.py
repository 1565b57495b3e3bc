"""CUBE Algorithm 1 on small hand-made dumps: hop limit, emit-and-stop, cycles, deprecated ranks,
several countries, malformed lines and compressed inputs; and the dump reader: decompressing child
process and its fallback thread, batched decoding, the label spill."""

from __future__ import annotations

import bz2
import dataclasses
import gzip
import json
import subprocess
import threading

import pytest

from cultureboard.builder import kb_dump
from cultureboard.builder.eras import era_of_year
from cultureboard.builder.kb_dump import DumpKnowledgeBase
from cultureboard.builder.traversal import Concept, Root, extract_artifacts
from cultureboard.countries import load_countries
from cultureboard.errors import CultureboardError
from wikidata_factory import entity, write_dump

IT, JP, FR = "Q38", "Q17", "Q142"
DISH = "Q746549"
CUISINE = Concept("cuisine", (Root(DISH, "dish"),))


def graph() -> list[dict]:
    chain = [entity(f"Q90{i}", f"class {i}", claims={"P279": [DISH if i == 1 else f"Q90{i - 1}"]}) for i in range(1, 5)]
    return [
        entity(DISH, "dish"),
        entity(IT, "Italy"), entity(JP, "Japan"), entity(FR, "France"),
        entity("Q7802", "bread", claims={"P279": [DISH]}),  # hop 1, no country: traversed
        entity("Q5449200", "Filone", claims={"P279": ["Q7802"], "P495": [IT]}, sitelinks=3,
               description="Italian bread", aliases=("filone bread",), image="Filone.jpg", inception="+1900-00-00T00:00:00Z",
               commons_category="Filone (bread)"),
        entity("Q100", "Sushi", claims={"P31": [DISH], "P495": [JP]}, sitelinks=40),  # hop 1, emitted
        entity("Q101", "Sushi child", claims={"P279": ["Q100"], "P495": [IT]}),  # below an artifact: never reached
        *chain,  # Q901..Q904: hops 1..4, no country
        entity("Q905", "Hop four dish", claims={"P279": ["Q903"], "P495": [IT]}),  # hop 4
        entity("Q906", "Hop five dish", claims={"P279": ["Q904"], "P495": [IT]}),  # hop 5
        entity("Q300", "cycle a", claims={"P279": [DISH, "Q301"]}),
        entity("Q301", "cycle b", claims={"P279": ["Q300"]}),
        entity("Q302", "Cycle dish", claims={"P279": ["Q301"], "P495": [IT]}),  # hop 3 through a cycle
        entity("Q400", "Deprecated edge dish", claims={"P31": [(DISH, "deprecated")], "P495": [IT]}),
        entity("Q401", "Deprecated country dish", claims={"P31": [DISH], "P495": [IT, (JP, "deprecated")]}),
        entity("Q500", "Two country dish", claims={"P31": [DISH], "P495": [IT], "P17": [JP]}),
        entity("Q600", "French dish", claims={"P31": [DISH], "P495": [FR]}),
        entity("Q601", "Under French dish", claims={"P279": ["Q600"], "P495": [IT]}),
    ]


def run(path, hops=4, countries=("IT", "JP")):
    wanted = load_countries().resolve(list(countries))
    kb = DumpKnowledgeBase(path, [c.qid for c in wanted])
    rows, report = extract_artifacts(kb, [CUISINE], wanted, hops)
    return {(r["qid"], r["country"]): r for r in rows}, report, kb


@pytest.fixture
def dump(tmp_path):
    return write_dump(tmp_path / "dump.json", graph())


def test_algorithm_1_rules(dump):
    rows, report, _ = run(dump)
    assert set(rows) == {
        ("Q5449200", "IT"), ("Q100", "JP"), ("Q905", "IT"), ("Q302", "IT"), ("Q401", "IT"), ("Q500", "IT"), ("Q500", "JP"),
    }
    assert rows[("Q100", "JP")]["hop"] == 1 and rows[("Q5449200", "IT")]["hop"] == 2
    assert rows[("Q905", "IT")]["hop"] == 4 and rows[("Q302", "IT")]["hop"] == 3
    assert report.outside_countries["cuisine"] == 1  # Q600 (France) is an artifact, not emitted, not traversed


def test_filone_record(dump):
    rows, _, _ = run(dump)
    r = rows[("Q5449200", "IT")]
    assert (r["name"], r["root"], r["parent"], r["parent_name"], r["found_via"]) == ("Filone", DISH, "Q7802", "bread", "P279")
    assert (r["country_property"], r["popularity"], r["image"], r["inception_year"]) == ("P495", 3, "Filone.jpg", 1900)
    assert r["era"] == "modern" and r["aliases"] == ["filone bread"] and r["description"] == "Italian bread"
    assert r["commons_category"] == "Filone (bread)" and rows[("Q100", "JP")]["commons_category"] is None
    assert r["P279"] == ["Q7802"] and r["P495"] == [IT] and r["P17"] == []


def test_several_countries_each_listed_with_its_property(dump):
    rows, _, _ = run(dump)
    assert rows[("Q500", "IT")]["country_property"] == "P495"
    assert rows[("Q500", "JP")]["country_property"] == "P17"


def test_deprecated_country_ignored(dump):
    rows, _, _ = run(dump)
    assert ("Q401", "JP") not in rows and rows[("Q401", "IT")]["P495"] == [IT]


def test_hop_limit(dump):
    rows, _, _ = run(dump, hops=5)
    assert rows[("Q906", "IT")]["hop"] == 5
    rows, _, _ = run(dump, hops=1)
    assert {q for q, _ in rows} == {"Q100", "Q401", "Q500"}


class PopenSpy(subprocess.Popen):
    """subprocess.Popen that remembers the processes it started."""

    started: list[subprocess.Popen] = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        PopenSpy.started.append(self)


@pytest.fixture
def children(monkeypatch):
    """The processes the dump reader starts during a test."""
    PopenSpy.started = []
    monkeypatch.setattr(subprocess, "Popen", PopenSpy)
    return PopenSpy.started


@pytest.fixture(params=["child", "thread"])
def reader(request, monkeypatch):
    """Read compressed dumps through the decompressing child process, or through the fallback thread."""
    if request.param == "thread":
        monkeypatch.setattr(kb_dump, "_decompress_command", lambda path: None)
    return request.param


def test_compressed_dumps_give_the_same_rows(tmp_path, dump, reader, children):
    expected, expected_report, plain = run(dump)
    for suffix in (".json.gz", ".json.bz2"):
        rows, report, kb = run(write_dump(tmp_path / f"d{suffix}", graph()))
        assert rows == expected and report == expected_report
        assert dataclasses.replace(kb.report, path="") == dataclasses.replace(plain.report, path="")
    assert len(children) == (2 if reader == "child" else 0)
    assert all(proc.returncode == 0 for proc in children)


@pytest.mark.parametrize("suffix, compress", [(".json.gz", gzip.compress), (".json.bz2", bz2.compress)])
def test_corrupt_compressed_dumps_raise_a_clear_error(tmp_path, dump, reader, children, suffix, compress):
    data = compress(dump.read_bytes())
    truncated = tmp_path / f"truncated{suffix}"
    truncated.write_bytes(data[: len(data) // 2])
    garbage = tmp_path / f"garbage{suffix}"
    garbage.write_bytes(b"this is not compressed at all\n" * 100)
    not_compressed = "BadGzipFile: Not a gzipped file" if suffix == ".json.gz" else "OSError: Invalid data stream"
    for path, detail in ((truncated, "EOFError: Compressed file ended before the end-of-stream marker was reached"),
                         (garbage, not_compressed)):
        with pytest.raises(CultureboardError) as info:
            run(path)
        message = str(info.value)
        assert message.startswith(f"{path}: cannot be read as a Wikidata JSON dump (") and detail in message
        assert "(fix: check the download is complete" in message and "\n" not in message
    assert len(children) == (2 if reader == "child" else 0)
    assert all(proc.returncode not in (None, 0) for proc in children)  # each failed, and was reaped


def big_gz_dump(tmp_path):
    """A .gz dump whose text (several MiB) outgrows the pipe, so its child is still writing when reading stops."""
    filler = [entity(f"Q{7000 + i}", f"filler {i}", description="x" * 4000, claims={"P31": [DISH]}) for i in range(1500)]
    return write_dump(tmp_path / "big.json.gz", graph() + filler)


def test_child_is_killed_and_reaped_when_reading_stops_early(tmp_path, children, monkeypatch):
    path = big_gz_dump(tmp_path)
    blocks = kb_dump.dump_blocks(path)
    next(blocks)
    (proc,) = children
    assert proc.poll() is None  # still decompressing, blocked on the full pipe
    blocks.close()
    assert proc.returncode is not None and proc.stdout.closed

    def boom(*args):
        raise RuntimeError("stop")

    monkeypatch.setattr(kb_dump._LabelSpill, "add", boom)  # an error in the middle of the index pass
    with pytest.raises(RuntimeError, match="stop"):
        DumpKnowledgeBase(path, [IT])
    assert len(children) == 2 and children[1].returncode is not None


def test_fallback_thread_ends_when_reading_stops_early(tmp_path, monkeypatch):
    monkeypatch.setattr(kb_dump, "_decompress_command", lambda path: None)
    monkeypatch.setattr(kb_dump, "_READ", 1 << 12)  # many small reads, so the queue fills up
    before = threading.active_count()
    blocks = kb_dump.dump_blocks(big_gz_dump(tmp_path))
    next(blocks)
    blocks.close()
    assert threading.active_count() == before


def test_parent_labels_come_from_the_spill_without_a_second_pass(tmp_path, monkeypatch):
    series = entity("Q800", "dish series", claims={"P31": [DISH]})  # P31 only: its label is not a class label
    member = entity("Q801", "Series dish", claims={"P31": ["Q800"], "P495": [IT]})
    path = write_dump(tmp_path / "d.json.gz", graph() + [series, member])
    reads = []
    blocks = kb_dump.dump_blocks
    monkeypatch.setattr(kb_dump, "dump_blocks", lambda p: reads.append(p) or blocks(p))
    monkeypatch.setattr(kb_dump._LabelSpill, "_BATCH", 2)  # many small batches on disk
    rows, _, kb = run(path)
    assert rows[("Q801", "IT")]["parent"] == "Q800" and rows[("Q801", "IT")]["parent_name"] == "dish series"
    assert rows[("Q5449200", "IT")]["parent_name"] == "bread"  # a class label, kept in memory
    assert kb.labels({"Q800", "Q100", "Q7802"}) == {"Q800": "dish series", "Q100": "Sushi", "Q7802": "bread"}
    assert len(reads) == 1
    with_root = DumpKnowledgeBase(path, [IT], label_qids=[DISH])  # roots are labelled even without an edge
    assert with_root.labels({DISH, "Q800"}) == {DISH: "dish", "Q800": "dish series"}


def test_malformed_lines_inside_a_batch_keep_their_line_numbers(tmp_path, monkeypatch):
    good = [json.dumps(e) for e in graph() + [entity(f"Q{7000 + i}", f"filler {i}") for i in range(600)]]
    lines = ["["]
    bad_at = []
    for i, text in enumerate(good):
        if i in (5, 6, 150, 151, 290):  # broken JSON, no id, a non-numeric QID, a blank line, two entities on a line
            bad = {5: "{not json", 6: '{"type":"item"}', 150: '{"id":"Qx"}', 151: "", 290: text + "," + text}[i]
            lines.append(bad + ",")
            if bad:
                bad_at.append(len(lines))
        lines.append(text + ("," if i < len(good) - 1 else ""))
    lines.append("]")
    path = tmp_path / "d.json"
    path.write_text("\n".join(lines) + "\n")
    expected_rows = run(write_dump(tmp_path / "clean.json", graph()))[0]
    for read in (1 << 8, 1 << 12, kb_dump._READ):  # lines longer than a read, a few lines a block, one block
        monkeypatch.setattr(kb_dump, "_READ", read)
        rows, _, kb = run(path)
        assert kb.report.malformed_examples == bad_at and kb.report.malformed == 4
        assert kb.report.lines == len(lines) - 1 and kb.report.entities == len(good)
        assert rows == expected_rows


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_lines_over_the_limit_are_dropped_while_read_and_counted(tmp_path, monkeypatch, suffix):
    limit = 1 << 16
    monkeypatch.setattr(kb_dump, "_READ", 1 << 12)  # the limit spans many reads
    monkeypatch.setattr(kb_dump, "MAX_LINE_BYTES", limit)
    padded = entity("Q7999", "padded")
    padded["descriptions"] = {"de": {"language": "de", "value": ""}}
    padded["descriptions"]["de"]["value"] = "x" * (limit - 1 - len(json.dumps(padded)))
    assert len(json.dumps(padded) + ",") == limit  # exactly at the limit (its comma included): read
    over = json.dumps(entity("Q7998", "over", description="y" * (3 * limit)))  # valid JSON, over the limit
    lines = [json.dumps(e) for e in graph()]
    body = ["[", *lines[:3], json.dumps(padded), over, *lines[3:], over[:-1]]  # ... and a last line without "]"
    text = ",\n".join(body[1:-1])
    data = ("[\n" + text + ",\n" + body[-1]).encode()
    path = tmp_path / f"d{suffix}"
    path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
    kb = DumpKnowledgeBase(path, [IT, JP], max_malformed=0.1)
    assert kb.report.over_limit == 2 and kb.report.malformed == 2
    assert kb.report.malformed_examples == [6, len(body)]  # [ is line 1: the over-long lines keep their numbers
    assert kb.report.entities == len(lines) + 1  # padded was read
    rows, _ = extract_artifacts(kb, [CUISINE], load_countries().resolve(["IT", "JP"]), 4)
    assert {(r["qid"], r["country"]) for r in rows} == set(run(write_dump(tmp_path / "clean.json", graph()))[0])
    with pytest.raises(CultureboardError, match=rf"2 of {len(body)} lines .* 2 longer than the 0.0625 MiB line limit"):
        DumpKnowledgeBase(path, [IT, JP])
    blocks = list(kb_dump.dump_blocks(path))
    assert kb_dump.OVER_LIMIT in b"".join(blocks) and max(map(len, blocks)) < 2 * limit


def test_malformed_lines_counted_and_threshold(tmp_path):
    bad = ("{not json", '{"type":"item"}')  # broken JSON; an entity without an id
    entities = graph() * 1 + [entity(f"Q{7000 + i}", f"filler {i}") for i in range(200)]
    path = write_dump(tmp_path / "d.json", entities, extra_lines=bad)
    rows, _, kb = run(path)
    assert kb.report.malformed == 2 and len(kb.report.malformed_examples) == 2
    assert ("Q5449200", "IT") in rows
    few = write_dump(tmp_path / "few.json", graph()[:3], extra_lines=bad)
    with pytest.raises(CultureboardError, match="not valid entities"):
        run(few)


def test_corrupt_and_missing_dumps(tmp_path, dump):
    data = gzip.compress(dump.read_bytes())
    truncated = tmp_path / "t.json.gz"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(CultureboardError, match="cannot be read as a Wikidata JSON dump"):
        run(truncated)
    with pytest.raises(CultureboardError, match="no such dump file"):
        run(tmp_path / "missing.json")
    empty = tmp_path / "empty.json"
    empty.write_text("[\n]\n")
    with pytest.raises(CultureboardError, match="holds no Wikidata entity"):
        run(empty)


def test_a_block_is_decoded_at_once_only_when_it_holds_one_entity_per_line():
    one, two = json.dumps(entity("Q1", "one")), json.dumps(entity("Q2", "two"))
    block = f"[\n{one},\n{two}\n]\n".encode()
    skipped, entities = kb_dump._decode_block(block, block.count(b"\n"))
    assert skipped == 1 and [e.id for e in entities] == ["Q1", "Q2"]
    for odd in (f"{one},\n\n{two},\n", f"{one},{two},\n{one},\n", f"{one},\n{{not json\n"):  # blank, two on a line, broken
        assert kb_dump._decode_block(odd.encode(), odd.count("\n")) is None


def test_era_buckets():
    assert [era_of_year(y) for y in (None, -500, 499, 500, 1499, 1500, 1799, 1800, 1945, 1946, 2020)] == [
        None, "ancient", "ancient", "medieval", "medieval", "early modern", "early modern", "modern", "modern",
        "contemporary", "contemporary",
    ]
