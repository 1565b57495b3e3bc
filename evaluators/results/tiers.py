"""Validity tiers: how strongly the seed papers' human evidence supports ranking models by a metric.

Every card with a direction has one record in ``data/reported/evidence.yaml`` (the metric's evidence as
data: kind, statistic, value as printed, the human-human ceiling where published, the human target, the prompt
domain, the paper's table, the seed's own words, and the smallest difference a reader should act on). The tier
follows from the record by one rule (:data:`RULE`, version :data:`RULE_VERSION`):

* ``validated``: a metric-human correlation (Spearman, Pearson or Kendall) with ``|r| >= 0.4`` and, where the
  paper publishes a human-human ceiling, ``|r| >= 0.6 * ceiling``;
* ``indicative``: such a correlation with ``|r| >= 0.2``;
* ``diagnostic``: a weaker correlation, a figure with a caveat (measured in another benchmark's study, for
  another use than comparing models, or shown failing by its own paper), or no evidence at all;
* ``arrow only``: the paper's own ranking rule (a table's arrow) and no human study;
* ``own measure``: the project's own measure (no paper defines it);
* ``descriptive``: a card without a direction (never ranked whatever its evidence).

Only :data:`RANKED_TIERS` get rank numbers; the rest are shown with values and intervals. A record may state a
``gate`` (:mod:`.gates`): what removes a known cheat from the metric's ranking on a board the cheat would top.
Results record :data:`RULE_VERSION`
(provenance ``settings.validity_rule``), so results derived under another rule are never ranked together.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import yaml

from cultureboard.errors import CultureboardError

from .gates import gate_problem

EVIDENCE = Path(__file__).parent / "data" / "reported" / "evidence.yaml"
#: Bumped whenever the rule below, the records' fields or any record's tier, smallest difference or gate changes.
#: 2: card-stated gates (``gate``, :mod:`.gates`); a language-parity gap claimed only where its base is above chance.
RULE_VERSION = 2
RULE = ("validated where a metric-human correlation has |r| >= 0.4 and, where a human-human ceiling is "
        "published, |r| >= 0.6 x the ceiling; indicative from |r| >= 0.2; otherwise diagnostic (also a figure with "
        "a caveat, or no evidence); a paper's arrow alone is 'arrow only' and the project's own measures 'own "
        "measure'; a card without a direction is descriptive. Only validated and indicative metrics are ranked, and on a "
        "board where a cheat control tops every model only through the gate its card states, tested on that control.")
#: Tiers from strongest to weakest (a prompt set's headline is its metric of the first tier it has).
TIERS = ("validated", "indicative", "arrow only", "diagnostic", "own measure", "descriptive")
RANKED_TIERS = ("validated", "indicative")
VALIDATED_R, INDICATIVE_R, CEILING_SHARE = 0.4, 0.2, 0.6
CORRELATIONS = ("spearman", "pearson", "kendall")
KINDS = ("correlation", "arrow", "own", "none")
_REQUIRED = {"metrics", "evidence", "source", "smallest_difference"}
_OPTIONAL = {"statistic", "value", "ceiling", "human", "domain", "seed", "quotes", "caveat", "gate"}
_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")


def tier_of(record: dict | None, direction: str) -> str:
    """The tier of a card with ``direction`` whose evidence is ``record`` (see the module docstring)."""
    if direction == "none":
        return "descriptive"
    if record is None or record["evidence"] == "none" or record.get("caveat"):
        return "diagnostic"
    if record["evidence"] == "own":
        return "own measure"
    if record["evidence"] == "arrow":
        return "arrow only"
    if record.get("statistic") not in CORRELATIONS:
        return "diagnostic"
    r, ceiling = abs(float(record["value"])), record.get("ceiling")
    if r >= VALIDATED_R and (ceiling is None or r >= CEILING_SHARE * float(ceiling)):
        return "validated"
    return "indicative" if r >= INDICATIVE_R else "diagnostic"


def why(record: dict | None, direction: str) -> str:
    """One sentence: the card's place in the rule."""
    tier = tier_of(record, direction)
    if tier == "descriptive":
        return "no direction: shown, never ranked"
    if record is None:
        return "no evidence record"
    if record["evidence"] in ("own", "arrow", "none"):
        return {"own": "the project's own measure", "arrow": "the paper's ranking rule only, no human study",
                "none": "no human evidence bears on it"}[record["evidence"]] + f" ({record['source']})"
    text = f"{record['statistic']} {record['value']} with {record.get('human', 'people')} ({record['source']})"
    if record.get("ceiling"):
        text += f", {abs(float(record['value'])) / float(record['ceiling']):.2f} of the human-human {record['ceiling']}"
    if record.get("caveat"):
        text += f"; but {record['caveat']}"
    return text


@lru_cache(maxsize=4)
def _records(path: str) -> dict[str, dict]:
    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise CultureboardError(path, f"cannot be read as YAML ({exc})", "fix the file's YAML syntax") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("records"), list):
        raise CultureboardError(path, "has no records: list", "give every ranked card's evidence under records:")
    out: dict[str, dict] = {}
    for i, raw in enumerate(doc["records"], 1):
        where = f"{path}: record {i}"
        problem = _problem(raw)
        if problem:
            raise CultureboardError(where, problem, "see the keys described at the top of the file")
        for name in raw["metrics"]:
            if name in out:
                raise CultureboardError(where, f"repeats the metric {name}", "give each metric one record")
            out[name] = {k: v for k, v in raw.items() if k != "metrics"}
    return out


def record_problem(raw) -> str | None:
    """What is wrong with an evidence record (a plug-in card's own, or one of the file's), or None."""
    if isinstance(raw, dict):
        raw = {"metrics": [], **raw}
    return _problem(raw)


def _problem(raw) -> str | None:
    if not isinstance(raw, dict):
        return "is not a mapping"
    missing, unknown = sorted(_REQUIRED - set(raw)), sorted(set(raw) - _REQUIRED - _OPTIONAL)
    if missing or unknown:
        return f"keys: missing {missing}, unknown {unknown}"
    if raw["evidence"] not in KINDS:
        return f"evidence is {raw['evidence']!r}, not one of {', '.join(KINDS)}"
    if raw["evidence"] == "correlation":
        if not {"statistic", "value", "human", "domain", "quotes"} <= set(raw):
            return "a correlation needs statistic, value, human, domain and quotes"
        for key in ("value", "ceiling"):
            if raw.get(key) is not None and not (isinstance(raw[key], str) and _NUMBER.fullmatch(raw[key])):
                return f"{key} must be a number as printed, in quotes (got {raw[key]!r})"
    if "gate" in raw and (problem := gate_problem(raw["gate"])):
        return problem
    smd = raw["smallest_difference"]
    if not isinstance(smd, dict) or set(smd) != {"value", "reason"} or not isinstance(smd["value"], (int, float)) \
            or smd["value"] <= 0 or not str(smd["reason"]).strip():
        return "smallest_difference must be {value: a positive number, reason: why}"
    return None


def evidence_records(path: str | Path = EVIDENCE) -> dict[str, dict]:
    """metric name -> its evidence record (without ``metrics``), loaded and checked once."""
    return _records(str(path))


def card_evidence(name: str, direction: str, path: str | Path = EVIDENCE) -> dict:
    """:func:`record_tier` of the record that ``path`` holds for the card ``name`` (None where it holds none)."""
    return record_tier(evidence_records(path).get(name), direction)


def record_tier(record: dict | None, direction: str) -> dict:
    """What a card records about its validity: ``evidence`` (the record or None), ``tier``, ``tier_reason``,
    ``smallest_difference`` (the value, or None), its ``smallest_difference_reason`` and the ``gate`` that removes
    a known cheat from its ranking (:mod:`.gates`; None where it states none)."""
    smd = (record or {}).get("smallest_difference") or {}
    return {"evidence": record, "tier": tier_of(record, direction), "tier_reason": why(record, direction),
            "smallest_difference": smd.get("value"), "smallest_difference_reason": smd.get("reason"),
            "gate": (record or {}).get("gate")}


def ranked_tier(card: dict) -> bool:
    """Whether a card (a ``metrics_info`` entry) is of a tier that gets rank numbers; a card recorded without a
    tier (scored before the rule) is not."""
    return card.get("tier") in RANKED_TIERS


def tier_order(tier: str | None) -> int:
    """Position of ``tier`` in :data:`TIERS` (an unknown or missing tier last)."""
    return TIERS.index(tier) if tier in TIERS else len(TIERS)
