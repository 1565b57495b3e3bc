"""Extract an artifact space from a knowledge base and write it (``cultureboard artifacts``)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from pathlib import Path

import pyarrow.parquet as pq

from cultureboard.atomic import atomic_dir, check_replaceable
from cultureboard.countries import load_countries
from cultureboard.errors import CultureboardError
from cultureboard.records import ARTIFACT_SCHEMA, table_from_rows
from cultureboard.text import NAME, text_problem

from .kb import qid_number
from .kb_dump import DumpKnowledgeBase
from .kb_sparql import SparqlKnowledgeBase
from .traversal import extract_artifacts, load_concepts, select_concepts


def option_error(name: str, value, config, problem: str, fix: str) -> CultureboardError:
    """The error for option ``name`` (``concepts``, ``max_malformed``): from the command line (``config``
    None: a usage error naming ``--max-malformed VALUE``) or from a build config file (bad input naming
    the file and its entry)."""
    if config is None:
        shown = ",".join(value) if isinstance(value, list) and all(isinstance(v, str) for v in value) else str(value)
        return CultureboardError(f"--{name.replace('_', '-')} {shown if shown.strip() else repr(shown)}", problem, fix,
                                 exit_code=2)
    return CultureboardError(f"{config} ({name}: {value!r:.60})", problem, fix)


def option_list(value, name: str, config=None) -> list[str]:
    """A non-empty list of non-empty strings; a comma-separated string is split."""
    names = [v.strip() for v in value.split(",")] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(v, str) for v in names):
        raise option_error(name, value, config, "is not a list of names", "give names separated by commas")
    names = [v.strip() for v in names if v.strip()]
    if not names:
        raise option_error(name, value, config, "names nothing (empty after splitting at commas)",
                            "give at least one name (names are separated by commas)")
    return names


def option_int(value, name: str, minimum: int, config=None) -> int:
    """An integer of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise option_error(name, value, config, f"is not an integer of at least {minimum}",
                            f"give a whole number >= {minimum}")
    return value


def option_seconds(value, name: str, config=None) -> float:
    """A finite number of seconds above 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise option_error(name, value, config, "is not a number of seconds above 0", "give e.g. 1800 for 30 minutes")
    return float(value)


def option_fraction(value, name: str, config=None) -> float:
    """A finite number between 0 and 1 (a fraction of lines)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:  # NaN fails 0 <= NaN
        raise option_error(name, value, config, "is not a fraction between 0 and 1", "give e.g. 0.01 for 1%")
    return float(value)


def open_knowledge_base(dump: str | None, sparql: str | None, country_qids: list[str], max_malformed: float = 0.01,
                        root_qids: tuple[str, ...] = ()):
    """The dump reader or the SPARQL client; exactly one of the two sources must be given."""
    if bool(dump) == bool(sparql):
        raise CultureboardError(
            "--dump/--sparql", "give exactly one knowledge base",
            "pass --dump PATH for a Wikidata JSON dump, or --sparql URL for a SPARQL endpoint",
            exit_code=2,
        )
    if dump:
        return DumpKnowledgeBase(dump, country_qids, max_malformed=max_malformed, label_qids=root_qids)
    return SparqlKnowledgeBase(sparql)


def extract(
    *, dump: str | None = None, sparql: str | None = None, concepts: list[str], countries: list[str],
    hops: int = 4, concepts_file: str | None = None, max_malformed: float = 0.01, native_labels: bool = False,
) -> tuple[list[dict], dict]:
    """Artifact rows plus a report of how they were found (source, counts, malformed lines, the artifacts left out
    because their name is not a text a dataset may hold: :func:`cultureboard.text.text_problem`), and with
    ``native_labels`` the artifacts' Wikidata labels in the countries' languages (for the native prompt variants:
    read only when one is built)."""
    concepts, countries = option_list(concepts, "concepts"), option_list(countries, "countries")
    hops, max_malformed = option_int(hops, "hops", 1), option_fraction(max_malformed, "max_malformed")
    selected = select_concepts(load_concepts(concepts_file), concepts)
    wanted = load_countries().resolve(countries)
    roots = tuple(r.qid for c in selected for r in c.roots)
    kb = open_knowledge_base(dump, sparql, [c.qid for c in wanted], max_malformed, roots)
    with contextlib.closing(kb):
        rows, traversal = extract_artifacts(kb, selected, wanted, hops)
        problems = [text_problem(r["name"], NAME) for r in rows]
        refused = [{"qid": r["qid"], "problem": f"its name {p}"} for r, p in zip(rows, problems) if p is not None]
        rows = [r for r, p in zip(rows, problems) if p is None]
        labels = (kb.native_labels(sorted({r["qid"] for r in rows}), sorted({t for c in wanted for t in c.languages}))
                  if native_labels else None)
    report = {
        "source": {"dump": str(dump)} if dump else {"sparql": sparql},
        "concepts": {c.name: [r.qid for r in c.roots] for c in selected},
        "countries": [c.iso2 for c in wanted],
        "hops": hops,
        "traversal": dataclasses.asdict(traversal),
        "artifacts": len(rows),
        **({"names_refused": refused} if refused else {}),  # names a dataset may not hold: the artifact is left out
    }
    if labels is not None:  # {qid: {BCP 47 tag: label}} in the languages of the requested countries
        report["native_labels"] = {q: dict(sorted(labels[q].items())) for q in sorted(labels, key=qid_number)}
    if dump:
        report["dump"] = dataclasses.asdict(kb.report)
    else:
        report["sparql_queries"] = kb.queries
    return rows, report


def artifacts(
    *, out: str | Path, dump: str | None = None, sparql: str | None = None, concepts: list[str],
    countries: list[str], hops: int = 4, concepts_file: str | None = None, max_malformed: float = 0.01,
) -> dict:
    """Write ``out/artifacts.parquet`` and ``out/report.json``; returns the report."""
    check_replaceable(Path(out), kind="artifacts")  # before the work
    rows, report = extract(
        dump=dump, sparql=sparql, concepts=concepts, countries=countries, hops=hops,
        concepts_file=concepts_file, max_malformed=max_malformed,
    )
    with atomic_dir(out, kind="artifacts") as tmp:
        pq.write_table(table_from_rows(rows, ARTIFACT_SCHEMA), tmp / "artifacts.parquet")
        (tmp / "report.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return report
