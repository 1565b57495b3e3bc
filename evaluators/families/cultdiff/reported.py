"""What papers report about the CultDiff metrics' validity, read from ``results/data/reported/validity.yaml``
(never copied into code): CultDiff Table 2 (Spearman with the human image-image similarity score) for SSIM,
LPIPS and CultDiff-S, and CuRe Table 1 for DINOv2 similarity to ground-truth images."""

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
    paper = "CultDiff (Bayramli et al., ACL 2025)" if row["family"] == "cultdiff" else "CuRe (Rege et al., 2025)"
    what = (f"Spearman {row['printed']} with the human {row['human']} score ({row['slice']} test pairs)"
            if row["family"] == "cultdiff" else
            f"Spearman {row['printed']} of {row['metric']} with the user study's perceptual similarity ({row['human']}, "
            f"{row['slice']} images): the highest of any automatic scorer there")
    return (Evidence(what, f"{paper}, {row['source']}", row["value"]),)
