"""A knowledge base read from a Wikidata JSON dump (plain, .gz or .bz2), streamed with bounded memory.

One pass over the dump keeps only what the traversal needs:

* the edge index: every non-deprecated P31/P279 edge, as integer arrays sorted by parent;
* the country claims (P495/P17) of entities that have edges;
* the details of candidate artifacts (entities with edges and a requested country), spilled to a
  temporary file with only their offsets in memory;
* English labels of classes (entities with a P279 claim) and P580 start years of time periods.

Memory grows with the edge index, not with the dump's text. Decompression runs in a reader thread
(zlib and bz2 release the GIL), so parsing overlaps with it on a second core. Each line is decoded
with a msgspec schema that names only the fields used, so the rest of an entity (other languages,
other properties, references) is skipped without building Python objects.
"""

from __future__ import annotations

import bz2
import gzip
import os
import queue
import tempfile
import threading
import zlib
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import msgspec
import numpy as np

from cultureboard.errors import CultureboardError

from .kb import COUNTRY_PROPERTIES, EDGE_PROPERTIES, Details, Edge, qid_number, year_of

# ---------------------------------------------------------------- the parts of an entity we read


class _Text(msgspec.Struct, frozen=True):
    value: str


class _Lang(msgspec.Struct, frozen=True):
    en: _Text | None = None


class _Aliases(msgspec.Struct, frozen=True):
    en: list[_Text] = []


class _Value(msgspec.Struct, frozen=True):
    value: Any


class _Snak(msgspec.Struct, frozen=True):
    snaktype: str = "value"
    datavalue: _Value | None = None


class _Statement(msgspec.Struct, frozen=True):
    mainsnak: _Snak
    rank: str = "normal"


class _Claims(msgspec.Struct, frozen=True):
    P31: list[_Statement] = []
    P279: list[_Statement] = []
    P495: list[_Statement] = []
    P17: list[_Statement] = []
    P2012: list[_Statement] = []
    P361: list[_Statement] = []
    P18: list[_Statement] = []
    P571: list[_Statement] = []
    P2348: list[_Statement] = []
    P580: list[_Statement] = []


class _Entity(msgspec.Struct):
    id: str
    labels: _Lang = _Lang()
    descriptions: _Lang = _Lang()
    aliases: _Aliases = _Aliases()
    claims: _Claims = _Claims()
    sitelinks: dict[str, msgspec.Raw] = {}


class _Stored(msgspec.Struct, array_like=True):
    """A candidate artifact's details as spilled to disk."""

    name: str | None
    description: str | None
    aliases: list[str]
    sitelinks: int
    image: str | None
    inception_year: int | None
    time_period: list[str]
    claims: dict[str, list[str]]


_decode_entity = msgspec.json.Decoder(_Entity).decode
_encode = msgspec.msgpack.Encoder().encode
_decode_stored = msgspec.msgpack.Decoder(_Stored).decode


def _values(statements: list[_Statement]) -> list[Any]:
    """Values of the statements that count: not deprecated, and with a value (not some/novalue)."""
    return [
        s.mainsnak.datavalue.value
        for s in statements
        if s.rank != "deprecated" and s.mainsnak.snaktype == "value" and s.mainsnak.datavalue is not None
    ]


def _item_ids(statements: list[_Statement]) -> list[str]:
    if not statements:  # the common case: most entities lack most properties
        return []
    out = set()
    for s in statements:
        snak = s.mainsnak
        if s.rank != "deprecated" and snak.snaktype == "value" and snak.datavalue is not None:
            v = snak.datavalue.value
            if isinstance(v, dict):
                q = v.get("id")
                if isinstance(q, str) and q.startswith("Q"):
                    out.add(q)
    return sorted(out, key=qid_number)


def _best_string(statements: list[_Statement]) -> str | None:
    """The preferred-rank value if there is one, else the smallest normal one (deterministic)."""
    live = [s for s in statements if s.rank != "deprecated" and s.mainsnak.datavalue is not None]
    preferred = [s.mainsnak.datavalue.value for s in live if s.rank == "preferred"]
    pool = preferred or [s.mainsnak.datavalue.value for s in live]
    pool = [v for v in pool if isinstance(v, str)]
    return min(pool) if pool else None


def _earliest_year(statements: list[_Statement]) -> int | None:
    years = [year_of(v["time"]) for v in _values(statements) if isinstance(v, dict) and "time" in v]
    years = [y for y in years if y is not None]
    return min(years) if years else None


# ---------------------------------------------------------------------------- reading the dump


def open_dump(path: Path):
    """Open a dump for binary reading, by its suffix: ``.gz``, ``.bz2`` or plain."""
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    if path.suffix == ".bz2":
        return bz2.open(path, "rb")
    return open(path, "rb")


_CHUNK = 4 << 20


def _chunks(path: Path) -> Iterator[bytes]:
    """Decompressed chunks of the dump, read ahead by a background thread."""
    q: queue.Queue = queue.Queue(maxsize=4)

    def reader():
        try:
            with open_dump(path) as fh:
                while chunk := fh.read(_CHUNK):
                    q.put(chunk)
            q.put(None)
        except BaseException as exc:  # handed to the consumer, which reports it
            q.put(exc)

    threading.Thread(target=reader, daemon=True).start()
    while True:
        item = q.get()
        if item is None:
            return
        if isinstance(item, BaseException):
            raise item
        yield item


def dump_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, entity JSON) for each entity line: the array brackets and trailing commas removed."""
    rest = b""
    lineno = 0
    try:
        for chunk in _chunks(path):
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            for line in lines:
                lineno += 1
                line = line.strip()
                if line.endswith(b","):
                    line = line[:-1]
                if line and line not in (b"[", b"]"):
                    yield lineno, line
    except (OSError, EOFError, zlib.error) as exc:
        raise CultureboardError(
            path, f"cannot be read as a Wikidata JSON dump ({exc.__class__.__name__}: {exc})",
            "check the download is complete (compare its checksum) and that .gz/.bz2 files are not truncated",
        ) from None
    line = rest.strip().rstrip(b",")
    if line and line not in (b"[", b"]"):
        yield lineno + 1, line


def _head_has_id(head: bytes, ids: set[bytes]) -> bool:
    """Whether ``"id":"X"`` occurs in ``head`` for some X in ``ids``: one set lookup per ``"id":"`` found,
    rather than one substring search per wanted id (ids hold no quote, so the token ends at the next one)."""
    i = head.find(b'"id":"')
    while i >= 0:
        j = head.find(b'"', i + 6)
        if j < 0:
            return False
        if head[i + 6:j] in ids:
            return True
        i = head.find(b'"id":"', i + 1)
    return False


# ---------------------------------------------------------------------------- the knowledge base


@dataclass
class DumpReport:
    path: str
    lines: int = 0
    entities: int = 0
    malformed: int = 0
    malformed_examples: list[int] = field(default_factory=list)  # line numbers
    edges: int = 0
    candidates: int = 0


class DumpKnowledgeBase:
    """Index a dump once; answer the traversal's questions from the index.

    ``country_qids`` limits which entities' details are kept (the requested countries); the labels of
    ``label_qids`` (the concept roots) are kept whatever they are, so checking them needs no second pass.
    ``max_malformed`` is the largest fraction of unparsable lines tolerated before the build fails.
    """

    def __init__(self, path: str | os.PathLike, country_qids: Iterable[str], max_malformed: float = 0.01,
                 label_qids: Iterable[str] = ()):
        self.path = Path(path)
        if not self.path.is_file():
            raise CultureboardError(self.path, "no such dump file", "pass the path of a Wikidata JSON dump (.json, .json.gz or .json.bz2)")
        self._wanted = {qid_number(q) for q in country_qids}
        self._always_label = {qid_number(q) for q in label_qids}
        self.report = DumpReport(path=str(self.path))
        self._spill = tempfile.TemporaryFile(prefix="cultureboard-kb-")
        self._offsets: dict[int, tuple[int, int]] = {}
        self._index(max_malformed)

    # -- building the index

    def _index(self, max_malformed: float) -> None:
        rep = self.report
        child, parent, prop = array("q"), array("q"), array("b")
        c_ent, c_prop, c_country = array("q"), array("b"), array("q")
        label_ids, label_text = array("q"), []
        period_ids, period_years = array("q"), array("q")
        pos = 0
        for lineno, line in dump_lines(self.path):
            rep.lines = lineno
            try:
                e = _decode_entity(line)
                num = qid_number(e.id) if e.id[:1] == "Q" else None
            except (msgspec.DecodeError, msgspec.ValidationError, ValueError):
                rep.malformed += 1
                if len(rep.malformed_examples) < 10:
                    rep.malformed_examples.append(lineno)
                continue
            rep.entities += 1
            if num is None:
                continue  # properties and lexemes are not part of the class hierarchy
            c = e.claims
            parents31, parents279 = _item_ids(c.P31), _item_ids(c.P279)
            for p in parents31:
                child.append(num)
                parent.append(qid_number(p))
                prop.append(0)
            for p in parents279:
                child.append(num)
                parent.append(qid_number(p))
                prop.append(1)
            if e.labels.en is not None and (parents279 or num in self._always_label):
                label_ids.append(num)
                label_text.append(e.labels.en.value)
            if c.P580:
                year = _earliest_year(c.P580)
                if year is not None:
                    period_ids.append(num)
                    period_years.append(year)
            if not (parents31 or parents279) or not (c.P495 or c.P17):
                continue  # no edge, or no country statement: nothing more to record
            countries = [(0, q) for q in _item_ids(c.P495)] + [(1, q) for q in _item_ids(c.P17)]
            for code, q in countries:
                c_ent.append(num)
                c_prop.append(code)
                c_country.append(qid_number(q))
            if any(qid_number(q) in self._wanted for _, q in countries):
                blob = _encode(self._stored(e))
                self._spill.write(blob)
                self._offsets[num] = (pos, len(blob))
                pos += len(blob)
                rep.candidates += 1
        if rep.entities == 0:
            raise CultureboardError(
                self.path, "holds no Wikidata entity", "pass a Wikidata JSON dump: a JSON array with one entity per line"
            )
        if rep.malformed > max_malformed * max(rep.lines, 1):
            raise CultureboardError(
                self.path,
                f"{rep.malformed} of {rep.lines} lines are not valid entities (first at lines {rep.malformed_examples}), "
                f"above the threshold of {max_malformed:.2%}",
                "re-download the dump, or raise --max-malformed if the damage is known and acceptable",
            )
        rep.edges = len(child)
        order = np.lexsort((np.frombuffer(child, dtype=np.int64), np.frombuffer(parent, dtype=np.int64)))
        self._e_parent = np.frombuffer(parent, dtype=np.int64)[order]
        self._e_child = np.frombuffer(child, dtype=np.int64)[order]
        self._e_prop = np.frombuffer(prop, dtype=np.int8)[order]
        order = np.argsort(np.frombuffer(c_ent, dtype=np.int64), kind="stable")
        self._c_ent = np.frombuffer(c_ent, dtype=np.int64)[order]
        self._c_prop = np.frombuffer(c_prop, dtype=np.int8)[order]
        self._c_country = np.frombuffer(c_country, dtype=np.int64)[order]
        self._labels = dict(zip(label_ids, label_text))
        self._periods = dict(zip(period_ids, period_years))

    @staticmethod
    def _stored(e: _Entity) -> _Stored:
        c = e.claims
        return _Stored(
            name=e.labels.en.value if e.labels.en else None,
            description=e.descriptions.en.value if e.descriptions.en else None,
            aliases=sorted({a.value for a in e.aliases.en}),
            sitelinks=len(e.sitelinks),
            image=_best_string(c.P18),
            inception_year=_earliest_year(c.P571),
            time_period=_item_ids(c.P2348),
            claims={p: _item_ids(getattr(c, p)) for p in ("P31", "P279", "P495", "P17", "P2012", "P361")},
        )

    # -- the KnowledgeBase questions

    def children(self, parents: Iterable[str]) -> list[Edge]:
        edges = []
        for p in parents:
            n = qid_number(p)
            lo, hi = np.searchsorted(self._e_parent, [n, n + 1])
            for i in range(lo, hi):
                edges.append(Edge(f"Q{self._e_child[i]}", p, EDGE_PROPERTIES[self._e_prop[i]]))
        return sorted(set(edges))

    def countries(self, qids: Iterable[str]) -> dict[str, list[tuple[str, str]]]:
        out = {}
        for q in qids:
            n = qid_number(q)
            lo, hi = np.searchsorted(self._c_ent, [n, n + 1])
            if hi > lo:
                out[q] = sorted({(COUNTRY_PROPERTIES[self._c_prop[i]], f"Q{self._c_country[i]}") for i in range(lo, hi)})
        return out

    def details(self, qids: Iterable[str]) -> dict[str, Details]:
        out = {}
        for q in qids:
            where = self._offsets.get(qid_number(q))
            if where is None:
                continue
            self._spill.seek(where[0])
            s = _decode_stored(self._spill.read(where[1]))
            out[q] = Details(
                name=s.name, description=s.description, aliases=s.aliases, sitelinks=s.sitelinks, image=s.image,
                inception_year=s.inception_year, time_period=s.time_period, claims=s.claims,
            )
        return out

    def labels(self, qids: Iterable[str]) -> dict[str, str]:
        """Class labels come from the index; any other label needs one more, filtered pass."""
        qids = set(qids)
        out = {q: self._labels[qid_number(q)] for q in qids if qid_number(q) in self._labels}
        missing = {q.encode() for q in qids - set(out)}
        if missing:
            for _, line in dump_lines(self.path):
                if _head_has_id(line[:64], missing):
                    try:
                        e = _decode_entity(line)
                    except (msgspec.DecodeError, msgspec.ValidationError):
                        continue
                    if e.id in qids and e.labels.en is not None:
                        out[e.id] = e.labels.en.value
        return out

    def start_years(self, qids: Iterable[str]) -> dict[str, int]:
        return {q: self._periods[qid_number(q)] for q in qids if qid_number(q) in self._periods}

    def close(self) -> None:
        self._spill.close()
