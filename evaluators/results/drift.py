"""``cultureboard compare-results``: has a submission's score moved between two evaluations?

The health check re-scores a fixed reference submission with the code of ``main`` and compares the
new ``summary.json`` with the committed one. Results are meant to be reproducible bit for bit on the
same runner; this comparison says what moved, one record per difference:

* ``value``: a metric x slice whose ``value`` moved by more than ``tolerance`` (absolute:
  ``|new - old| > tolerance``), or became (or stopped being) null;
* ``missing`` / ``added``: a metric x slice entry present in only the baseline / only the new summary;
* ``scorer_revision``: a scorer (by name) whose checkpoint (``model_id``) or resolved ``revision``
  changed, or that only one of the two used;
* ``dataset_revision``: the prompt set's dataset revision changed;
* ``settings``: a setting of the run (``provenance.settings``: seed, bootstrap resamples, ...) or a family
  option (``provenance.options``) differs, or only one of the two gives it: the two runs did not ask the same
  question, so "the provenance matches" is never said of them;
* ``submission``: the scored submission changed (its ``submission.sha256``): the two results do not
  score the same images, so no value difference means anything.

Entries are matched by (``metric``, ``slice_type``, ``slice``). Each record has ``kind``, ``metric``,
``slice_type``, ``slice`` (None for provenance records), ``baseline``, ``new`` and ``delta`` (values
only) and a one-line ``message``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from cultureboard.errors import CultureboardError

SUMMARY = "summary.json"
KINDS = ("submission", "dataset_revision", "settings", "scorer_revision", "missing", "added", "value")


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


def _get(mapping: dict, dotted: str):
    for key in dotted.split("."):
        mapping = mapping.get(key) if isinstance(mapping, dict) else None
    return mapping


def _record(kind: str, message: str, metric=None, slice_type=None, slice_=None, baseline=None, new=None, delta=None) -> dict:
    return {"kind": kind, "metric": metric, "slice_type": slice_type, "slice": slice_, "baseline": baseline,
            "new": new, "delta": delta, "message": message}


def _entries(summary: dict, source: str) -> dict[tuple, dict]:
    out = {}
    for i, entry in enumerate(summary["metrics"]):
        try:
            key = (entry["metric"], entry["slice_type"], entry["slice"])
        except (KeyError, TypeError):
            raise CultureboardError(f"{source}: metrics[{i}]", "lacks metric, slice_type or slice",
                                    "pass the summary.json that `cultureboard evaluate` wrote", exit_code=2) from None
        out[key] = entry
    return out


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
    """A nested mapping as {dotted key: leaf value} (a non-mapping: itself under ``prefix``)."""
    if not isinstance(value, dict):
        return {prefix: value}
    out: dict[str, object] = {}
    for key, item in value.items():
        out.update(_flat(item, f"{prefix}.{key}"))
    return out


def compare_results(baseline_dir: str | Path, new_dir: str | Path, tolerance: float = 0.02) -> list[dict]:
    """Every drift of ``new_dir``'s summary from ``baseline_dir``'s (empty: nothing moved); see the module."""
    if not isinstance(tolerance, (int, float)) or isinstance(tolerance, bool) or not tolerance >= 0 or math.isinf(tolerance):
        raise CultureboardError(f"--tolerance {tolerance}", "is not a finite number >= 0",
                                "give the largest absolute change that is not drift, e.g. --tolerance 0.02", exit_code=2)
    old, new = load_summary(baseline_dir), load_summary(new_dir)
    drifts: list[dict] = []

    old_sub, new_sub = _get(old, "provenance.submission.sha256"), _get(new, "provenance.submission.sha256")
    if old_sub != new_sub:
        drifts.append(_record("submission", f"the scored submission changed (sha256 {old_sub} -> {new_sub})",
                              baseline=old_sub, new=new_sub))
    old_rev, new_rev = _get(old, "provenance.dataset.revision"), _get(new, "provenance.dataset.revision")
    if old_rev != new_rev:
        drifts.append(_record("dataset_revision", f"the dataset revision changed ({old_rev} -> {new_rev})",
                              baseline=old_rev, new=new_rev))
    for part in ("settings", "options"):
        was = _flat(_get(old, f"provenance.{part}") or {}, part)
        now = _flat(_get(new, f"provenance.{part}") or {}, part)
        for key in sorted(set(was) | set(now)):
            if key not in now or key not in was or was[key] != now[key] or type(was[key]) is not type(now[key]):
                a, b = was.get(key, "not given"), now.get(key, "not given")
                drifts.append(_record("settings", f"{key}: {a!r} -> {b!r}", baseline=was.get(key), new=now.get(key)))
    old_scorers = {s.get("name"): s for s in _get(old, "provenance.scorers") or [] if isinstance(s, dict)}
    new_scorers = {s.get("name"): s for s in _get(new, "provenance.scorers") or [] if isinstance(s, dict)}
    for name in sorted(set(old_scorers) | set(new_scorers), key=str):
        a, b = old_scorers.get(name), new_scorers.get(name)
        was = a and f"{a.get('model_id')}@{a.get('revision')}"
        now = b and f"{b.get('model_id')}@{b.get('revision')}"
        if was != now:
            drifts.append(_record("scorer_revision", f"scorer {name}: {was or 'not used'} -> {now or 'not used'}",
                                  metric=None, baseline=was, new=now))

    old_entries, new_entries = _entries(old, str(baseline_dir)), _entries(new, str(new_dir))
    for key in sorted(set(old_entries) | set(new_entries), key=lambda k: tuple(str(x) for x in k)):
        metric, slice_type, slice_ = key
        where = f"{metric} [{slice_type}={slice_}]"
        if key not in new_entries:
            drifts.append(_record("missing", f"{where}: in the baseline, not in the new results", metric, slice_type,
                                  slice_, baseline=old_entries[key].get("value")))
            continue
        if key not in old_entries:
            drifts.append(_record("added", f"{where}: in the new results, not in the baseline", metric, slice_type,
                                  slice_, new=new_entries[key].get("value")))
            continue
        a, b = _number(old_entries[key].get("value")), _number(new_entries[key].get("value"))
        if a is None and b is None:
            continue
        if a is None or b is None:
            drifts.append(_record("value", f"{where}: {a} -> {b}", metric, slice_type, slice_, baseline=a, new=b))
        elif abs(b - a) > tolerance:
            drifts.append(_record("value", f"{where}: {a:.6g} -> {b:.6g} (change {b - a:+.6g}, tolerance {tolerance:g})",
                                  metric, slice_type, slice_, baseline=a, new=b, delta=b - a))
    return drifts


def format_drifts(drifts: list[dict]) -> str:
    """One line per drift (``KIND: MESSAGE``), or a line saying that nothing moved."""
    if not drifts:
        return "no drift: every metric x slice is within tolerance and the provenance matches"
    counts = {k: sum(d["kind"] == k for d in drifts) for k in KINDS}
    lines = [f"{d['kind']}: {d['message']}" for d in drifts]
    lines.append("drift: " + ", ".join(f"{n} {k}" for k, n in counts.items() if n))
    return "\n".join(lines)
