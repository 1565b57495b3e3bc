"""What the near-reference check found in a result (:mod:`cultureboard.evaluators.engine.near_reference`), in words
for the pages: how many of a submission's images were left out of its similarity-to-reference metrics as near a
reference photograph, or that the check was not made and why. Results of families without such metrics, and results
scored before the check, have no ``near_reference`` block: nothing is said about them."""

from __future__ import annotations


def _block(summary: dict) -> dict:
    return summary.get("near_reference") or {}


def cell(summary: dict) -> str | None:
    """The board's cell: "2 of 18" (images left out of those compared), "not checked", or None (no such metric)."""
    block = _block(summary)
    if not block:
        return None
    checked = [b for b in block.values() if b["threshold"] is not None]
    if not checked:
        return "not checked"
    worst = max(checked, key=lambda b: b["left_out"])
    return f"{worst['left_out']} of {worst['checked']}"


def text(summary: dict) -> str | None:
    """The model page's sentence: what was left out of which metrics, by which embedder and threshold, or why the
    check was not made."""
    block = _block(summary)
    if not block:
        return None
    checked = {m: b for m, b in block.items() if b["threshold"] is not None}
    if not checked:
        statuses = sorted({b["status"] for b in block.values()})
        return f"Near-reference check of {', '.join(sorted(block))}: {'; '.join(statuses)}."
    first = next(iter(checked.values()))
    metrics = ", ".join(f"{m} ({b['left_out']})" for m, b in sorted(checked.items()))
    return (f"Images whose {first['scorer']} embedding has a cosine of at least {first['threshold']} with a reference "
            f"photograph of their artifact (the threshold measured for {first['model_id']} @ {first['revision']}, "
            f"{first['from']}) are left out of every similarity-to-reference metric as near_reference; images left "
            f"out per metric, of {first['checked']} compared: {metrics}."
            + (" Not checked: " + "; ".join(f"{m}: {b['status']}" for m, b in sorted(block.items()) if m not in checked)
               + "." if len(checked) < len(block) else ""))
