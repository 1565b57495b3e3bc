"""Eras of artifacts, from the year of their inception (P571) or the start of their time period (P2348).

The buckets are the usual historical periods; the boundaries are ours and are recorded in the
dataset card. ``era`` is null where no year is known.
"""

from __future__ import annotations

#: (first year of the era, era name), in increasing order.
ERAS = (
    (None, "ancient"),  # before 500
    (500, "medieval"),
    (1500, "early modern"),
    (1800, "modern"),
    (1946, "contemporary"),
)


def era_of_year(year: int | None) -> str | None:
    """``ancient`` (< 500), ``medieval`` (500-1499), ``early modern`` (1500-1799), ``modern`` (1800-1945),
    ``contemporary`` (1946 on); None for an unknown year."""
    if year is None:
        return None
    name = ERAS[0][1]
    for start, era in ERAS[1:]:
        if year >= start:
            name = era
    return name
