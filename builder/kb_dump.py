"""A knowledge base read from a Wikidata JSON dump (plain, .gz or .bz2) in one streaming pass.

The pass keeps only what the traversal needs:

* the edge index: every non-deprecated P31/P279 edge, as integer arrays sorted by parent;
* the country claims (P495/P17) of entities that have edges;
* the details of candidate artifacts (entities with edges and a requested country), spilled to a
  temporary file with only their offsets in memory;
* English labels of classes (entities with a P279 claim) and of the concept roots, and P580 start
  years of time periods;
* the English labels of the other entities with an edge (those with P31 only): any of them can be the
  parent an artifact is found under, so they are spilled to a second temporary file, which
  ``labels()`` scans for the few that the class labels lack. The dump is never read twice.

Memory: the edge index and the country claims grow with the number of edges; the class labels,
period years and candidate offsets with the number of classes, periods and candidates; the label
spill buffers at most 65,536 pairs before writing them. Nothing grows with the dump's text or its
number of entities beyond that; the spilled details and labels are on disk (a spilled label takes
about 8 bytes plus its UTF-8 length).

Speed: a compressed dump is decompressed by a child process that writes into a pipe, so that
decompression runs on another core and never waits for this process's GIL. The child is a second
Python interpreter running the gzip/bz2 modules: zlib inflates about twice as fast as the system
``gzip -dc`` (see benchmarks/dump_extraction.py), and errors read as those of ``open_dump``. Where
no interpreter can be started, a reader thread decompresses instead (zlib and bz2 release the GIL,
but the thread needs it back between small steps, so it overlaps less). Plain files are read
directly. The text is cut into blocks of whole lines, about 256 KiB each, and a block is decoded by
one msgspec call as a JSON array, the dump's own line-ending commas separating its items. The
schema names only the fields every entity is checked for; the rest of an entity (other languages,
other properties, references) is skipped without building Python objects, and what only a
candidate's details need is kept raw until the entity turns out to be one. A block that is not one
valid entity per line is decoded again line by line, so that each malformed line is counted with
its own line number.

Hostile input: a line is counted as malformed (and the build fails only above ``--max-malformed``)
when it is not JSON, not an entity of the expected shape, nests deeper than the decoder allows, holds
an item id or a year that no Wikidata value can have (more than 18 digits, or non-ASCII digits: the
index keeps ids and years as 64-bit integers), or is longer than ``MAX_LINE_BYTES`` (64 MiB). A line
over that limit is never held in memory: its bytes are dropped up to its end, so a small compressed
file that inflates to one gigantic line costs its decompression time and nothing more. Statement
values of another type than the property's (a string where an item is expected) are ignored, like
Wikidata's own "somevalue" and "novalue" snaks.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import itertools
import os
import queue
import struct
import subprocess
import sys
import tempfile
import threading
import zlib
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import msgspec
import numpy as np

try:
    from fcntl import F_SETPIPE_SZ, fcntl
except ImportError:  # not Linux: pipes keep their default size
    F_SETPIPE_SZ = None

from cultureboard import workers
from cultureboard.countries import load_countries
from cultureboard.errors import CultureboardError

from .kb import COUNTRY_PROPERTIES, EDGE_PROPERTIES, Details, Edge, label_codes, pick_labels, qid_number, year_of

# ---------------------------------------------------------------- the parts of an entity we read


class _Text(msgspec.Struct, frozen=True, gc=False):
    value: str


class _Lang(msgspec.Struct, frozen=True, gc=False):
    en: _Text | None = None


#: The Wikidata label languages read besides English: those that may hold a label in one of the country
#: table's languages (:func:`~.kb.label_codes`). Other languages are skipped by the decoder.
LABEL_LANGUAGES = tuple(sorted({code for c in load_countries() for t in c.languages for code in label_codes(t)}))
#: (attribute, Wikidata language code) of every label read, English first.
_LABEL_FIELDS = (("en", "en"), *((code.replace("-", "_"), code) for code in LABEL_LANGUAGES))
_Labels = msgspec.defstruct(
    "_Labels", [(attr, _Text | None, None) for attr, _ in _LABEL_FIELDS],
    rename={attr: code for attr, code in _LABEL_FIELDS}, frozen=True, gc=False, module=__name__)


def label_values(labels: _Labels) -> dict[str, str]:
    """{Wikidata language code: label} of the languages read (English included)."""
    return {code: text.value for attr, code in _LABEL_FIELDS if (text := getattr(labels, attr)) is not None}


class _Aliases(msgspec.Struct, frozen=True, gc=False):
    en: list[_Text] = []


class _Value(msgspec.Struct, frozen=True, gc=False):
    value: Any


class _Snak(msgspec.Struct, frozen=True, gc=False):
    snaktype: str = "value"
    datavalue: _Value | None = None


class _Statement(msgspec.Struct, frozen=True, gc=False):
    mainsnak: _Snak
    rank: str = "normal"


class _Claims(msgspec.Struct, frozen=True, gc=False):
    P31: list[_Statement] = []
    P279: list[_Statement] = []
    P495: list[_Statement] = []
    P17: list[_Statement] = []
    P2012: list[_Statement] = []
    P361: list[_Statement] = []
    P18: list[_Statement] = []
    P373: list[_Statement] = []
    P571: list[_Statement] = []
    P2348: list[_Statement] = []
    P580: list[_Statement] = []


class _Entity(msgspec.Struct, gc=False):
    """An entity with every part the builder reads (the RDF export, kb_rdf, reads it whole)."""

    id: str
    labels: _Labels = _Labels()
    descriptions: _Lang = _Lang()
    aliases: _Aliases = _Aliases()
    claims: _Claims = _Claims()
    sitelinks: dict[str, msgspec.Raw] = {}


_NO_STATEMENTS = msgspec.Raw(b"[]")
_NO_TERMS = msgspec.Raw(b"{}")


class _IndexClaims(msgspec.Struct, frozen=True, gc=False):
    P31: list[_Statement] = []
    P279: list[_Statement] = []
    P495: list[_Statement] = []
    P17: list[_Statement] = []
    P580: list[_Statement] = []
    P2012: msgspec.Raw = _NO_STATEMENTS
    P361: msgspec.Raw = _NO_STATEMENTS
    P18: msgspec.Raw = _NO_STATEMENTS
    P373: msgspec.Raw = _NO_STATEMENTS
    P571: msgspec.Raw = _NO_STATEMENTS
    P2348: msgspec.Raw = _NO_STATEMENTS


class _Indexed(msgspec.Struct, gc=False):
    """An entity as the index pass reads it: what every entity is checked for is decoded; what only
    a candidate's details need is kept as raw JSON (checked, not built) and decoded for candidates."""

    id: str
    labels: msgspec.Raw = _NO_TERMS  # the English label is decoded for every entity, the others for candidates
    descriptions: msgspec.Raw = _NO_TERMS
    aliases: msgspec.Raw = _NO_TERMS
    claims: _IndexClaims = _IndexClaims()
    sitelinks: msgspec.Raw = _NO_TERMS


class _Stored(msgspec.Struct, array_like=True):
    """A candidate artifact's details as spilled to disk."""

    name: str | None
    description: str | None
    aliases: list[str]
    sitelinks: int
    image: str | None
    commons_category: str | None
    inception_year: int | None
    time_period: list[str]
    claims: dict[str, list[str]]
    labels: dict[str, str]  # Wikidata language code -> label, the languages of LABEL_LANGUAGES


#: What decoding a line that is not a valid entity raises: not JSON, not the schema, not UTF-8 inside a
#: string, or nested deeper than msgspec goes.
BAD_JSON = (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError)

_decode_entity = msgspec.json.Decoder(_Entity).decode
_decode_indexed = msgspec.json.Decoder(_Indexed).decode
_decode_indexed_list = msgspec.json.Decoder(list[_Indexed]).decode
_decode_lang = msgspec.json.Decoder(_Lang).decode
_decode_all_labels = msgspec.json.Decoder(_Labels).decode
_decode_aliases = msgspec.json.Decoder(_Aliases).decode
_decode_sitelinks = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
_decode_statements = msgspec.json.Decoder(list[_Statement]).decode
_encode = msgspec.msgpack.Encoder().encode
_decode_stored = msgspec.msgpack.Decoder(_Stored).decode
_decode_labels = msgspec.msgpack.Decoder(list[str]).decode


def _values(statements: list[_Statement]) -> list[Any]:
    """Values of the statements that count: not deprecated, and with a value (not some/novalue)."""
    return [
        s.mainsnak.datavalue.value
        for s in statements
        if s.rank != "deprecated" and s.mainsnak.snaktype == "value" and s.mainsnak.datavalue is not None
    ]


#: The most digits an item id may have: its number is kept as a 64-bit integer (Wikidata's have 9).
MAX_QID_DIGITS = 18
#: The years a time value may give: they are kept as 64-bit integers (Wikidata's reach about 10**10).
YEAR_RANGE = (-(1 << 63), (1 << 63) - 1)


class _Malformed(ValueError):
    """A line holds a value no Wikidata entity can have (an over-long item id, an out-of-range year)."""


def _item_qid(s: _Statement) -> str | None:
    """The item QID (Q + digits) a statement gives, if it counts; ``_Malformed`` for a QID of more
    than ``MAX_QID_DIGITS`` digits or with non-ASCII digits."""
    snak = s.mainsnak
    if s.rank != "deprecated" and snak.snaktype == "value" and snak.datavalue is not None:
        v = snak.datavalue.value
        if isinstance(v, dict):
            q = v.get("id")
            if isinstance(q, str) and q[:1] == "Q" and q[1:].isdecimal():
                if len(q) > MAX_QID_DIGITS + 1 or not q.isascii():
                    raise _Malformed(q)
                return q
    return None


def _entity_number(qid: str) -> int | None:
    """The number of an entity id "Q" + 1 to ``MAX_QID_DIGITS`` ASCII digits; None for any other id."""
    digits = qid[1:]
    if qid[:1] == "Q" and digits.isdecimal() and len(digits) <= MAX_QID_DIGITS and digits.isascii():
        return int(digits)
    return None


def _item_ids(statements: list[_Statement]) -> list[str]:
    """The distinct item QIDs of the statements that count, in numeric order."""
    if not statements:
        return []
    return sorted({q for s in statements if (q := _item_qid(s))}, key=qid_number)


def _item_numbers(statements: list[_Statement]) -> list[int]:
    """The numbers of ``_item_ids(statements)``, in order."""
    if not statements:  # the common cases first: no statement, or one
        return []
    if len(statements) == 1:
        q = _item_qid(statements[0])
        return [int(q[1:])] if q else []
    return sorted(map(qid_number, {q for s in statements if (q := _item_qid(s))}))


def _best_string(statements: list[_Statement]) -> str | None:
    """The preferred-rank value if there is one, else the smallest normal one (deterministic)."""
    live = [s for s in statements if s.rank != "deprecated" and s.mainsnak.datavalue is not None]
    preferred = [s.mainsnak.datavalue.value for s in live if s.rank == "preferred"]
    pool = preferred or [s.mainsnak.datavalue.value for s in live]
    pool = [v for v in pool if isinstance(v, str)]
    return min(pool) if pool else None


def _earliest_year(statements: list[_Statement]) -> int | None:
    """The smallest year of the time values; ``_Malformed`` for a year outside ``YEAR_RANGE``."""
    years = []
    for v in _values(statements):
        time = v.get("time") if isinstance(v, dict) else None
        if isinstance(time, str):
            try:
                year = year_of(time)
            except ValueError:  # more digits than int() converts
                raise _Malformed(time[:40]) from None
            if year is not None:
                if not YEAR_RANGE[0] <= year <= YEAR_RANGE[1]:
                    raise _Malformed(time[:40])
                years.append(year)
    return min(years) if years else None


# ---------------------------------------------------------------------------- reading the dump


def open_dump(path: Path):
    """Open a dump for binary reading, by its suffix: ``.gz``, ``.bz2`` or plain."""
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    if path.suffix == ".bz2":
        return bz2.open(path, "rb")
    return open(path, "rb")


_READ = 256 << 10  # bytes asked for per read; a block of whole lines is about this size
#: The longest dump line read, in bytes (its trailing comma included). Wikibase refuses to store an entity whose serialisation exceeds its
#: ``maxSerializedEntitySize`` (by default MediaWiki's article size limit, 2 MiB), so a real dump line
#: is a few MiB at most; a longer one is dropped as it is read and counted as malformed.
MAX_LINE_BYTES = 64 << 20
#: What a line over ``MAX_LINE_BYTES`` is replaced by in a block: not JSON (a raw NUL), so it is
#: counted as a malformed line at its own line number.
OVER_LIMIT = b"\0line over MAX_LINE_BYTES\0"
_PIPE_SIZE = 1 << 20  # pipe buffer asked for (Linux): how far the decompressing child may run ahead

# The decompressing child: the gzip/bz2 modules in a second interpreter (no site packages needed).
# A failure exits with "ExceptionName: message" on stderr, as open_dump's exception would read.
_CHILD_SCRIPT = """\
import bz2, gzip, shutil, sys
try:
    with (gzip.open if sys.argv[1] == ".gz" else bz2.open)(sys.argv[2], "rb") as fh:
        shutil.copyfileobj(fh, sys.stdout.buffer, 1 << 20)
except Exception as exc:
    sys.exit(f"{exc.__class__.__name__}: {exc}")
"""


def _decompress_command(path: Path) -> list[str] | None:
    """The command that writes a .gz/.bz2 dump decompressed to stdout; None when no interpreter can be started."""
    if not sys.executable:
        return None
    return [sys.executable, "-I", "-S", "-c", _CHILD_SCRIPT, path.suffix, os.fspath(path)]


def _unreadable(path: Path, detail: str) -> CultureboardError:
    return CultureboardError(
        path, f"cannot be read as a Wikidata JSON dump ({detail})",
        "check the download is complete (compare its checksum) and that .gz/.bz2 files are not truncated",
    )


def _from_file(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as fh:
        while data := fh.read(_READ):
            yield data


def _from_child(path: Path, command: list[str]) -> Iterator[bytes]:
    """Read the decompressing child's stdout in this thread: the pipe is the read-ahead buffer.

    Each read returns what the child has written so far (up to ``_READ``), so while this process
    parses a block the child fills the pipe on another core. The child is killed and reaped when
    the reading stops early (an error, the generator closed, or the child hung: ``cultureboard.workers``)."""
    with tempfile.TemporaryFile(prefix="cultureboard-decompress-") as err:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, bufsize=0)
        try:
            if F_SETPIPE_SZ is not None:
                with contextlib.suppress(OSError):  # refused above /proc/sys/fs/pipe-max-size: keep the default
                    fcntl(proc.stdout.fileno(), F_SETPIPE_SZ, _PIPE_SIZE)
            try:  # a child silent for workers.STALL_SECONDS is hung: killed below, one error line
                while data := workers.read_some(proc.stdout, _READ):
                    yield data
                status = workers.wait_for(proc)
            except workers.WorkerStalled as exc:
                raise CultureboardError(path, f"cannot be read: the process decompressing it is alive but {exc} (hung)",
                                        "check the machine's load and the file, then run again") from None
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stdout.close()
        if status != 0:
            err.seek(0)
            message = " ".join(err.read().decode("utf-8", "replace").split())
            raise _unreadable(path, message or f"decompression exited with status {status}")


def _from_thread(path: Path) -> Iterator[bytes]:
    """Decompress in a reader thread (zlib and bz2 release the GIL while they work): the fallback
    when no child process can be started."""
    q: queue.Queue = queue.Queue(maxsize=16)
    stop = threading.Event()

    def reader():
        try:
            with open_dump(path) as fh:
                while not stop.is_set() and (data := fh.read(_READ)):
                    q.put(data)
            q.put(None)
        except BaseException as exc:  # handed to the consumer, which reports it
            q.put(exc)

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    try:
        while (item := q.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while thread.is_alive():  # unblock a reader waiting to put, so that it sees ``stop`` and ends
            with contextlib.suppress(queue.Empty):
                q.get(timeout=0.05)


def dump_blocks(path: Path) -> Iterator[bytes]:
    """The dump's text in blocks of whole lines.

    Blocks are about ``_READ`` bytes (more when a line is longer); the last one may lack its final
    newline. A line found longer than ``MAX_LINE_BYTES`` while it is read (one that spans several
    reads) is replaced by ``OVER_LIMIT``; its bytes are dropped as they arrive. This is the only
    place the dump is read: a compressed dump through a decompressing child process, or a reader
    thread where no child can be started."""
    if path.suffix in (".gz", ".bz2"):
        command = _decompress_command(path)
        source = _from_child(path, command) if command else _from_thread(path)
    else:
        source = _from_file(path)
    rest = b""  # the start of the line the last read ended inside
    long: list[bytes] = []  # the reads of a line longer than a read, joined once it ends
    size = 0  # the bytes of that line so far, kept or dropped
    with contextlib.closing(source):
        try:
            for data in source:
                cut = data.rfind(b"\n") + 1
                if not cut:  # inside a long line
                    if not size:
                        long, size = [rest], len(rest)
                    size += len(data)
                    if size <= MAX_LINE_BYTES:
                        long.append(data)
                    else:
                        long = []
                    continue
                if size:  # a long line ends in this read
                    end = data.find(b"\n")
                    over = size + end > MAX_LINE_BYTES
                    rest = OVER_LIMIT if over else b"".join((*long, data[:end]))
                    long, size = [], 0
                    yield rest + memoryview(data)[end:cut]
                else:
                    yield rest + memoryview(data)[:cut]
                rest = data[cut:]
        except (OSError, EOFError, zlib.error) as exc:  # the reader thread's or the plain file's
            raise _unreadable(path, f"{exc.__class__.__name__}: {exc}") from None
    if size:
        rest = OVER_LIMIT if size > MAX_LINE_BYTES else b"".join(long)
    if rest:
        yield rest


def _block_lines(first: int, block: bytes) -> Iterator[tuple[int, bytes]]:
    """(line number, entity JSON) for each entity line of a block whose first line is number ``first``:
    the array brackets and trailing commas removed."""
    for lineno, line in enumerate(block.split(b"\n"), first):
        line = line.strip()
        if line.endswith(b","):
            line = line[:-1]
        if line and line not in (b"[", b"]"):
            yield lineno, line


def _decode_block(block: bytes, newlines: int) -> tuple[int, list[_Indexed]] | None:
    """A block's entities decoded by one call, and the number of lines before the first of them.

    The lines already end with the commas that separate array items, so the block, less the dump's
    opening ``[`` or closing ``]`` line and its last comma, is decoded as one JSON array. None when
    that fails or does not give one entity per line (``newlines`` is the block's count): the caller
    then decodes the lines one by one, to count each bad line with its number."""
    start, end = 0, len(block)
    if block[:1] == b"[":  # the dump's first line
        start = block.find(b"\n") + 1
        if not start or block[:start].strip() != b"[":
            return None
    while end > start and block[end - 1] in b" \t\r\n":
        end -= 1
    if block[end - 1:end] == b"]":  # the dump's last line
        k = block.rfind(b"\n", start, end)
        if k < 0 or block[k + 1:end].strip() != b"]":
            return None
        end = k
        while end > start and block[end - 1] in b" \t\r\n":
            end -= 1
    if block[end - 1:end] == b",":
        end -= 1
    if end <= start:
        return None
    try:
        entities = _decode_indexed_list(b"".join((b"[", memoryview(block)[start:end], b"]")))
    except BAD_JSON:
        return None
    skipped = block.count(b"\n", 0, start)
    if len(entities) != newlines - skipped - block.count(b"\n", end) + 1:
        return None
    return skipped, entities


def _newlines(block: bytes) -> int:
    """The number of newlines in a block (numpy compares a block's bytes faster than bytes.count)."""
    return int(np.count_nonzero(np.frombuffer(block, dtype=np.uint8) == 10))


def dump_entities(path: Path) -> Iterator[tuple[int, _Indexed | bytes | None]]:
    """(line number, entity) for each entity line of the dump: None for a line that is not a valid
    entity, ``OVER_LIMIT`` for a line longer than ``MAX_LINE_BYTES``."""
    first = 1  # the number of the block's first line
    with contextlib.closing(dump_blocks(path)) as blocks:
        for block in blocks:
            newlines = _newlines(block)
            decoded = _decode_block(block, newlines)
            if decoded is not None:
                skipped, entities = decoded
                yield from zip(itertools.count(first + skipped), entities)
            else:
                for lineno, line in _block_lines(first, block):
                    try:
                        entity = _decode_indexed(line)
                    except BAD_JSON:
                        entity = OVER_LIMIT if line == OVER_LIMIT else None
                    yield lineno, entity
            first += newlines


def dump_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, entity JSON) for each entity line: the array brackets and trailing commas removed."""
    first = 1
    with contextlib.closing(dump_blocks(path)) as blocks:
        for block in blocks:
            yield from _block_lines(first, block)
            first += _newlines(block)


class _LabelSpill:
    """(entity number, English label) pairs kept on disk, scanned for the few numbers asked for.

    Pairs are buffered and written in batches: a header (count, size of the labels), the numbers as
    int64, then the labels as one msgpack array, so that a scan decodes the labels of a batch only
    when one of its numbers is wanted."""

    _BATCH = 1 << 16
    _HEADER = struct.Struct("<II")

    def __init__(self):
        self._file = tempfile.TemporaryFile(prefix="cultureboard-labels-")
        self._numbers = array("q")
        self._labels: list[str] = []

    def add(self, number: int, label: str) -> None:
        self._numbers.append(number)
        self._labels.append(label)
        if len(self._labels) >= self._BATCH:
            self._flush()

    def _flush(self) -> None:
        if self._labels:
            labels = _encode(self._labels)
            self._file.write(self._HEADER.pack(len(self._labels), len(labels)))
            self._file.write(self._numbers.tobytes())
            self._file.write(labels)
            self._numbers, self._labels = array("q"), []

    def find(self, numbers: Iterable[int]) -> dict[int, str]:
        """The labels of ``numbers`` (a later pair for the same number wins, as in the dump)."""
        self._flush()
        wanted = np.fromiter(numbers, dtype=np.int64)
        out: dict[int, str] = {}
        self._file.seek(0)
        while header := self._file.read(self._HEADER.size):
            count, size = self._HEADER.unpack(header)
            batch = np.frombuffer(self._file.read(8 * count), dtype=np.int64)
            hits = np.flatnonzero(np.isin(batch, wanted))
            if hits.size:
                labels = _decode_labels(self._file.read(size))
                out.update((int(batch[i]), labels[i]) for i in hits)
            else:
                self._file.seek(size, os.SEEK_CUR)
        self._file.seek(0, os.SEEK_END)
        return out

    def close(self) -> None:
        self._file.close()


# ---------------------------------------------------------------------------- the knowledge base


@dataclass
class DumpReport:
    path: str
    lines: int = 0
    entities: int = 0
    malformed: int = 0
    malformed_examples: list[int] = field(default_factory=list)  # line numbers
    over_limit: int = 0  # malformed lines longer than MAX_LINE_BYTES
    edges: int = 0
    candidates: int = 0


class DumpKnowledgeBase:
    """Index a dump once; answer the traversal's questions from the index.

    ``country_qids`` limits which entities' details are kept (the requested countries); the labels of
    ``label_qids`` (the concept roots) are kept whatever they are, so checking them needs no second pass.
    ``max_malformed`` is the largest fraction of unparsable lines tolerated before the build fails.
    ``labels()`` answers for the roots and for entities with a P31/P279 edge only: every parent an
    artifact can be found under is one of those, and the dump is not read again for the others.
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
        self._other_labels = _LabelSpill()
        try:
            self._index(max_malformed)
        except BaseException:
            self.close()
            raise

    # -- building the index

    def _index(self, max_malformed: float) -> None:
        rep = self.report
        children, parents = (array("q"), array("q")), (array("q"), array("q"))  # per edge property: P31, P279
        c_ent, c_prop, c_country = array("q"), array("b"), array("q")
        label_ids, label_text = array("q"), []
        period_ids, period_years = array("q"), array("q")
        wanted, always_label, spill_label = self._wanted, self._always_label, self._other_labels.add
        pos = 0

        def malformed(lineno: int) -> None:
            rep.malformed += 1
            if len(rep.malformed_examples) < 10:
                rep.malformed_examples.append(lineno)

        with contextlib.closing(dump_entities(self.path)) as entities:
            for lineno, e in entities:
                rep.lines = lineno
                if e.__class__ is not _Indexed:  # None, or OVER_LIMIT
                    rep.over_limit += e is OVER_LIMIT
                    malformed(lineno)
                    continue
                if e.id[:1] != "Q":
                    rep.entities += 1  # properties and lexemes are not part of the class hierarchy
                    continue
                num = _entity_number(e.id)
                if num is None:
                    malformed(lineno)
                    continue
                c = e.claims
                try:  # everything that can find the line malformed, before anything is recorded
                    label = _decode_lang(e.labels).en
                    edges = _item_numbers(c.P31), _item_numbers(c.P279)
                    countries, details = [], None
                    if (edges[0] or edges[1]) and (c.P495 or c.P17):
                        origin, country = _item_numbers(c.P495), _item_numbers(c.P17)
                        countries = [(0, q) for q in origin] + [(1, q) for q in country]
                        if any(q in wanted for _, q in countries):
                            details = _encode(self._stored(e, label, (*edges, origin, country)))
                    year = _earliest_year(c.P580) if c.P580 else None
                except (_Malformed, *BAD_JSON):
                    malformed(lineno)
                    continue
                rep.entities += 1
                for code, targets in enumerate(edges):
                    if targets:
                        children[code].extend([num] * len(targets))
                        parents[code].extend(targets)
                if label is not None:
                    if edges[1] or num in always_label:
                        label_ids.append(num)
                        label_text.append(label.value)
                    elif edges[0]:  # may be the parent an artifact is found under
                        spill_label(num, label.value)
                if year is not None:
                    period_ids.append(num)
                    period_years.append(year)
                for code, q in countries:
                    c_ent.append(num)
                    c_prop.append(code)
                    c_country.append(q)
                if details is not None:
                    self._spill.write(details)
                    self._offsets[num] = (pos, len(details))
                    pos += len(details)
                    rep.candidates += 1
        if rep.entities == 0:
            raise CultureboardError(
                self.path, "holds no Wikidata entity", "pass a Wikidata JSON dump: a JSON array with one entity per line"
            )
        if rep.malformed > max_malformed * max(rep.lines, 1):
            raise CultureboardError(
                self.path,
                f"{rep.malformed} of {rep.lines} lines are not valid entities (first at lines {rep.malformed_examples}"
                + (f"; {rep.over_limit} longer than the {MAX_LINE_BYTES / (1 << 20):g} MiB line limit" if rep.over_limit else "")
                + f"), above the threshold of {max_malformed:.2%}",
                "re-download the dump, or raise --max-malformed if the damage is known and acceptable",
            )
        prop = np.repeat(np.arange(len(EDGE_PROPERTIES), dtype=np.int8), [len(a) for a in children])
        child = np.concatenate([np.frombuffer(a, dtype=np.int64) for a in children])
        parent = np.concatenate([np.frombuffer(a, dtype=np.int64) for a in parents])
        del children, parents  # copied: free them before sorting
        rep.edges = len(child)
        order = np.lexsort((child, parent))
        self._e_parent, self._e_child, self._e_prop = parent[order], child[order], prop[order]
        order = np.argsort(np.frombuffer(c_ent, dtype=np.int64), kind="stable")
        self._c_ent = np.frombuffer(c_ent, dtype=np.int64)[order]
        self._c_prop = np.frombuffer(c_prop, dtype=np.int8)[order]
        self._c_country = np.frombuffer(c_country, dtype=np.int64)[order]
        self._labels = dict(zip(label_ids, label_text))
        self._periods = dict(zip(period_ids, period_years))

    @staticmethod
    def _stored(e: _Indexed, label: _Text | None, numbers: tuple[list[int], ...]) -> _Stored:
        """A candidate's details, given its English label and the item numbers of its P31, P279, P495 and
        P17 claims; the parts the index pass kept raw (its labels in other languages among them) are
        decoded here (a DecodeError or ValidationError if one is not what it should be)."""

        def statements(prop: str) -> list[_Statement]:
            s = getattr(e.claims, prop)
            if not isinstance(s, msgspec.Raw):
                return s
            return [] if s is _NO_STATEMENTS else _decode_statements(s)  # most candidates lack most of these

        claims = {p: [f"Q{n}" for n in ns] for p, ns in zip(("P31", "P279", "P495", "P17"), numbers)}
        description = _decode_lang(e.descriptions).en
        return _Stored(
            name=label.value if label else None,
            description=description.value if description else None,
            aliases=sorted({a.value for a in _decode_aliases(e.aliases).en}),
            sitelinks=len(_decode_sitelinks(e.sitelinks)),
            image=_best_string(statements("P18")),
            commons_category=_best_string(statements("P373")),
            inception_year=_earliest_year(statements("P571")),
            time_period=_item_ids(statements("P2348")),
            claims={**claims, "P2012": _item_ids(statements("P2012")), "P361": _item_ids(statements("P361"))},
            labels={code: text for code, text in label_values(_decode_all_labels(e.labels)).items() if code != "en"},
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
                commons_category=s.commons_category, inception_year=s.inception_year, time_period=s.time_period,
                claims=s.claims,
            )
        return out

    def native_labels(self, qids: Iterable[str], languages: Iterable[str]) -> dict[str, dict[str, str]]:
        languages = list(languages)
        out = {}
        for q in qids:
            where = self._offsets.get(qid_number(q))
            if where is not None:
                self._spill.seek(where[0])
                picked = pick_labels(_decode_stored(self._spill.read(where[1])).labels, languages)
                if picked:
                    out[q] = picked
        return out

    def labels(self, qids: Iterable[str]) -> dict[str, str]:
        """English labels of roots and of entities with an edge (every node a traversal reaches has one).

        Class and root labels come from memory; the others from the label spill, scanned once for
        all of them. An entity without any P31/P279 edge is not answered."""
        qids = set(qids)
        out = {q: self._labels[qid_number(q)] for q in qids if qid_number(q) in self._labels}
        missing = {qid_number(q): q for q in qids - set(out)}
        if missing:
            for number, label in self._other_labels.find(missing).items():
                out[missing[number]] = label
        return out

    def start_years(self, qids: Iterable[str]) -> dict[str, int]:
        return {q: self._periods[qid_number(q)] for q in qids if qid_number(q) in self._periods}

    def close(self) -> None:
        self._spill.close()
        self._other_labels.close()
