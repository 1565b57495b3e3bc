"""What papers report about the CultDiff metrics' validity, read from ``results/data/reported/validity.yaml``
(never copied into code): CultDiff section 4.2 / Table 2 (Spearman with the human image-image similarity score)
for SSIM, LPIPS and the paper's own CultDiff-S model, and CuRe Table 1 for DINOv2 similarity to ground-truth
images (its SD 1.5 column, the only one where DINOv2 is the best scorer)."""

from __future__ import annotations

import functools

from ...engine.registry import Evidence
from ...results.reported import load_validity

#: cultureboard metric -> (family, metric label) of its row in validity.yaml.
ROWS = {
    "cultdiff.ssim": ("cultdiff", "SSIM"),
    "cultdiff.lpips": ("cultdiff", "LPIPS"),
    "cultdiff.learned": ("cultdiff", "CultDiff-S"),
    "cultdiff.dino": ("cure", "DINOv2 phi_GT(n)"),
}


@functools.cache
def reported() -> dict[str, dict]:
    """{metric: its reported validity row} (family, source, metric, human, statistic, slice, value, printed, paper)."""
    rows = {(r["family"], r["metric"]): r for r in load_validity()}
    return {metric: rows[key] for metric, key in ROWS.items() if key in rows}


def evidence(metric: str) -> tuple[Evidence, ...]:
    """The metric card's validity: what the paper reports, as reported."""
    row = reported().get(metric)
    if row is None:
        return ()
    if row["family"] == "cure":
        what = (f"Spearman {row['printed']} of {row['metric']} with the user study's perceptual similarity "
                f"({row['human']}) on {row['slice']} images, the highest of any scorer in that column; positive but not "
                "alone at the top on FLUX.1 [dev] (below SigLIP 2) and SD 3.5 Large (tied with SigLIP 2 and AIMV2)")
        return (Evidence(what, f"CuRe (Rege et al., 2025), {row['source']}", row["value"]),)
    whose = "the paper's own CultDiff-S model (not this one; no weights were released)" \
        if metric == "cultdiff.learned" else row["metric"]
    what = f"Spearman {row['printed']} of {whose} with the human {row['human']} score ({row['slice']} test pairs)"
    return (Evidence(what, f"CultDiff (Bayramli et al., ACL 2025), section 4.2, {row['source']}", row["value"]),)
