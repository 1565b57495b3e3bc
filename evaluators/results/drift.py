"""``cultureboard compare-results``: has a submission's score moved between two evaluations?

The health check re-scores a fixed reference submission with the code of ``main`` and compares the
new ``summary.json`` with the committed one. Results are meant to be reproducible bit for bit on the
same runner; this comparison says what moved, one record per difference, and compares every field that can
change a number a user sees:

* ``value``: a metric x slice whose ``value`` moved by more than ``tolerance`` (absolute:
  ``|new - old| > tolerance``), or became (or stopped being) null; ``ci``: the same of either end of its CI;
* ``entry``: any other field of a metric x slice entry that differs at all (``n_images``, ``n_prompts``,
  ``coverage``, ``complete``, ``n_refused``, ``n_flagged``, ``flags``, ``ci_note``, ``p``, ...), or is in one
  entry only;
* ``repeated``: a metric x slice given more than once in one summary (each such key is one record, however
  many times it repeats): that summary is not one result;
* ``missing`` / ``added``: a metric x slice entry present in only the baseline / only the new summary;
* ``submission``: the scored submission changed (any field of ``provenance.submission``: its sha256, id, model):
  the two results do not score the same images, so no value difference means anything;
* ``dataset_revision``: the prompt set's dataset revision or the reference photographs' revision changed;
* ``settings``: a setting of the run (``provenance.settings``: seed, bootstrap resamples, ...) or a family
  option (``provenance.options``) differs, or only one of the two gives it: the two runs did not ask the same
  question, so "the provenance matches" is never said of them;
* ``scorer_revision``: a scorer (by name) whose checkpoint, resolved ``revision``, dtype, preprocessing or any
  other recorded field changed, or that only one of the two used;
* ``provenance``: any other field of the provenance: the metric versions, the device and dtype, the family and
  prompt set, the declared refusals, the counts of each fallback (``notes``);
* ``card``: a metric card (``metrics_info``) whose version, direction, target, unit, chance, clusters, scorers or
  validity evidence differs, or that only one summary has (its prose is not compared).

Not compared, since they are what the check tests or cannot change a number: ``provenance.code`` (the code's
version, commit and packages) and ``provenance.dataset.folder`` (a folder's name). Entries are matched by
(``metric``, ``slice_type``, ``slice``). Each record has ``kind``, ``metric``, ``slice_type``, ``slice`` (None for
provenance records), ``baseline``, ``new`` and ``delta`` (values only) and a one-line ``message``.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

from cultureboard.errors import CultureboardError

SUMMARY = "summary.json"
KINDS = ("submission", "dataset_revision", "settings", "scorer_revision", "provenance", "card", "repeated", "missing",
         "added", "value", "ci", "entry")
#: Provenance fields that are never drift: the code under test, and the name of the dataset's folder.
NOT_COMPARED = ("code", "dataset.folder")
#: The kind of a difference in each part of the provenance (anything else: ``provenance``).
PROVENANCE_KINDS = {"submission": "submission", "dataset": "dataset_revision", "settings": "settings",
                    "options": "settings"}
#: A metric card's prose: what it says about the metric, not what it computes or how it is ranked.
CARD_PROSE = ("title", "formula", "source", "proxy_for", "description", "direction_evidence")
_SHOWN = 80  # characters of a value in a message


def load_summary(path: str | Path) -> dict:
    """A results folder's ``summary.json`` (or the file itself)."""
    path = Path(path)
    file = path / SUMMARY if path.is_dir() else path
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CultureboardError(file, "does not exist", "pass a results folder RESULTS/<submission id> that "
                                "`cultureboard evaluate` wrote (or its summary.json)", exit_code=2) from None
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: not UTF-8, not JSON, an int of 4300+ digits
        raise CultureboardError(file, f"cannot be read as JSON ({exc.__class__.__name__}: {str(exc)[:200]})",
                                "re-run `cultureboard evaluate` to rewrite it", exit_code=2) from None
    if not isinstance(data, dict) or not isinstance(data.get("metrics"), list):
        raise CultureboardError(file, "is not a cultureboard summary (no 'metrics' list)",
                                "pass the summary.json that `cultureboard evaluate` wrote", exit_code=2)
    return data


def _record(kind: str, message: str, metric=None, slice_type=None, slice_=None, baseline=None, new=None, delta=None) -> dict:
    return {"kind": kind, "metric": metric, "slice_type": slice_type, "slice": slice_, "baseline": baseline,
            "new": new, "delta": delta, "message": message}


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN - 3] + "..."


def _entries(summary: dict, source: str) -> tuple[dict[tuple, dict], Counter]:
    """The summary's entries by (metric, slice type, slice), and how often each key is given."""
    out, seen = {}, Counter()
    for i, entry in enumerate(summary["metrics"]):
        try:
            key = (entry["metric"], entry["slice_type"], entry["slice"])
            seen[key] += 1
        except (KeyError, TypeError):
            raise CultureboardError(f"{source}: metrics[{i}]", "lacks metric, slice_type or slice",
                                    "pass the summary.json that `cultureboard evaluate` wrote", exit_code=2) from None
        out.setdefault(key, entry)
    return out, seen


def _number(value) -> float | None:
    """A finite number as a float; None for anything else (a bool, a string, NaN, an integer beyond a float)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _flat(value, prefix: str) -> dict[str, object]:
    """A nested mapping as {dotted key: leaf value} (a non-mapping, lists included: itself under ``prefix``)."""
    if not isinstance(value, dict):
        return {prefix: value}
    out: dict[str, object] = {}
    for key, item in value.items():
        out.update(_flat(item, f"{prefix}.{key}" if prefix else str(key)))
    return out


def _same(a, b) -> bool:
    """Equal values of the same type, all the way down (5 and 5.0, or True and 1, differ)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_same, a, b))
    return a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))


_ABSENT = "not given"


def _compare_fields(was: dict, now: dict, record) -> list[dict]:
    """``record(key, old, new)`` for each key of the flat mappings ``was`` and ``now`` whose values differ."""
    return [record(key, was.get(key, _ABSENT), now.get(key, _ABSENT))
            for key in sorted(set(was) | set(now), key=str)
            if key not in was or key not in now or not _same(was[key], now[key])]


def _by_name(items) -> dict:
    """The dicts of a list by their ``name`` field."""
    return {item.get("name"): item for item in items or [] if isinstance(item, dict)} if isinstance(items, list) else {}


def _compared(provenance: dict) -> dict[str, object]:
    """The provenance's fields that are compared, flat, but for the scorers (compared by name)."""
    flat = _flat({k: v for k, v in provenance.items() if k != "scorers"}, "")
    return {k: v for k, v in flat.items() if not any(k == n or k.startswith(n + ".") for n in NOT_COMPARED)}


def _provenance_drifts(old: dict, new: dict) -> list[dict]:
    was, now = (p if isinstance(p := summary.get("provenance"), dict) else {} for summary in (old, new))

    def record(key, a, b):
        kind = PROVENANCE_KINDS.get(key.split(".", 1)[0], "provenance")
        if key == "submission.sha256":
            return _record(kind, f"the scored submission changed (sha256 {a} -> {b})", baseline=a, new=b)
        if key == "dataset.revision":
            return _record(kind, f"the dataset revision changed ({a} -> {b})", baseline=a, new=b)
        return _record(kind, f"{key}: {_shown(a)} -> {_shown(b)}", baseline=a, new=b)

    drifts = _compare_fields(_compared(was), _compared(now), record)
    old_scorers, new_scorers = _by_name(was.get("scorers")), _by_name(now.get("scorers"))
    for name in sorted(set(old_scorers) | set(new_scorers), key=str):
        a, b = old_scorers.get(name), new_scorers.get(name)
        if a is None or b is None or (a.get("model_id"), a.get("revision")) != (b.get("model_id"), b.get("revision")):
            ids = [s and f"{s.get('model_id')}@{s.get('revision')}" for s in (a, b)]
            drifts.append(_record("scorer_revision", f"scorer {name}: {ids[0] or 'not used'} -> {ids[1] or 'not used'}",
                                  baseline=ids[0], new=ids[1]))
            continue
        drifts += _compare_fields(_flat(a, ""), _flat(b, ""), lambda key, x, y: _record(
            "scorer_revision", f"scorer {name}: {key} {_shown(x)} -> {_shown(y)}", baseline=x, new=y))
    old_cards, new_cards = _by_name(old.get("metrics_info")), _by_name(new.get("metrics_info"))
    for name in sorted(set(old_cards) | set(new_cards), key=str):
        a, b = old_cards.get(name), new_cards.get(name)
        if a is None or b is None:
            drifts.append(_record("card", f"card {name}: {'not given' if a is None else 'given'} -> "
                                  f"{'not given' if b is None else 'given'}", metric=name))
            continue
        drifts += _compare_fields(*({k: v for k, v in card.items() if k not in CARD_PROSE} for card in (a, b)),
                                  lambda key, x, y: _record("card", f"card {name}: {key} {_shown(x)} -> {_shown(y)}",
                                                            metric=name, baseline=x, new=y))
    return drifts


def _entry_drifts(key: tuple, a: dict, b: dict, tolerance: float) -> list[dict]:
    metric, slice_type, slice_ = key
    where = f"{metric} [{slice_type}={slice_}]"
    out = []
    for field, kind in (("value", "value"), ("ci_low", "ci"), ("ci_high", "ci")):
        x, y = _number(a.get(field)), _number(b.get(field))
        label = "" if field == "value" else f"{field} "
        if x is None and y is None:
            continue
        if x is None or y is None:
            out.append(_record(kind, f"{where}: {label}{x} -> {y}", metric, slice_type, slice_, baseline=x, new=y))
        elif abs(y - x) > tolerance:
            out.append(_record(kind, f"{where}: {label}{x:.6g} -> {y:.6g} (change {y - x:+.6g}, tolerance "
                               f"{tolerance:g})", metric, slice_type, slice_, baseline=x, new=y, delta=y - x))
    rest = [{k: v for k, v in e.items() if k not in ("metric", "slice_type", "slice", "value", "ci_low", "ci_high")}
            for e in (a, b)]
    out += _compare_fields(*rest, lambda field, x, y: _record(
        "entry", f"{where}: {field} {_shown(x)} -> {_shown(y)}", metric, slice_type, slice_, baseline=x, new=y))
    return out


def compare_results(baseline_dir: str | Path, new_dir: str | Path, tolerance: float = 0.02) -> list[dict]:
    """Every drift of ``new_dir``'s summary from ``baseline_dir``'s (empty: nothing moved); see the module."""
    if not isinstance(tolerance, (int, float)) or isinstance(tolerance, bool) or not tolerance >= 0 or math.isinf(tolerance):
        raise CultureboardError(f"--tolerance {tolerance}", "is not a finite number >= 0",
                                "give the largest absolute change that is not drift, e.g. --tolerance 0.02", exit_code=2)
    old, new = load_summary(baseline_dir), load_summary(new_dir)
    drifts = _provenance_drifts(old, new)
    (old_entries, old_seen), (new_entries, new_seen) = _entries(old, str(baseline_dir)), _entries(new, str(new_dir))
    for side, seen in (("baseline", old_seen), ("new results", new_seen)):
        for (metric, slice_type, slice_), n in seen.items():
            if n > 1:
                drifts.append(_record("repeated", f"{metric} [{slice_type}={slice_}]: given {n:,} times in the {side}",
                                      metric, slice_type, slice_))
    for key in sorted(set(old_entries) | set(new_entries), key=lambda k: tuple(str(x) for x in k)):
        metric, slice_type, slice_ = key
        where = f"{metric} [{slice_type}={slice_}]"
        if key not in new_entries:
            drifts.append(_record("missing", f"{where}: in the baseline, not in the new results", metric, slice_type,
                                  slice_, baseline=old_entries[key].get("value")))
        elif key not in old_entries:
            drifts.append(_record("added", f"{where}: in the new results, not in the baseline", metric, slice_type,
                                  slice_, new=new_entries[key].get("value")))
        else:
            drifts += _entry_drifts(key, old_entries[key], new_entries[key], tolerance)
    return drifts


def format_drifts(drifts: list[dict]) -> str:
    """One line per drift (``KIND: MESSAGE``), or a line saying that nothing moved."""
    if not drifts:
        return "no drift: every metric x slice is within tolerance and the provenance matches"
    counts = {k: sum(d["kind"] == k for d in drifts) for k in KINDS}
    lines = [f"{d['kind']}: {d['message']}" for d in drifts]
    lines.append("drift: " + ", ".join(f"{n} {k}" for k, n in counts.items() if n))
    return "\n".join(lines)
