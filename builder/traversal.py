"""CUBE Algorithm 1: cultural artifacts found by walking a knowledge base down from concept roots.

Starting from a concept's root QIDs, follow ``instance of`` (P31) and ``subclass of`` (P279) edges
downwards. A child with ``country of origin`` (P495) or ``country`` (P17) is an artifact: it is
emitted (children of the roots are hop 1) and not traversed further. A child without either is
traversed at the next hop. The walk stops after ``hops`` hops; a node seen before is not visited
again, so cycles terminate. An artifact is emitted once per requested country it has; one whose
countries are all outside the request is dropped (and, having a country, not traversed either).

Where a node is reachable along several paths, the shortest wins; ties go to the root listed first
in the concept file, then the smaller parent QID, then P31 before P279, so the result is the same
whatever order the knowledge base answers in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import yaml

from cultureboard.countries import Country
from cultureboard.errors import CultureboardError

from .eras import era_of_year
from .kb import Edge, KnowledgeBase, qid_number
from .yaml_file import load_yaml


@dataclass(frozen=True)
class Root:
    qid: str
    name: str
    subcategory: str | None = None


@dataclass(frozen=True)
class Concept:
    name: str
    roots: tuple[Root, ...]


def load_concepts(path: str | Path | None = None) -> dict[str, Concept]:
    """Read the concept file (packaged ``data/concepts.yaml`` unless ``path`` is given): aliases and deep nesting
    refused as in every user YAML file, every root a QID of at most 18 digits."""
    fix = "write a YAML mapping: concept -> {roots: [{qid: Q..., name: ..., subcategory: ...}]}"
    try:
        if path is None:
            data = yaml.safe_load(resources.files("cultureboard.builder").joinpath("data/concepts.yaml").read_text(
                encoding="utf-8"))
        else:
            data = load_yaml(path, "a concept file", fix)
        concepts = {
            name: Concept(name, tuple(Root(str(r["qid"]), str(r["name"]), r.get("subcategory")) for r in spec["roots"]))
            for name, spec in data.items()
        }
        bad = [r.qid for c in concepts.values() for r in c.roots if not re.fullmatch(r"Q[1-9][0-9]{0,17}", r.qid)]
        if bad:
            raise CultureboardError(path, f"has roots that are not Wikidata QIDs: {bad[:3]}", fix)
        return concepts
    except (OSError, yaml.YAMLError, KeyError, TypeError, AttributeError) as exc:
        raise CultureboardError(
            path or "data/concepts.yaml", f"is not a readable concept file ({exc.__class__.__name__}: {exc})",
            fix,
        ) from None


def select_concepts(all_concepts: dict[str, Concept], names: list[str]) -> list[Concept]:
    unknown = [n for n in names if n not in all_concepts]
    if unknown:
        raise CultureboardError(
            f"--concepts {','.join(names)}", f"unknown concept(s) {', '.join(unknown)}",
            f"use some of {', '.join(all_concepts)}, or add them to a --concepts-file",
        )
    return [all_concepts[n] for n in names]


@dataclass
class Found:
    """How the traversal first reached a node."""

    hop: int
    root_index: int
    parent: str
    via: str


@dataclass
class TraversalReport:
    visited: dict[str, int] = field(default_factory=dict)  # per concept
    artifacts: dict[str, int] = field(default_factory=dict)  # per concept, before the country filter
    outside_countries: dict[str, int] = field(default_factory=dict)  # per concept: dropped for their country


def walk(kb: KnowledgeBase, concept: Concept, hops: int) -> tuple[dict[str, Found], dict[str, list[tuple[str, str]]]]:
    """Run Algorithm 1 for one concept: (artifact qid -> how found, artifact qid -> its country claims)."""
    seen: dict[str, Found] = {r.qid: Found(0, i, r.qid, "") for i, r in enumerate(concept.roots)}
    frontier = [r.qid for r in concept.roots]
    artifacts: dict[str, Found] = {}
    claims: dict[str, list[tuple[str, str]]] = {}
    for hop in range(1, hops + 1):
        edges = kb.children(frontier)
        rank = lambda e: (seen[e.parent].root_index, qid_number(e.parent), e.prop)  # noqa: E731
        first: dict[str, Edge] = {}
        for e in sorted(edges, key=rank):
            if e.child not in seen and e.child not in first:
                first[e.child] = e
        if not first:
            break
        for child, e in first.items():
            seen[child] = Found(hop, seen[e.parent].root_index, e.parent, e.prop)
        country_claims = kb.countries(first)
        frontier = []
        for child in sorted(first, key=qid_number):
            if child in country_claims:
                artifacts[child] = seen[child]
                claims[child] = country_claims[child]
            else:
                frontier.append(child)
    return artifacts, claims


def check_roots(kb: KnowledgeBase, concepts: list[Concept]) -> None:
    """A root that the knowledge base does not know (no label, no child) is an error in the concept file."""
    roots = {r.qid: (c.name, r.name) for c in concepts for r in c.roots}
    labelled = kb.labels(roots)
    with_children = {e.parent for e in kb.children(set(roots) - set(labelled))}
    missing = [q for q in roots if q not in labelled and q not in with_children]
    if missing:
        named = ", ".join(f"{q} ({roots[q][1]}, concept {roots[q][0]})" for q in missing)
        raise CultureboardError(
            f"root {named}", "is not in the knowledge base (no English label and no child)",
            "check the QID in the concepts file, or use a dump or endpoint that contains it",
        )


def extract_artifacts(
    kb: KnowledgeBase, concepts: list[Concept], countries: list[Country], hops: int = 4
) -> tuple[list[dict], TraversalReport]:
    """Artifact rows (``ARTIFACT_SCHEMA`` columns) for the requested concepts and countries."""
    if hops < 1:
        raise CultureboardError(f"--hops {hops}", "must be at least 1", "use the CUBE default of 4")
    check_roots(kb, concepts)
    by_qid = {c.qid: c for c in countries}
    report = TraversalReport()
    found_rows: list[tuple[Concept, str, Found, str, Country]] = []
    for concept in concepts:
        artifacts, claims = walk(kb, concept, hops)
        report.artifacts[concept.name] = len(artifacts)
        dropped = 0
        for qid, found in artifacts.items():
            matches: dict[str, str] = {}
            for prop, country_qid in claims[qid]:
                if country_qid in by_qid and (country_qid not in matches or prop == "P495"):
                    matches[country_qid] = prop
            if not matches:
                dropped += 1
            for country_qid, prop in matches.items():
                found_rows.append((concept, qid, found, prop, by_qid[country_qid]))
        report.outside_countries[concept.name] = dropped

    details = kb.details({qid for _, qid, _, _, _ in found_rows})
    parent_labels = kb.labels({f.parent for _, _, f, _, _ in found_rows})
    periods = kb.start_years({p for d in details.values() for p in d.time_period})
    rows = []
    for concept, qid, found, prop, country in found_rows:
        d = details[qid]
        root = concept.roots[found.root_index]
        year = d.inception_year
        if year is None:
            period_years = [periods[p] for p in d.time_period if p in periods]
            year_for_era = min(period_years) if period_years else None
        else:
            year_for_era = year
        rows.append(
            {
                "qid": qid,
                "name": d.name or qid,
                "aliases": d.aliases,
                "description": d.description,
                "country": country.iso2,
                "concept": concept.name,
                "category": concept.name,
                "subcategory": root.subcategory,
                "era": era_of_year(year_for_era),
                "inception_year": year,
                "time_period": d.time_period,
                "source": "wikidata",
                "popularity": d.sitelinks,
                "image": d.image,
                "image_license": None,
                "commons_category": d.commons_category,
                "hop": found.hop,
                "root": root.qid,
                "parent": found.parent,
                "parent_name": parent_labels.get(found.parent) or (root.name if found.parent == root.qid else None),
                "found_via": found.via,
                "country_property": prop,
                **d.claims,
            }
        )
    rows.sort(key=lambda r: (r["concept"], r["country"], qid_number(r["qid"])))
    return rows, report
