"""Benchmark the Wikidata dump extractor against decompression alone and a naive json.loads baseline.

    .venv/bin/python benchmarks/dump_extraction.py --entities 1000000 --compression gz [--repeat 2] [--keep]

1. Generates a synthetic dump of N entities in the official layout (``[``, one entity per line with a
   trailing comma, ``]``), shaped like the real one: mostly multilingual labels/descriptions/aliases,
   sitelinks, statements with ids, hashes, references and qualifiers, a P31/P279 class hierarchy
   under the real CUBE roots (read from builder/data/concepts.yaml), P495/P17 country claims to real
   country QIDs, deprecated and somevalue statements, P18/P571, and properties the extractor ignores.
   Two worker processes write chunks of 25,000 entities, each its own gzip member or bz2 stream
   (readers take concatenated members, as in the multistream official bz2 dumps). The N/4 and N/2
   dumps of the memory runs are the first members of the N dump, copied. Files go to ``--workdir``
   (git-ignored) and are deleted at the end unless ``--keep``, which also reuses them next time.
2. Measures, each in a fresh interpreter (so its peak RSS is its own): decompression alone, three
   ways (in-process with ``open_dump``, the gzip/bz2 modules the extractor's fallback uses; the system
   ``gzip -dc``/``bzip2 -dc`` in a child process; and the extractor's own decompressing child), a
   naive baseline (json.loads every line, walk P31/P279/P495/P17 in plain Python) and
   ``artifact_space.extract`` end to end, with its index and label phases timed apart; then the
   extractor on the N/4 and N/2 dumps, to show peak memory follows the edge index, not the dump.
   The extractor's ratio is taken against the fastest way to decompress, named in the output. CPU
   seconds include child processes (the decompressors).
3. Prints Markdown tables ready for the README, and the machine. The machine may be shared: compare
   the ratios of one run (``--repeat`` keeps each measurement's fastest run), not absolute times.
"""

from __future__ import annotations

import argparse
import bz2
import fcntl
import gzip
import hashlib
import json
import multiprocessing as mp
import os
import platform
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

GENERATOR_VERSION = 2
SEED = 20240611
CHUNK_ENTITIES = 25_000  # entities per gzip member / bz2 stream (and per generator job)
READ_CHUNK = 4 << 20
PIPE_READ = 1 << 20  # bytes asked for per read from a decompressing child's pipe
PIPE_SIZE = 1 << 20  # the pipe buffer the extractor asks for (Linux)
SYSTEM_TOOLS = {".gz": "gzip", ".bz2": "bzip2"}
CONCEPTS = ["cuisine", "landmarks", "art"]
COUNTRIES = ["IT", "JP", "FR", "US"]

# ------------------------------------------------------------------------------- synthetic dump


def cube_roots() -> dict[str, str]:
    """The real CUBE roots, qid -> name, as the concept file (builder/data/concepts.yaml) lists them."""
    from cultureboard.builder.traversal import load_concepts

    return {r.qid: r.name for c in load_concepts().values() for r in c.roots}


# Classes outside CUBE that most of a real dump hangs from.
GENERIC = {
    "Q35120": "entity", "Q488383": "object", "Q5": "human", "Q13442814": "scholarly article",
    "Q16521": "taxon", "Q4167836": "Wikimedia category", "Q486972": "human settlement", "Q532": "village",
    "Q7725634": "literary work", "Q11424": "film", "Q482994": "album", "Q3305213": "painting",
    "Q7187": "gene", "Q8502": "mountain", "Q4022": "river", "Q6581097": "male", "Q6581072": "female",
}
# Country QIDs with rough weights (the four requested ones are IT, JP, FR, US).
COUNTRY_WEIGHTS = {
    "Q30": 14, "Q38": 8, "Q17": 8, "Q142": 9, "Q183": 9, "Q145": 7, "Q29": 6, "Q148": 6, "Q668": 5,
    "Q155": 4, "Q96": 4, "Q159": 5, "Q43": 3, "Q884": 3, "Q252": 3, "Q79": 2, "Q1033": 2, "Q34": 3,
}
COUNTRY_NAMES = {
    "Q30": "United States", "Q38": "Italy", "Q17": "Japan", "Q142": "France", "Q183": "Germany",
    "Q145": "United Kingdom", "Q29": "Spain", "Q148": "China", "Q668": "India", "Q155": "Brazil",
    "Q96": "Mexico", "Q159": "Russia", "Q43": "Turkey", "Q884": "South Korea", "Q252": "Indonesia",
    "Q79": "Egypt", "Q1033": "Nigeria", "Q34": "Sweden",
}
LATIN_LANGS = ["fr", "de", "it", "es", "nl", "pt", "sv", "pl", "ca", "cs", "da", "fi", "hu", "ro", "tr", "id", "vi",
               "eo", "eu", "ga", "nb", "sk", "sl", "hr", "lt", "lv", "et", "ms", "af", "sq", "gl", "oc", "ast", "sco"]
SCRIPT_LANGS = {
    "cyr": ["ru", "uk", "bg", "sr", "be", "mk", "kk"],
    "cjk": ["ja", "zh", "zh-hans", "zh-hant", "ko", "yue"],
    "ara": ["ar", "fa", "arz", "ur"],
    "grc": ["el"],
    "heb": ["he", "yi"],
    "dev": ["hi", "mr", "ne"],
}
SCRIPT_RANGES = {
    "cyr": (0x430, 0x44F), "cjk": (0x4E00, 0x9FA5), "ara": (0x628, 0x64A), "grc": (0x3B1, 0x3C9),
    "heb": (0x5D0, 0x5EA), "dev": (0x915, 0x939),
}
WIKIS = [f"{lang}wiki" for lang in ["en", "de", "fr", "it", "es", "ja", "ru", "pl", "nl", "pt", "sv", "zh", "uk",
                                    "ar", "ca", "fa", "he", "ko", "cs", "fi", "hu", "id", "no", "ro", "tr", "vi"]]
WIKIS += ["commonswiki", "enwikivoyage", "dewikivoyage", "enwikiquote", "specieswiki"]
LANGS_MEAN = 7  # mean number of languages besides English with a label
CLASS_EVERY = 50  # one generated entity in 50 is a class (P279 or, for some, P31 only)
SERIES_EVERY = 211  # instance nodes without a country that other instances hang from (P31)
BASE = 120_000_000  # generated entities are Q{BASE + i}


class _Vocab:
    """Pools of prebuilt words, names and descriptions, so that generating a line is mostly concatenation."""

    def __init__(self):
        r = random.Random(SEED)
        syl = [a + b for a in "bcdfghklmnprstvz" for b in "aeiou"] + ["qu", "tr", "st", "an", "el", "or", "in"]
        self.latin = ["".join(r.choices(syl, k=r.randint(1, 4))) for _ in range(6000)]
        words = {s: ["".join(chr(r.randint(lo, hi)) for _ in range(r.randint(2, 7))) for _ in range(1500)]
                 for s, (lo, hi) in SCRIPT_RANGES.items()}
        self.names = [" ".join(r.choices(self.latin, k=r.randint(1, 3))).capitalize() for _ in range(50_000)]
        self.long_names = [" ".join(r.choices(self.latin, k=r.randint(4, 10))).capitalize() for _ in range(20_000)]
        self.lang_script = {lang: s for s, langs in SCRIPT_LANGS.items() for lang in langs}
        self.all_langs = LATIN_LANGS + [lang for langs in SCRIPT_LANGS.values() for lang in langs]
        order = self.all_langs[:]
        r.shuffle(order)
        self.lang_ring = order + order  # a slice at a random offset: a cheap random subset of languages
        # per language: label values (for non-Latin scripts) and descriptions, some templated as bots write them
        self.script_names = {lang: [" ".join(r.choices(words[s], k=r.randint(1, 3))) for _ in range(800)]
                             for lang, s in self.lang_script.items()}
        self.descs = {}
        for lang in self.all_langs:
            pool = words[self.lang_script[lang]] if lang in self.lang_script else self.latin
            self.descs[lang] = [" ".join(r.choices(pool, k=r.randint(2, 7))) for _ in range(400)]
        self.templated = {
            kind: {lang: [" ".join(r.choices(words[self.lang_script[lang]] if lang in self.lang_script else self.latin,
                                              k=3)) + f" {y}" for y in range(1950, 2025)] for lang in self.all_langs}
            for kind in ("article", "human", "taxon", "category", "settlement")
        }
        self.label_prefix = {lang: f'"{lang}":{{"language":"{lang}","value":"' for lang in self.all_langs + ["en"]}
        self.roots = cube_roots()
        self.countries = list(COUNTRY_WEIGHTS)
        self.country_cum = []
        total = 0
        for w in COUNTRY_WEIGHTS.values():
            total += w
            self.country_cum.append(total)


_VOCAB: _Vocab | None = None


def _vocab() -> _Vocab:
    global _VOCAB
    if _VOCAB is None:
        _VOCAB = _Vocab()
    return _VOCAB


def _hex(r: random.Random, bits: int) -> str:
    return f"{r.getrandbits(bits):0{bits // 4}x}"


def _item_value(q: str) -> str:
    return (f'"datavalue":{{"value":{{"entity-type":"item","numeric-id":{q[1:]},"id":"{q}"}},'
            f'"type":"wikibase-entityid"}},"datatype":"wikibase-item"')


def _time_value(year: int) -> str:
    sign = "+" if year >= 0 else "-"
    return (f'"datavalue":{{"value":{{"time":"{sign}{abs(year):04d}-00-00T00:00:00Z","timezone":0,"before":0,'
            f'"after":0,"precision":9,"calendarmodel":"http://www.wikidata.org/entity/Q1985727"}},"type":"time"}},'
            f'"datatype":"time"')


def _string_value(s: str, datatype: str = "external-id") -> str:
    return f'"datavalue":{{"value":"{s}","type":"string"}},"datatype":"{datatype}"'


def _mono_value(s: str) -> str:
    return f'"datavalue":{{"value":{{"text":"{s}","language":"en"}},"type":"monolingualtext"}},"datatype":"monolingualtext"'


def _coord_value(r: random.Random) -> str:
    return (f'"datavalue":{{"value":{{"latitude":{r.uniform(-60, 70):.6f},"longitude":{r.uniform(-180, 180):.6f},'
            f'"altitude":null,"precision":1.0e-6,"globe":"http://www.wikidata.org/entity/Q2"}},"type":"globecoordinate"}},'
            f'"datatype":"globe-coordinate"')


def _reference(r: random.Random) -> str:
    src = r.choice(("Q328", "Q206855", "Q565", "Q36578", "Q2013"))
    return (f'{{"hash":"{_hex(r, 160)}","snaks":{{"P248":[{{"snaktype":"value","property":"P248",{_item_value(src)}}}],'
            f'"P813":[{{"snaktype":"value","property":"P813",{_time_value(r.randint(2013, 2024))}}}]}},'
            f'"snaks-order":["P248","P813"]}}')


def _statement(r: random.Random, qid: str, prop: str, value: str | None, rank: str = "normal",
               refs: bool = False, quals: bool = False, snaktype: str = "value") -> str:
    h = f"{r.getrandbits(288):072x}"  # the snak's hash and the statement's GUID from one draw
    snak = f'"snaktype":"{snaktype}","property":"{prop}","hash":"{h[:40]}"'
    if value is not None and snaktype == "value":
        snak += "," + value
    else:
        snak += ',"datatype":"wikibase-item"'
    q = ""
    if quals:
        q = (f'"qualifiers":{{"P580":[{{"snaktype":"value","property":"P580","hash":"{_hex(r, 160)}",'
             f'{_time_value(r.randint(1200, 2020))}}}]}},"qualifiers-order":["P580"],')
    ref = f',"references":[{_reference(r)}]' if refs else ""
    g = h[40:].upper()
    guid = f"{qid}${g[:8]}-{g[8:12]}-{g[12:16]}-{g[16:20]}-{g[20:]}"
    return f'{{"mainsnak":{{{snak}}},"type":"statement",{q}"id":"{guid}","rank":"{rank}"{ref}}}'


def _claims(r: random.Random, qid: str, props: list[tuple[str, list[tuple[str | None, str, str]]]]) -> str:
    """props: (property, [(value json or None, rank, snaktype)])."""
    parts = []
    for prop, stmts in props:
        body = ",".join(
            _statement(r, qid, prop, v, rank, refs=r.random() < 0.3, quals=r.random() < 0.06, snaktype=st)
            for v, rank, st in stmts
        )
        parts.append(f'"{prop}":[{body}]')
    return "{" + ",".join(parts) + "}"


def _name(r: random.Random, v: _Vocab, long: bool = False) -> str:
    pool = v.long_names if long else v.names
    return pool[int(r.random() * len(pool))]


def _terms(r: random.Random, v: _Vocab, kind: str, en_label: str, en_desc: str | None, n_langs: int,
           n_alias_langs: int) -> str:
    off = int(r.random() * len(v.all_langs))
    langs = v.lang_ring[off:off + n_langs]
    pre = v.label_prefix
    rnd = r.random
    labels = [pre["en"], en_label, '"}']
    descs = [pre["en"], en_desc, '"}'] if en_desc else []
    templated = v.templated.get(kind)
    year = int(rnd() * 75)
    for lang in langs:
        if lang in v.lang_script:
            pool = v.script_names[lang]
            text = pool[int(rnd() * len(pool))]
        else:
            text = en_label if rnd() < 0.8 else _name(r, v)
        labels += [",", pre[lang], text, '"}']
        if rnd() < 0.7:
            if templated is not None:
                desc = templated[lang][year]
            else:
                pool = v.descs[lang]
                desc = pool[int(rnd() * len(pool))]
            descs += [",", pre[lang], desc, '"}'] if descs else [pre[lang], desc, '"}']
    aliases = []
    for lang in ["en"] + langs[: max(0, n_alias_langs - 1)]:
        if rnd() < 0.5:
            vals = ",".join(f'{{"language":"{lang}","value":"{_name(r, v)}"}}' for _ in range(1 + int(rnd() * 2.5)))
            aliases.append(f'"{lang}":[{vals}]')
    return f'"labels":{{{"".join(labels)}}},"descriptions":{{{"".join(descs)}}},"aliases":{{{",".join(aliases)}}}'


def _sitelinks(r: random.Random, title: str, n: int) -> str:
    if n == 0:
        return '"sitelinks":{}'
    off = int(r.random() * len(WIKIS))
    sites = (WIKIS + WIKIS)[off:off + min(n, len(WIKIS))]
    return '"sitelinks":{' + ",".join(f'"{s}":{{"site":"{s}","title":"{title}","badges":[]}}' for s in sites) + "}"


def _country(r: random.Random, v: _Vocab) -> str:
    return r.choices(v.countries, cum_weights=v.country_cum)[0]


def _entity_line(r: random.Random, v: _Vocab, qid: str, kind: str, label: str, desc: str | None,
                 claims: list[tuple[str, list]], n_sitelinks: int, n_langs: int | None = None) -> str:
    if n_langs is None:
        n_langs = min(len(v.all_langs), int(r.expovariate(1 / LANGS_MEAN)) + 2)
    terms = _terms(r, v, kind, label, desc, n_langs, int(r.random() * 4))
    return (f'{{"type":"item","id":"{qid}",{terms},"claims":{_claims(r, qid, claims)},'
            f'{_sitelinks(r, label, n_sitelinks)},"lastrevid":{r.randint(10**9, 2 * 10**9)}}}')


def _ok(value: str) -> list:
    return [(value, "normal", "value")]


def _common_extra(r: random.Random, v: _Vocab, label: str) -> list:
    """Properties the extractor ignores, on many entities."""
    out = []
    if r.random() < 0.5:
        out.append(("P646", _ok(_string_value(f"/m/0{_hex(r, 24)}"))))
    if r.random() < 0.3:
        out.append(("P373", _ok(_string_value(label, "string"))))
    if r.random() < 0.2:
        out.append(("P910", _ok(_item_value(f"Q{r.randint(1_000_000, 110_000_000)}"))))
    return out


def _special_lines(v: _Vocab) -> list[str]:
    """Properties, the CUBE roots, generic classes and the countries, with their real ids."""
    r = random.Random(SEED + 1)
    lines = []
    for pid, name, dt in (("P31", "instance of", "wikibase-item"), ("P279", "subclass of", "wikibase-item"),
                          ("P17", "country", "wikibase-item"), ("P495", "country of origin", "wikibase-item")):
        lines.append(f'{{"type":"property","datatype":"{dt}","id":"{pid}","labels":{{"en":{{"language":"en",'
                     f'"value":"{name}"}}}},"descriptions":{{}},"aliases":{{}},"claims":{{}},"lastrevid":1}}')
    generic = list(GENERIC)
    for q, name in GENERIC.items():
        parent = "Q35120" if q != "Q35120" else None
        claims = [("P279", _ok(_item_value(parent)))] if parent else []
        lines.append(_entity_line(r, v, q, "class", name, f"class of {name}", claims, 25, 30))
    for i, (q, name) in enumerate(_vocab().roots.items()):
        parent = generic[i % 3]  # entity, object, ... : the roots have labels in the class index
        lines.append(_entity_line(r, v, q, "class", name, f"general class of {name}", [("P279", _ok(_item_value(parent)))], 30, 35))
    for q, name in COUNTRY_NAMES.items():
        claims = [("P31", _ok(_item_value("Q6256"))), ("P17", _ok(_item_value(q)))]
        lines.append(_entity_line(r, v, q, "country", name, "sovereign state", claims, 31, 40))
    return lines


def _class_claims(r: random.Random, v: _Vocab, i: int) -> list:
    c = i // CLASS_EVERY
    roots = list(v.roots)
    if c < 96:
        # top level: two in three under a CUBE root, the rest under generic classes
        parent = roots[c % len(roots)] if c % 3 else list(GENERIC)[c % 5]
        parents = [parent]
    else:
        parents = [f"Q{BASE + r.randrange(c) * CLASS_EVERY}"]
        if r.random() < 0.1:
            parents.append(f"Q{BASE + r.randrange(c) * CLASS_EVERY}")
    prop = "P31" if c % 7 == 3 else "P279"  # some classes are typed by P31 only: their labels are not indexed
    claims = [(prop, [(_item_value(p), "normal", "value") for p in parents])]
    if c % 13 == 5:
        claims.append(("P495", _ok(_item_value(_country(r, v)))))
    if r.random() < 0.05:
        claims.append(("P279" if prop == "P31" else "P31", [(_item_value(r.choice(list(GENERIC))), "deprecated", "value")]))
    return claims


def _cultural_claims(r: random.Random, v: _Vocab, i: int, n_classes: int) -> list:
    claims = []
    if i >= SERIES_EVERY and r.random() < 0.04:
        target = f"Q{BASE + r.randrange(i // SERIES_EVERY) * SERIES_EVERY + 7}"  # an instance without a country
    else:
        target = f"Q{BASE + r.randrange(max(1, n_classes)) * CLASS_EVERY}"
    prop = "P31" if r.random() < 0.85 else "P279"
    edge = [(_item_value(target), "normal", "value")]
    if r.random() < 0.03:
        edge.append((_item_value(f"Q{BASE + r.randrange(max(1, n_classes)) * CLASS_EVERY}"), "deprecated", "value"))
    claims.append((prop, edge))
    if i % SERIES_EVERY != 7 and r.random() < 0.6:
        cp = "P495" if r.random() < 0.6 else "P17"
        stmts = [(_item_value(_country(r, v)), "normal", "value")]
        x = r.random()
        if x < 0.1:
            stmts.append((_item_value(_country(r, v)), "normal", "value"))
        elif x < 0.14:
            stmts.append((_item_value(_country(r, v)), "deprecated", "value"))
        elif x < 0.16:
            stmts.append((None, "normal", "somevalue"))
        claims.append((cp, stmts))
        if r.random() < 0.15:
            claims.append(("P17" if cp == "P495" else "P495", _ok(_item_value(_country(r, v)))))
    if r.random() < 0.3:
        claims.append(("P18", _ok(_string_value(f"{_name(r, v)}.jpg", "commonsMedia"))))
    if r.random() < 0.3:
        claims.append(("P571", _ok(_time_value(r.randint(-800, 2020)))))
    if r.random() < 0.1:
        claims.append(("P2012", _ok(_item_value(f"Q{r.randint(1_000_000, 110_000_000)}"))))
    if r.random() < 0.05:
        claims.append(("P361", _ok(_item_value(f"Q{r.randint(1_000_000, 110_000_000)}"))))
    return claims


def _instance_claims(r: random.Random, v: _Vocab, i: int, n_classes: int) -> tuple[list, str]:
    if i % SERIES_EVERY == 7:
        return _cultural_claims(r, v, i, n_classes), "series"
    x = r.random()
    if x < 0.28:
        claims = [("P31", _ok(_item_value("Q5"))), ("P21", _ok(_item_value(r.choice(("Q6581097", "Q6581072"))))),
                  ("P27", _ok(_item_value(_country(r, v)))), ("P569", _ok(_time_value(r.randint(1500, 2005))))]
        if r.random() < 0.5:
            claims.append(("P106", _ok(_item_value(f"Q{r.randint(1000, 2_000_000)}"))))
        return claims, "human"
    if x < 0.50:
        claims = [("P31", _ok(_item_value("Q13442814"))), ("P1476", _ok(_mono_value(_name(r, v, long=True)))),
                  ("P577", _ok(_time_value(r.randint(1950, 2024)))),
                  ("P356", _ok(_string_value(f"10.{r.randint(1000, 9999)}/{_hex(r, 40)}")))]
        if r.random() < 0.5:
            claims.append(("P2093", [(_string_value(_name(r, v), "string"), "normal", "value") for _ in range(r.randint(1, 5))]))
        return claims, "article"
    if x < 0.60:
        return [("P31", _ok(_item_value("Q16521"))), ("P171", _ok(_item_value(f"Q{r.randint(1000, 9_000_000)}"))),
                ("P225", _ok(_string_value(_name(r, v), "string")))], "taxon"
    if x < 0.68:
        return [("P31", _ok(_item_value("Q4167836"))), ("P301", _ok(_item_value(f"Q{r.randint(1000, 9_000_000)}")))], "category"
    if x < 0.80:
        return [("P31", _ok(_item_value(r.choice(("Q486972", "Q532"))))), ("P17", _ok(_item_value(_country(r, v)))),
                ("P625", _ok(_coord_value(r)))], "settlement"
    return _cultural_claims(r, v, i, n_classes), "cultural"


def _chunk_text(args: tuple[int, int, int]) -> str:
    """Entity lines [start, stop) of the generated part, each ending in ',\\n' (the last one in '\\n')."""
    start, stop, n_generated = args
    v = _vocab()
    r = random.Random(f"{SEED}:{start}")
    out = []
    for i in range(start, stop):
        qid = f"Q{BASE + i}"
        n_classes = i // CLASS_EVERY  # classes before this entity (an entity points at earlier ones only)
        if i % CLASS_EVERY == 0:
            label = _name(r, v)
            kind = "class"
            claims = _class_claims(r, v, i)
            desc = "type of " + _name(r, v).lower()
            sitelinks = r.randint(0, 20)
        else:
            claims, kind = _instance_claims(r, v, i, max(1, n_classes))
            label = _name(r, v, long=kind == "article")
            desc = {"human": "person", "article": "scholarly article published in 2019", "taxon": "species of plant",
                    "category": "Wikimedia category", "settlement": "village in the district"}.get(kind)
            desc = desc or v.descs["it"][int(r.random() * 400)]
            sitelinks = int(r.expovariate(1 / 3)) if kind in ("cultural", "series", "settlement", "human") else r.randint(0, 1)
        claims += _common_extra(r, v, label)
        out.append(_entity_line(r, v, qid, kind, label, desc, claims, sitelinks))
        out.append(",\n" if i < n_generated - 1 else "\n")
    return "".join(out)


def _compress(data: bytes, compression: str) -> bytes:
    if compression == "gz":
        return gzip.compress(data, compresslevel=6, mtime=0)
    if compression == "bz2":
        return bz2.compress(data, 9)
    return data


def _chunk_job(args: tuple[int, int, int, str, bool, bool]) -> tuple[bytes, int]:
    start, stop, n_generated, compression, first, last = args
    text = _chunk_text((start, stop, n_generated))
    if first:
        specials = _special_lines(_vocab())
        text = "[\n" + "".join(s + ",\n" for s in specials) + text
    if last:
        text += "]\n"
    data = text.encode("utf-8")
    return _compress(data, compression), len(data)


def n_specials() -> int:
    return 4 + len(GENERIC) + len(cube_roots()) + len(COUNTRY_NAMES)


def dump_path(workdir: Path, n: int, compression: str) -> Path:
    suffix = {"gz": ".json.gz", "bz2": ".json.bz2", "none": ".json"}[compression]
    roots = hashlib.sha1(" ".join(sorted(cube_roots())).encode()).hexdigest()[:8]  # regenerate if the roots change
    return workdir / f"synthetic-v{GENERATOR_VERSION}-{roots}-{n}{suffix}"


def generate(path: Path, n: int, compression: str, workers: int) -> dict:
    """Write the dump to ``path`` (atomically) and a ``.meta.json`` beside it; reuse both if present."""
    meta_path = path.with_name(path.name + ".meta.json")
    if path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        meta["reused"] = True
        return meta
    n_generated = n - n_specials()
    if n_generated < 1:
        raise SystemExit(f"--entities must be more than {n_specials()}")
    jobs = []
    for start in range(0, n_generated, CHUNK_ENTITIES):
        stop = min(n_generated, start + CHUNK_ENTITIES)
        jobs.append((start, stop, n_generated, compression, start == 0, stop == n_generated))
    t0 = time.perf_counter()
    raw = done = 0
    members = []  # after each job: (file bytes, JSON bytes, entities), so prefixes can be cut at member ends
    tmp = path.with_name(path.name + ".part")
    with open(tmp, "wb") as fh:
        pool = mp.get_context("spawn").Pool(workers) if workers > 1 else None
        try:
            results = pool.imap(_chunk_job, jobs) if pool else map(_chunk_job, jobs)
            for job, (blob, size) in zip(jobs, results):
                fh.write(blob)
                raw += size
                done += job[1] - job[0] + (n_specials() if job[4] else 0)
                members.append((fh.tell(), raw, done))
        finally:
            if pool:
                pool.terminate()
    os.replace(tmp, path)
    meta = {"entities": n, "compression": compression, "json_bytes": raw, "file_bytes": path.stat().st_size,
            "generation_s": round(time.perf_counter() - t0, 1), "generator_version": GENERATOR_VERSION,
            "members": members, "reused": False}
    meta_path.write_text(json.dumps(meta))
    return meta


def prefix_dump(src: Path, src_meta: dict, target: int, compression: str) -> tuple[Path, dict]:
    """A dump of the first members of ``src`` holding about ``target`` entities, closed with ``]``.

    The same entities as the start of the big dump (so the memory runs differ only in size), made by
    copying compressed bytes rather than generating again. Its last entity line keeps its trailing
    comma, which the reader ignores as it does every other one."""
    members = src_meta["members"]
    k = min(range(1, len(members) + 1), key=lambda i: abs(members[i - 1][2] - target))
    file_end, json_end, entities = members[k - 1]
    path = src.with_name(src.name.replace(f"-{src_meta['entities']}.", f"-{src_meta['entities']}-first{entities}."))
    meta_path = path.with_name(path.name + ".meta.json")
    if path.exists() and meta_path.exists():
        return path, {**json.loads(meta_path.read_text()), "reused": True}
    t0 = time.perf_counter()
    with open(src, "rb") as fin, open(path, "wb") as fout:
        left = file_end
        while left:
            block = fin.read(min(left, 16 << 20))
            fout.write(block)
            left -= len(block)
        if k < len(members):
            fout.write(_compress(b"]\n", compression))
    meta = {"entities": entities, "compression": compression, "json_bytes": json_end + (2 if k < len(members) else 0),
            "file_bytes": path.stat().st_size, "generation_s": round(time.perf_counter() - t0, 1),
            "generator_version": GENERATOR_VERSION, "prefix_of": src.name, "reused": False}
    meta_path.write_text(json.dumps(meta))
    return path, meta


# ---------------------------------------------------------------------------------- measurements


def _rss_mb() -> float:
    """Peak RSS of this process so far, in MiB.

    ``getrusage(RUSAGE_SELF).ru_maxrss`` is what we want in principle, but Linux carries it across
    fork+exec (a child reports at least its parent's RSS at fork time), so where /proc is there the
    peak of this process image, VmHWM, is read instead; both are the same high-water mark otherwise.
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def measure_decompress(path: Path) -> dict:
    """Decompress in this process with ``open_dump`` (the gzip/bz2 modules)."""
    from cultureboard.builder.kb_dump import open_dump

    base = _rss_mb()
    t0 = time.perf_counter()
    total = 0
    with open_dump(path) as fh:
        while chunk := fh.read(READ_CHUNK):
            total += len(chunk)
    return {"seconds": time.perf_counter() - t0, "json_bytes": total, "base_rss_mb": base}


def _read_child(command: list[str]) -> dict:
    """Run a decompressing command and read its stdout through a pipe, as the extractor reads its child's."""
    base = _rss_mb()
    t0 = time.perf_counter()
    total = 0
    buf = memoryview(bytearray(PIPE_READ))
    with subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, bufsize=0) as proc:
        try:
            fcntl.fcntl(proc.stdout.fileno(), fcntl.F_SETPIPE_SZ, PIPE_SIZE)
        except (AttributeError, OSError):  # not Linux, or above the system's limit: the default size
            pass
        while n := proc.stdout.readinto(buf):
            total += n
    if proc.returncode:
        raise SystemExit(f"{command[0]} failed ({proc.returncode})")
    return {"seconds": time.perf_counter() - t0, "json_bytes": total, "base_rss_mb": base}


def measure_decompress_tool(path: Path) -> dict:
    """Decompress with the system tool, ``gzip -dc`` or ``bzip2 -dc``, in a child process."""
    return _read_child([SYSTEM_TOOLS[path.suffix], "-dc", "--", str(path)])


def measure_decompress_child(path: Path) -> dict:
    """Decompress with the extractor's own child process (the gzip/bz2 modules in a second interpreter)."""
    from cultureboard.builder.kb_dump import _decompress_command

    return _read_child(_decompress_command(path))


def measure_naive(path: Path) -> dict:
    from cultureboard.builder.kb_dump import open_dump

    base = _rss_mb()
    t0 = time.perf_counter()
    entities = edges = country_claims = 0
    rest = b""
    loads = json.loads

    def walk(line: bytes) -> None:
        nonlocal entities, edges, country_claims
        line = line.strip()
        if line.endswith(b","):
            line = line[:-1]
        if not line or line in (b"[", b"]"):
            return
        e = loads(line)
        entities += 1
        if not e["id"].startswith("Q"):
            return
        claims = e.get("claims", {})
        for prop in ("P31", "P279", "P495", "P17"):
            ids = set()
            for st in claims.get(prop, ()):
                if st.get("rank") == "deprecated":
                    continue
                snak = st["mainsnak"]
                if snak.get("snaktype") != "value" or "datavalue" not in snak:
                    continue
                value = snak["datavalue"]["value"]
                if isinstance(value, dict) and str(value.get("id", "")).startswith("Q"):
                    ids.add(value["id"])
            if prop in ("P31", "P279"):
                edges += len(ids)
            else:
                country_claims += len(ids)

    with open_dump(path) as fh:
        while chunk := fh.read(READ_CHUNK):
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            for line in lines:
                walk(line)
    walk(rest)
    return {"seconds": time.perf_counter() - t0, "entities": entities, "edges": edges,
            "country_claims": country_claims, "base_rss_mb": base}


def measure_extract(path: Path) -> dict:
    from cultureboard.builder import kb_dump
    from cultureboard.builder.artifact_space import extract

    base = _rss_mb()
    phases: dict[str, float] = {"index_s": 0.0, "labels_s": 0.0, "details_s": 0.0}
    passes = {"n": 0}
    cls = kb_dump.DumpKnowledgeBase

    def timed(name, fn):
        def wrapper(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                phases[name] += time.perf_counter() - t
        return wrapper

    orig_blocks = kb_dump.dump_blocks  # every read of the dump goes through it

    def counted_blocks(*a, **k):
        passes["n"] += 1
        return orig_blocks(*a, **k)

    cls._index = timed("index_s", cls._index)
    cls.labels = timed("labels_s", cls.labels)
    cls.details = timed("details_s", cls.details)
    kb_dump.dump_blocks = counted_blocks
    t0 = time.perf_counter()
    rows, report = extract(dump=str(path), concepts=CONCEPTS, countries=COUNTRIES)
    seconds = time.perf_counter() - t0
    d = report["dump"]
    return {"seconds": seconds, "entities": d["entities"], "edges": d["edges"], "candidates": d["candidates"],
            "malformed": d["malformed"], "artifacts": len(rows), "dump_passes": passes["n"], "base_rss_mb": base,
            **{k: round(v, 2) for k, v in phases.items()}}


MEASURES = {"decompress": measure_decompress, "decompress_tool": measure_decompress_tool,
            "decompress_child": measure_decompress_child, "naive": measure_naive, "extract": measure_extract}
DECOMPRESSION = ("decompress", "decompress_tool", "decompress_child")


def run_measure(kind: str, path: Path, profile: Path | None = None) -> dict:
    """Run one measurement in a fresh interpreter; its peak RSS is its own."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--measure", kind, "--file", str(path)]
    if profile:
        cmd += ["--profile", str(profile)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"measurement {kind} failed ({proc.returncode})")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _cpu_s() -> float:
    """CPU seconds of this process (all threads) and of its children that have ended."""
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return sum(ru.ru_utime + ru.ru_stime for ru in usage)


def _child_main(kind: str, path: Path, profile: str | None) -> None:
    cpu0 = _cpu_s()
    if profile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
        result = MEASURES[kind](path)
        prof.disable()
        prof.dump_stats(profile)
    else:
        result = MEASURES[kind](path)
    result["peak_rss_mb"] = _rss_mb()
    result["cpu_s"] = _cpu_s() - cpu0  # all threads and child processes; includes the imports a measurement makes
    print(json.dumps(result))


# -------------------------------------------------------------------------------------- report


def _versions() -> str:
    out = []
    for mod in ("msgspec", "numpy"):
        try:
            out.append(f"{mod} {__import__(mod).__version__}")
        except ImportError:
            out.append(f"{mod} missing")
    return ", ".join(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entities", type=int, default=1_000_000)
    ap.add_argument("--compression", choices=["gz", "bz2", "none"], default="gz")
    ap.add_argument("--workdir", type=Path, default=Path(__file__).resolve().parent / "_work")
    ap.add_argument("--keep", action="store_true", help="keep the generated dumps (and reuse them next time)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run the three measurements this many times, interleaved, and keep each one's fastest run")
    ap.add_argument("--no-scaling", action="store_true", help="skip the N/4 and N/2 memory runs")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1), help="generator processes")
    ap.add_argument("--measure", choices=sorted(MEASURES), help=argparse.SUPPRESS)
    ap.add_argument("--file", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--profile", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.measure:
        _child_main(args.measure, args.file, args.profile)
        return

    args.workdir.mkdir(parents=True, exist_ok=True)
    n, comp = args.entities, args.compression
    made: list[Path] = []
    metas = {}
    big = dump_path(args.workdir, n, comp)
    dumps = [(big, generate(big, n, comp, args.workers))]
    if not args.no_scaling:  # N/4 and N/2: the first members of the big dump
        dumps = [prefix_dump(big, dumps[0][1], n // 4, comp), prefix_dump(big, dumps[0][1], n // 2, comp)] + dumps
    for path, meta in dumps:
        metas[meta["entities"]] = (path, meta)
        if not meta["reused"]:
            made.append(path)
        print(f"# dump {path.name}: {meta['entities']:,} entities, {meta['json_bytes'] / 1e6:.0f} MB JSON, "
              f"{meta['file_bytes'] / 1e6:.0f} MB on disk, {meta['json_bytes'] / meta['entities'] / 1024:.2f} KiB/line, "
              + ("reused" if meta["reused"] else f"made in {meta['generation_s']} s"), file=sys.stderr, flush=True)
    sizes = sorted(metas)

    path, meta = metas[n]
    kinds = ["decompress"]
    if comp != "none":
        if shutil.which(SYSTEM_TOOLS[path.suffix]):
            kinds.append("decompress_tool")
        else:
            print(f"# {SYSTEM_TOOLS[path.suffix]} not found: its decompression is not measured", file=sys.stderr)
        kinds.append("decompress_child")
    kinds += ["naive", "extract"]
    load0 = os.getloadavg()
    try:
        results = {}
        for rep in range(max(1, args.repeat)):
            for kind in kinds:
                r = run_measure(kind, path)
                print(f"# {kind} (run {rep + 1}): {r}", file=sys.stderr, flush=True)
                if kind not in results or r["seconds"] < results[kind]["seconds"]:
                    r["peak_rss_mb"] = max(r["peak_rss_mb"], results.get(kind, {}).get("peak_rss_mb", 0))
                    results[kind] = r
                else:
                    results[kind]["peak_rss_mb"] = max(r["peak_rss_mb"], results[kind]["peak_rss_mb"])
        scaling = {}
        for size in sizes[:-1]:
            scaling[size] = run_measure("extract", metas[size][0])
            print(f"# extract at {size}: {scaling[size]}", file=sys.stderr, flush=True)
        scaling[n] = results["extract"]
    finally:
        if not args.keep:
            for p in made:
                p.unlink(missing_ok=True)
                p.with_name(p.name + ".meta.json").unlink(missing_ok=True)

    jb, fb = meta["json_bytes"], meta["file_bytes"]
    thr = {k: n / r["seconds"] for k, r in results.items()}
    print()
    print(f"Synthetic dump: {n:,} entities, {jb / 1e6:,.0f} MB of JSON ({jb / n / 1024:.1f} KiB a line), "
          f"{comp} {fb / 1e6:,.0f} MB. Machine: {os.cpu_count()} cores, {platform.machine()}, "
          f"Python {platform.python_version()}, {_versions()}. Fastest of {max(1, args.repeat)} run(s) each, "
          f"each in its own process; load average {load0[0]:.1f} before, {os.getloadavg()[0]:.1f} after.")
    print()
    module = {"gz": "gzip", "bz2": "bz2"}.get(comp)
    labels = {
        "decompress": f"decompression only, in-process (open_dump, {module} module)" if module else "reading only (plain file)",
        "decompress_tool": f"decompression only, `{SYSTEM_TOOLS.get(path.suffix)} -dc` child process",
        "decompress_child": f"decompression only, the extractor's child process ({module} module)",
        "naive": "naive json.loads + walk",
        "extract": "extractor (extract)",
    }
    fastest = max((k for k in DECOMPRESSION if k in thr), key=thr.get)
    print("| measurement | wall s | CPU s | entities/s | MB/s JSON | MB/s compressed | peak RSS MB | vs fastest decompression | vs naive |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for kind, r in results.items():
        s = r["seconds"]
        print(f"| {labels[kind]} | {s:.1f} | {r['cpu_s']:.1f} | {n / s:,.0f} | {jb / 1e6 / s:.0f} | {fb / 1e6 / s:.1f} | "
              f"{r['peak_rss_mb']:.0f} | {thr[kind] / thr[fastest]:.2f}x | {thr[kind] / thr['naive']:.2f}x |")
    print()
    print(f"Fastest decompression: {labels[fastest]}; the extractor runs at {thr['extract'] / thr[fastest]:.2f}x its "
          f"throughput. CPU s include child processes; peak RSS is the measuring process's own.")
    x = results["extract"]
    print()
    print(f"Extractor phases: index pass {x['index_s']:.1f} s, labels {x['labels_s']:.1f} s, details "
          f"{x['details_s']:.1f} s, {x['dump_passes']} pass(es) over the dump; {x['edges']:,} edges, "
          f"{x['candidates']:,} candidates, {x['artifacts']:,} artifact rows. Naive walk found "
          f"{results['naive']['edges']:,} edges" + (" (same)." if results["naive"]["edges"] == x["edges"] else " (DIFFERENT)."))
    print()
    print("| entities | JSON MB | edges | candidates | peak RSS MB | RSS over imports MB | added bytes per added edge |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    prev = None
    for size in sizes:
        r = scaling[size]
        over = r["peak_rss_mb"] - r["base_rss_mb"]
        marginal = "" if prev is None else f"{(over - prev[0]) * 1024 * 1024 / max(r['edges'] - prev[1], 1):.0f}"
        print(f"| {size:,} | {metas[size][1]['json_bytes'] / 1e6:,.0f} | {r['edges']:,} | {r['candidates']:,} | "
              f"{r['peak_rss_mb']:.0f} | {over:.0f} | {marginal} |")
        prev = (over, r["edges"])


if __name__ == "__main__":
    main()
