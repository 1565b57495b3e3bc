"""AHEaD's per-image explanation (Malakouti et al. 2025, sections 3.4 and 3.6): which reference descriptors an
image shows (aligned) or lacks (missing), which of its own descriptors match none (hallucinated), which stereotype
candidates it over-expresses against the real photographs (exaggerated), and the descriptor-guided edit
instruction the paper builds from them (its Table 32 template, in our words). Pure functions on the matching's
outputs; the lists go into the score rows' ``detail`` for the site's image pages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

#: Missing reference descriptors the edit instruction adds per dimension (Table 32): the correct interaction
#: always, 1-3 kinds of attire and one background where the image has hallucinations in that dimension.
ADD_PER_DIMENSION = {"interaction": 1, "attire": 3, "setting": 1}
ADD_ALWAYS = ("interaction",)


def _r(x: float) -> float:
    return round(float(x), 4)


def matches(predicted: Mapping[str, Sequence[str]], references: Mapping[str, Sequence[str]],
            sims: Mapping[str, np.ndarray], tau: float) -> dict[str, list[dict]]:
    """``aligned``: reference descriptors some prediction matches (similarity > tau), with that best match;
    ``missing``: the other reference descriptors, with their nearest prediction (None without predictions);
    ``hallucinated``: predictions that match no reference (<= tau), with their nearest reference. Entries name
    their dimension and similarity; ordered by dimension, then best first (aligned) or worst first (missing,
    hallucinated). Dimensions without reference descriptors are skipped."""
    out: dict[str, list[dict]] = {"aligned": [], "missing": [], "hallucinated": []}
    for d, refs in references.items():
        if not refs:
            continue
        S, preds = np.asarray(sims[d]), list(predicted.get(d, ()))
        found: dict[str, list[dict]] = {"aligned": [], "missing": [], "hallucinated": []}
        for j, ref in enumerate(refs):
            if not preds:
                found["missing"].append({"dimension": d, "reference": ref, "nearest": None, "similarity": None})
                continue
            i = int(S[:, j].argmax())
            found["aligned" if S[i, j] > tau else "missing"].append(
                {"dimension": d, "reference": ref, "nearest": preds[i], "similarity": _r(S[i, j])})
        for i, pred in enumerate(preds):
            j = int(S[i].argmax())
            if S[i, j] <= tau:
                found["hallucinated"].append({"dimension": d, "descriptor": pred, "nearest": refs[j],
                                              "similarity": _r(S[i, j])})
        for kind, entries in found.items():
            sign = -1.0 if kind == "aligned" else 1.0
            out[kind] += sorted(entries, key=lambda e: 0.0 if e["similarity"] is None else sign * e["similarity"])
    return out


def exaggerated(candidates: Sequence[str], scores: np.ndarray, baseline: np.ndarray, shown: int) -> list[dict]:
    """The stereotype candidates this image expresses more than the real photographs do (excess
    f(I, d_k) - f_gt(d_k) > 0), largest excess first, at most ``shown``."""
    excess = np.asarray(scores, dtype=np.float64) - np.asarray(baseline, dtype=np.float64)
    order = [k for k in np.argsort(-excess, kind="stable") if excess[k] > 0][:shown]
    return [{"candidate": candidates[k], "score": _r(scores[k]), "baseline": _r(baseline[k]), "excess": _r(excess[k])}
            for k in order]


def edit_instruction(activity: str, country: str, explanation: Mapping[str, list[dict]],
                     exaggerated_items: Sequence[dict] = ()) -> str:
    """An instruction for an image editor, from the explanation (the paper's Table 32): remove what is
    hallucinated or exaggerated and anything of another culture, period or activity; keep what is aligned; add the
    correct interaction (a missing interaction reference descriptor) and, where those dimensions have
    hallucinations, up to three missing kinds of attire and one missing background."""
    remove = [e["descriptor"] for e in explanation.get("hallucinated", [])]
    remove += [e["candidate"] for e in exaggerated_items]
    keep = [e["reference"] for e in explanation.get("aligned", [])]
    flagged = {e["dimension"] for e in explanation.get("hallucinated", [])}
    add = []
    for d, n in ADD_PER_DIMENSION.items():
        if d in flagged or d in ADD_ALWAYS:
            add += [e["reference"] for e in explanation.get("missing", []) if e["dimension"] == d][:n]
    lines = [f"Edit the image so that it correctly shows {activity} in {country}."]
    lines.append("Remove: " + "; ".join([*remove, "anything from another culture, period or activity"]) + ".")
    if keep:
        lines.append("Keep: " + "; ".join(keep) + ".")
    if add:
        lines.append("Add: " + "; ".join(add) + ".")
    return "\n".join(lines)
