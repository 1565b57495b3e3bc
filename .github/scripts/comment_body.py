"""comment.yml: the body of the pull-request comment, from the artifact of a validate or evaluate run.

The artifact is untrusted data (a pull request from a fork can rewrite validate.yml, so its report may say
anything): every file is read with a size cap, every string from it made inert markdown (:func:`esc`: no control or
bidirectional characters, a bounded length, and every markdown and HTML punctuation character as an entity, so
no link, mention, table cell or tag can be formed), numbers printed only when they are finite numbers, and the
pull request number taken only when it is a positive integer. Standard library only: comment.yml installs nothing.

Environment: KIND (validate | evaluate), ARTIFACT (the downloaded folder), HEAD_SHA and RUN_URL (of the run),
OUT (the JSON file to write: {kind, marker, pr, body}; comment.yml's script posts it).
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

MAX_FILE = 5 * 2**20
MAX_ROWS = 50
MAX_BODY = 60_000
_UNSAFE = re.compile(r"[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_PUNCTUATION = re.compile(r"[\\`*_{}\[\]()#+\-.!|<>~&@:=$%\"'/]")
_SHA = re.compile(r"[0-9a-f]{7,40}")


def esc(value, limit: int = 300) -> str:
    """Untrusted text as inert markdown."""
    text = _UNSAFE.sub(" ", "" if value is None else str(value))
    if len(text) > limit:
        text = text[:limit] + "…"
    return _PUNCTUATION.sub(lambda m: f"&#{ord(m[0])};", text)


def num(x, digits: int = 4) -> str:
    return f"{x:.{digits}f}" if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else "–"


def read_json(path: Path):
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_FILE:
            return None
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def pr_number(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 10**10 else None


def sha(value) -> str:
    return str(value)[:12] if isinstance(value, str) and _SHA.fullmatch(value) else "unknown"


def validate_body(artifact: Path, head: str, run_url: str) -> tuple[int | None, str]:
    meta = read_json(artifact / "pr.json") or {}
    files = sorted((p for p in artifact.glob("*.json") if re.fullmatch(r"\d+\.json", p.name)), key=lambda p: int(p.stem))
    reports = [read_json(p) for p in files]
    lines = [] if reports else ["The validation run did not write a report (see the run log)."]
    all_valid = bool(reports)
    for report in reports:
        if not isinstance(report, dict) or not isinstance(report.get("problems"), list):
            all_valid = False
            lines += ["", "### A report that could not be read", "", "The validator stopped before writing it: see the run log."]
            continue
        problems = [p for p in report["problems"] if isinstance(p, dict)]
        errors = [p for p in problems if p.get("severity") == "error"]
        warnings = [p for p in problems if p.get("severity") != "error"]
        valid = not errors and report.get("valid") is True
        all_valid = all_valid and valid
        name = esc(report.get("submission"), 120) if report.get("submission") else "pull request scope"
        checked = report.get("checked") if isinstance(report.get("checked"), dict) else {}
        counts = ", ".join(f"{esc(k, 40)} {num(v, 0)}" for k, v in list(checked.items())[:10])
        verdict = "valid" if valid else "NOT VALIDATED" if not errors else "INVALID"
        lines += ["", f"### {name}: {verdict}", "",
                  f"{len(errors)} errors, {len(warnings)} warnings" + (f" (checked: {counts})" if counts else "")]
        unchecked = report.get("unchecked") if isinstance(report.get("unchecked"), list) else []
        lines += [f"Not checked: {esc(u)}" for u in unchecked[:5]]
        shown = (errors + warnings)[:MAX_ROWS]
        if shown:
            lines += ["", "| | file | problem | fix | code |", "|---|---|---|---|---|"]
            lines += [f"| {'❌' if p.get('severity') == 'error' else '⚠️'} | {esc(p.get('file'), 200)} | "
                      f"{esc(p.get('message'))} | {esc(p.get('fix'))} | {esc(p.get('code'), 60)} |" for p in shown]
            if len(errors) + len(warnings) > len(shown):
                lines += ["", f"…and {len(errors) + len(warnings) - len(shown)} more: run `cultureboard validate` "
                              "locally or see the run log."]
    body = [f"## cultureboard validation: {'✅ valid' if all_valid else '❌ problems found'}", "",
            f"Commit `{sha(head)}` · [run log]({run_url})", *lines, "",
            "A maintainer will review the submission and add the `evaluate` label to score it." if all_valid else
            "Fix every error (each line names the fix and the command that makes it), push, and this comment will update."]
    return pr_number(meta.get("pr")), "\n".join(body)


def _value(e) -> str:
    if not isinstance(e, dict):
        return "–"
    return f"{num(e.get('value'))} [{num(e.get('ci_low'))}, {num(e.get('ci_high'))}]"


def standing_lines(standing) -> list[str]:
    """The new model beside the top three of each prompt set (site/standing.py's record)."""
    if not isinstance(standing, dict) or not isinstance(standing.get("prompt_sets"), list):
        return []
    lines = ["", "### Beside the models on the board", ""]
    for s in standing["prompt_sets"][:10]:
        if not isinstance(s, dict):
            continue
        rank = s.get("rank") if isinstance(s.get("rank"), dict) else None
        where = (f"rank {num(rank.get('best'), 0)}–{num(rank.get('worst'), 0)} of {num(rank.get('of'), 0)}" if rank
                 else "not ranked")
        lines += [f"**{esc(s.get('prompt_set'), 80)}**, headline {esc(s.get('metric'), 80)} "
                  f"({esc(s.get('direction'), 20)} is better): {esc(s.get('submission'), 120)} {_value(s.get('value'))}, "
                  f"{where} among {num(s.get('compared'), 0)} comparable models", ""]
        top = [t for t in s.get("top") or [] if isinstance(t, dict)][:3]
        if not top:
            lines += ["No comparable model is on the board yet.", ""]
            continue
        lines += ["| model | headline [95% CI] | difference [95% CI] | p | |", "|---|---|---|---|---|"]
        for t in top:
            d = t.get("difference") if isinstance(t.get("difference"), dict) else {}
            lines.append(f"| {esc(t.get('display') or t.get('submission'), 120)} | {_value(t.get('value'))} | "
                         f"{_value(d)} | {num(d.get('p'), 3)} | {esc(d.get('verdict'), 60)} |")
        lines.append("")
    return lines + ["The difference is this model's minus the other's, per unit (prompt, pool, chain), as goodness "
                    "(higher is better); it differs when its 95% CI excludes 0."]


def evaluate_body(artifact: Path, head: str, run_url: str) -> tuple[int | None, str | None]:
    meta = read_json(artifact / "meta.json") or {}
    summary = read_json(artifact / "summary.json")
    if not isinstance(summary, dict) or not isinstance(summary.get("metrics"), list):
        return None, None
    rows = [m for m in summary["metrics"] if isinstance(m, dict) and m.get("slice_type") == "overall"][:100]
    table = ["| metric | value | 95% CI | prompts | images | coverage |", "|---|---|---|---|---|---|"]
    table += [f"| {esc(m.get('metric'), 80)} | {num(m.get('value'))} | {num(m.get('ci_low'))} – {num(m.get('ci_high'))} "
              f"| {num(m.get('n_prompts'), 0)} | {num(m.get('n_images'), 0)} | {num(m.get('coverage'), 3)} |" for m in rows]
    branch = meta.get("results_branch")
    branch = branch if isinstance(branch, str) and re.fullmatch(r"results/[a-z0-9_-]{1,200}", branch) else None
    where = (f"the branch `{branch}` (open a pull request from it to publish them)" if branch
             else "the default branch; the leaderboard site rebuilds from it")
    body = [f"## cultureboard scores: {esc(meta.get('submission'), 120)}", "",
            f"Scored by the evaluator at `{sha(meta.get('main_sha'))}` from the submission at `{sha(meta.get('head_sha'))}` "
            f"· [run log]({run_url})", "", *table, *standing_lines(read_json(artifact / "standing.json")), "",
            f"Per-slice results, per-image scores and provenance are committed to {where}."]
    return pr_number(meta.get("pr")), "\n".join(body)


def main() -> None:
    kind, artifact = os.environ["KIND"], Path(os.environ["ARTIFACT"])
    head, run_url = os.environ.get("HEAD_SHA", ""), os.environ.get("RUN_URL", "")
    if not re.fullmatch(r"https://[\w.-]+/[\w./-]+", run_url):
        run_url = "#"
    pr, body = (validate_body if kind == "validate" else evaluate_body)(artifact, head, run_url)
    marker = f"<!-- cultureboard:{'validate' if kind == 'validate' else 'evaluate'} -->"
    if body is not None:
        body = marker + "\n" + body
        if len(body) > MAX_BODY:
            body = body[:MAX_BODY] + "\n\n…(cut: see the run log)"
    Path(os.environ["OUT"]).write_text(json.dumps({"kind": kind, "marker": marker, "pr": pr, "body": body}),
                                       encoding="utf-8")


if __name__ == "__main__":
    main()
