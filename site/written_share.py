"""What the OCR found in a result (:mod:`cultureboard.evaluators.engine.written`), in words for the pages: the
share of a submission's images that spell their prompt, and the metrics whose scorers read text without them.
Results scored before text was read have no ``written`` block: nothing is said about them."""

from __future__ import annotations


def share(summary: dict) -> float | None:
    """Spelling images / images the OCR could check; None when none could be (or text was not read)."""
    return (summary.get("written") or {}).get("share")


def share_text(summary: dict) -> str | None:
    """E.g. "3 of 10 checked images (30%) spell their prompt (OCR rapidocr-onnxruntime 1.4.4); 2 not checked"."""
    block = summary.get("written")
    if block is None:
        return None
    if block["ocr"] is None:
        why = (summary["provenance"].get("written") or {}).get("why") or "OCR was not run"
        return f"Written answers not checked: {why}."
    counts, ocr = block["counts"], block["ocr"]
    text = (f"{counts['spells']} of {block['checked']} checked images"
            + (f" ({block['share']:.0%})" if block["checked"] else "")
            + f" spell their prompt's artifact or country (OCR {ocr['package']} {ocr['version']})")
    return text + (f"; {counts['not checked']} not checked (a script the OCR cannot read)." if counts["not checked"]
                   else ".")


def without_rows(summary: dict, titles: dict[str, str]) -> list[dict]:
    """Per metric whose scorers read text, a table row: the metric (linked), its entry over all prompts with every
    image (``with``) and without the spelling images (``without``; None when no image is left)."""
    block = summary.get("written") or {}
    overall = {e["metric"]: e for e in summary["metrics"] if (e["slice_type"], e["slice"]) == ("overall", "all")}
    return [{"metric": {"text": titles.get(m, m), "href": f"metric/{m}.html"}, "with": overall.get(m),
             "without": {**entry, "metric": m} if entry else None}
            for m, entry in sorted((block.get("without") or {}).items())]
