"""The family registry: a benchmark family is one registered plug-in.

A :class:`Family` declares its prompt sets (:class:`PromptSetSpec`: scoring function, units, shard unit),
its metric cards (:class:`MetricCard`: formula, direction, range, version, unit, headline, chance level,
validity evidence) and its typed options (a dataclass). :func:`register` adds it and fails loudly on any
name collision; the engine, the CLI (``cultureboard list-metrics``, ``--option``) and the site read everything
family-specific from here, so adding a family edits none of them.

Options are set as ``key=value`` strings (``--option repetitions=20``) or from Python, converted to the
dataclass field's type, validated (choices, ranges through the dataclass's ``__post_init__``), recorded in
provenance and made part of the comparability key.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from cultureboard.errors import CultureboardError

#: The unit of a metric whose rows are one per image; its bootstrap resamples prompts.
IMAGE_UNIT = "image"
#: What a card may rank by (see :class:`MetricCard`); "none" is descriptive.
DIRECTIONS = ("higher", "lower", "target", "none")


@dataclass(frozen=True)
class Evidence:
    """What is known about a metric's validity, e.g. its correlation with human judgements in a paper."""

    statement: str  # "Spearman with human faithfulness 0.04"
    source: str  # "CULTIVate, Table 3"
    value: float | None = None
    reported: bool = True  # taken from a paper, not measured by us


@dataclass(frozen=True)
class MetricCard:
    """A metric's card: shown in results, by ``cultureboard list-metrics`` and on the site.

    ``version`` is bumped whenever the computed value can change (results of different versions are never
    ranked together). ``unit`` names what one score row is about (``image``, or a unit kind the prompt
    set declares: ``pool``, ``chain``, ``ladder``, ...). ``primary`` marks the headline of the prompt sets
    that produce it. ``chance`` states the value a random answer gets, where one exists. ``proxy_for``
    names the paper's (usually human-rated) construct that this automatic score only approximates.

    ``direction`` is what the leaderboard ranks by: ``higher`` or ``lower`` is better, ``target`` (closer to
    ``target`` is better: ranked by ``|value - target|``), or ``none`` (descriptive: shown with its CI, never
    ranked, coloured or badged). ``direction_evidence`` says where the paper shows which way humans prefer
    (table or section, and the sign of the correlation, or the paper's own ranking rule); a ranked card
    without it is refused. ``cluster`` names the prompt field whose value groups prompts that share their
    randomness (CuRe: every ladder of a category shares the category's P(c) images); the summary's bootstrap
    then resamples those clusters first and prompts within each drawn cluster (a two-stage bootstrap).
    ``bounded`` = (low, high) marks a bounded and discrete metric (an accuracy, a top-1 hit, a share of yes
    answers: values in [low, high] piled at the ends): its interval is the Wilson score interval at the unit
    level (:func:`..results.stats.bounded_ci`), which keeps its coverage at the bounds where a bootstrap
    collapses to a point.
    """

    name: str
    family: str
    title: str
    formula: str
    direction: str  # "higher", "lower", "target" (closer to ``target``) or "none": descriptive, never ranked
    range: str
    scorers: tuple[str, ...]  # registry names of the scorers it reads
    source: str  # the paper and section it follows
    version: int
    unit: str = IMAGE_UNIT
    primary: bool = False
    chance: str | None = None
    proxy_for: str | None = None
    description: str = ""  # plain language, for the family page
    validity: tuple[Evidence, ...] = ()
    direction_evidence: str = ""  # where the paper shows which way is better; required when ranked
    target: float | None = None  # with direction "target": the best value
    cluster: str | None = None  # prompt field of the bootstrap's first stage (shared randomness), if any
    bounded: tuple[float, float] | None = None  # (low, high) of a bounded and discrete metric: Wilson intervals
    evidence: Mapping[str, Any] | None = None  # a plug-in's own evidence record (else data/reported/evidence.yaml's)

    def __post_init__(self):
        if self.direction not in DIRECTIONS:
            raise ValueError(f"metric {self.name}: direction must be one of {', '.join(DIRECTIONS)}, not {self.direction!r}")
        if (self.direction == "target") != (self.target is not None):
            raise ValueError(f"metric {self.name}: a target is given exactly when the direction is 'target'")
        if not isinstance(self.version, int) or self.version < 1:
            raise ValueError(f"metric {self.name}: version must be a positive integer")
        if self.bounded is not None and not (len(self.bounded) == 2 and self.bounded[0] < self.bounded[1]):
            raise ValueError(f"metric {self.name}: bounded is (low, high) with low < high, not {self.bounded!r}")
        if not self.name.startswith(self.family + "."):
            raise ValueError(f"metric {self.name}: names start with the family name ({self.family}.)")

    @property
    def ranked(self) -> bool:
        return self.direction != "none"

    def to_dict(self) -> dict:
        """The card as data, with its validity tier and smallest meaningful difference
        (:func:`~cultureboard.evaluators.results.tiers.card_evidence`: its ``evidence`` record, or the one that
        ``data/reported/evidence.yaml`` holds for its name)."""
        from ..results.tiers import card_evidence, record_tier

        out = dataclasses.asdict(self)
        own = dict(self.evidence) if self.evidence is not None else None
        return {**out, **(record_tier(own, self.direction) if own is not None else card_evidence(self.name, self.direction))}


@dataclass(frozen=True)
class PromptSetSpec:
    """How one prompt set is scored.

    ``score(ctx)`` returns score rows (see :func:`.context.score_row`). ``units`` maps each unit kind its
    cards use (other than ``image``) to a function prompt row -> unit id (None: the prompt is in no such
    unit); coverage counts the units of the whole prompt set. ``shard_unit(prompt)`` is the key that keeps
    every image one unit reads in one shard (sharded = unsharded, exactly). ``slice_fields`` are prompt
    fields, beyond the standard ones, that the summary slices by (e.g. an edit step).
    """

    name: str
    score: Callable
    metrics: tuple[str, ...]
    shard_unit: Callable[[dict], str]
    units: Mapping[str, Callable[[dict], str | None]] = field(default_factory=dict)
    slice_fields: tuple[str, ...] = ()
    cross_slices: tuple[tuple[str, str], ...] = ()

    def unit_of(self, kind: str, prompt: dict) -> str | None:
        return prompt["prompt_id"] if kind == IMAGE_UNIT else self.units[kind](prompt)


@dataclass(frozen=True)
class Family:
    name: str
    title: str
    description: str  # plain language: what it measures and how
    papers: Mapping[str, str]  # label -> URL (paper, code and data)
    prompt_sets: tuple[PromptSetSpec, ...]
    metrics: tuple[MetricCard, ...]
    options: type  # a dataclass of typed options with defaults
    # options -> {metric: version} for the metrics whose formula an option switches (e.g. {"x.y": "1+mean"})
    variant_versions: Callable[[Any], Mapping[str, str]] | None = None

    def card(self, name: str) -> MetricCard:
        return next(m for m in self.metrics if m.name == name)

    def recorded_version(self, name: str, options: Any) -> int | str:
        """The version provenance records for metric ``name`` scored with ``options``: the card's, or where an
        option switches the formula the family's ``variant_versions`` entry, so that the variants' results have
        different metric versions and are never ranked together."""
        variants = self.variant_versions(options) if self.variant_versions else {}
        return variants.get(name, self.card(name).version)

    def primary(self, prompt_set: str) -> str:
        """The headline metric of ``prompt_set``."""
        spec = next(p for p in self.prompt_sets if p.name == prompt_set)
        return next(m for m in spec.metrics if self.card(m).primary)


_FAMILIES: dict[str, Family] = {}
_PROMPT_SETS: dict[str, tuple[Family, PromptSetSpec]] = {}
_METRICS: dict[str, MetricCard] = {}


def register(family: Family) -> Family:
    """Add ``family`` to the registry; a name already taken (family, prompt set or metric) is an error."""
    problems = _check(family)
    if problems:
        raise ValueError(f"cannot register family {family.name!r}: " + "; ".join(problems))
    _FAMILIES[family.name] = family
    for spec in family.prompt_sets:
        _PROMPT_SETS[spec.name] = (family, spec)
    _METRICS.update({m.name: m for m in family.metrics})
    return family


def unregister(name: str) -> None:
    """Remove a family (tests register toy families and take them out again)."""
    family = _FAMILIES.pop(name)
    for spec in family.prompt_sets:
        _PROMPT_SETS.pop(spec.name, None)
    for m in family.metrics:
        _METRICS.pop(m.name, None)


def _check(family: Family) -> list[str]:
    problems = []
    if family.name in _FAMILIES:
        problems.append(f"the family name {family.name!r} is taken")
    taken = [s.name for s in family.prompt_sets if s.name in _PROMPT_SETS]
    taken += [m.name for m in family.metrics if m.name in _METRICS]
    if taken:
        problems.append(f"names already registered by another family: {', '.join(taken)}")
    names = [m.name for m in family.metrics]
    if len(set(names)) != len(names):
        problems.append("duplicate metric names")
    if not dataclasses.is_dataclass(family.options):
        problems.append("options must be a dataclass")
    from ..results.tiers import record_problem

    for m in family.metrics:
        if m.family != family.name:
            problems.append(f"metric {m.name} names family {m.family!r}")
        if m.evidence is not None and (problem := record_problem(dict(m.evidence))):
            problems.append(f"metric {m.name}: its evidence record {problem}")
    for spec in family.prompt_sets:
        unknown = [m for m in spec.metrics if m not in names]
        if unknown:
            problems.append(f"prompt set {spec.name} lists metrics without a card: {', '.join(unknown)}")
            continue
        primaries = [m for m in spec.metrics if family.card(m).primary]
        if len(primaries) != 1:
            problems.append(f"prompt set {spec.name} must have exactly one primary metric, has {primaries}")
        elif family.card(primaries[0]).direction == "none":
            problems.append(f"prompt set {spec.name}: the headline {primaries[0]} must have a direction to rank by")
        units = {family.card(m).unit for m in spec.metrics} - {IMAGE_UNIT} - set(spec.units)
        if units:
            problems.append(f"prompt set {spec.name} does not declare the units {sorted(units)} its cards use")
    return problems


def load_families() -> dict[str, Family]:
    """Every registered family (importing each module of :mod:`cultureboard.evaluators.families` once)."""
    from .. import families

    for info in pkgutil.iter_modules(families.__path__):
        importlib.import_module(f"{families.__name__}.{info.name}")
    return dict(_FAMILIES)


def family_of(prompt_set: str) -> tuple[Family, PromptSetSpec]:
    """The family and spec that score ``prompt_set``."""
    load_families()
    if prompt_set not in _PROMPT_SETS:
        raise CultureboardError(f"prompt set {prompt_set}", "has no metrics in this version of the evaluator",
                                f"evaluate a submission for one of {', '.join(sorted(_PROMPT_SETS))}")
    return _PROMPT_SETS[prompt_set]


def metric_cards() -> dict[str, MetricCard]:
    load_families()
    return dict(_METRICS)


# --------------------------------------------------------------------------------------------- options

def parse_options(family: Family, given: Mapping[str, Any] | None = None, *,
                  overrides: list[str] | tuple[str, ...] = ()) -> Any:
    """The family's options dataclass from ``given`` (Python values) and ``overrides`` (``key=value`` strings).

    A key may be written plain (``repetitions``) or with the family prefix (``cube.repetitions``).
    Unknown keys, values of the wrong type and values the dataclass rejects are one-line errors.
    """
    fields = {f.name: f for f in dataclasses.fields(family.options)}
    values: dict[str, Any] = {}
    hints = typing.get_type_hints(family.options)

    def fail(source: str, problem: str) -> CultureboardError:
        listing = ", ".join(f"{name} ({_type_name(hints[name])}, default {f.default!r})" for name, f in fields.items())
        return CultureboardError(source, problem, f"options of {family.name}: {listing or 'none'}", exit_code=2)

    for key, value in (given or {}).items():
        name = key.removeprefix(family.name + ".")
        if name not in fields:
            raise fail(f"option {key}", f"is not an option of {family.name}")
        values[name] = value
    for item in overrides:
        key, sep, text = item.partition("=")
        name = key.strip().removeprefix(family.name + ".")
        if not sep or name not in fields:
            raise fail(f"--option {item}", "is not KEY=VALUE with a known key")
        try:
            values[name] = _convert(text.strip(), hints[name])
        except ValueError as exc:
            raise fail(f"--option {item}", str(exc)) from None
    for name, value in values.items():
        if not _fits(value, hints[name]):
            whole = isinstance(value, int) and not isinstance(value, bool)
            raise fail(f"option {name}={value!r}",
                       f"must be {_type_name(hints[name])}{'; an int is 0 to 2**63 - 1' if whole else ''}")
    try:
        return family.options(**values)
    except (TypeError, ValueError) as exc:
        raise fail("options", str(exc)) from None


def options_dict(options: Any) -> dict:
    return dataclasses.asdict(options)


def _type_name(tp) -> str:
    if typing.get_origin(tp) is typing.Literal:
        return "one of " + ", ".join(map(str, typing.get_args(tp)))
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return " or ".join(_type_name(t) for t in typing.get_args(tp))
    return getattr(tp, "__name__", str(tp))


def _convert(text: str, tp) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if text.lower() in ("none", "null", "") and type(None) in args:
            return None
        for t in (a for a in args if a is not type(None)):
            try:
                return _convert(text, t)
            except ValueError:
                continue
        raise ValueError(f"{text!r} is not {_type_name(tp)}")
    if origin is typing.Literal:
        for choice in args:
            if str(choice) == text:
                return choice
        raise ValueError(f"{text!r} is not {_type_name(tp)}")
    if tp is bool:
        if text.lower() in ("true", "1", "yes"):
            return True
        if text.lower() in ("false", "0", "no"):
            return False
        raise ValueError(f"{text!r} is not true or false")
    if tp is int:
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"{text!r} is not an integer") from None
    if tp is float:
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a number") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{text!r} is not a finite number")
        return value
    if tp is str:
        return text
    raise ValueError(f"options of type {_type_name(tp)} cannot be set from text")


def _fits(value: Any, tp) -> bool:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, t) for t in args)
    if origin is typing.Literal:
        return value in args
    if tp is type(None):
        return value is None
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
    if tp is int:  # counts, sizes and seeds: non-negative and within 64 bits
        return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63
    return isinstance(value, tp)
