"""A world map coloured by a metric per country, as SVG, drawn from vendored Natural Earth shapes (no network).

The shapes are ``data/world-atlas/countries-110m.json`` (TopoJSON of Natural Earth's 1:110m country
boundaries, public domain; see ``data/world-atlas/SOURCE.md``), keyed to ISO 3166-1 alpha-2 codes by
``data/iso3166-numeric.csv``. Each TopoJSON arc is decoded (delta-encoded integers times the transform's scale
plus its translate give degrees), rings are joined from their arcs (a negative index ``~i`` is arc ``i``
reversed; consecutive arcs share an end point), and every point is projected with the Equal Earth projection
(Šavrič, Patterson and Jenny 2018): with :math:`\\theta = \\arcsin(\\tfrac{\\sqrt3}{2}\\sin\\varphi)`,
:math:`x = \\frac{2\\sqrt3\\,\\lambda\\cos\\theta}{3(9A_4\\theta^8 + 7A_3\\theta^6 + 3A_2\\theta^2 + A_1)}` and
:math:`y = A_4\\theta^9 + A_3\\theta^7 + A_2\\theta^3 + A_1\\theta`. Antarctica is left out.

:func:`map_svg` returns a standalone SVG document (for an ``<img>``); :func:`map_body` the same drawing as an
inline ``<svg>`` whose country paths carry ``data-iso`` so a script can recolour them (the site's map pages).
Colours are the plots' viridis ramp; a country of the data without a value is mid grey, a country outside the
data pale. Where the values spread less than their typical 95% CI is wide (:func:`.plots.colour_is_noise`, the
heatmaps' rule), every country with a value is one light grey (values and CIs stay in the tooltips) and a note
under the map says so with both numbers, in place of the legend; ``app.js`` applies the same rule to each choice
of a map page. With the card's smallest meaningful difference d, a country whose difference from the reference
(the scale's centre where it has one, a target metric's target; else the mean of the countries' values) does not
clear d (:func:`.plots.meaningful`: the interval of the difference lies wholly beyond +-d) is that light grey too,
and the legend says so (``app.js`` again the same). Countries too small for the 1:110m shapes (Singapore) are named in the caption instead.
"""

from __future__ import annotations

import csv
import functools
import itertools
import json
import math
from pathlib import Path

from .cells import at_precision
from .plots import (_colour, _distinct_digits, _document, _esc, _fmt, _n, _text, colour_is_noise, meaningful,
                    neutral_text, reference_of)

DATA = Path(__file__).parent / "data"
TOPOLOGY = DATA / "world-atlas" / "countries-110m.json"
CODES = DATA / "iso3166-numeric.csv"
WIDTH = 960.0
OUTSIDE = "#f1f1f1"  # a country the data does not cover
NO_VALUE = "#b9b9b9"  # a country of the data without a value
UNCOLOURED = "#d3d3d3"  # a country with a value, on a map whose colours would paint noise (colour_is_noise)
Cis = dict[str, tuple[float | None, float | None]]  # iso2 -> (low, high) of its value's 95% CI
_A1, _A2, _A3, _A4 = 1.340264, -0.081106, 0.000893, 0.003796
_M = math.sqrt(3) / 2


def equal_earth(lon: float, lat: float) -> tuple[float, float]:
    """Equal Earth coordinates (unit sphere; y up) of a point in degrees."""
    lam, phi = math.radians(lon), math.radians(lat)
    theta = math.asin(_M * math.sin(phi))
    t2 = theta * theta
    t6 = t2 * t2 * t2
    x = lam * math.cos(theta) / (_M * (_A1 + 3 * _A2 * t2 + t6 * (7 * _A3 + 9 * _A4 * t2)))
    y = theta * (_A1 + _A2 * t2 + t6 * (_A3 + _A4 * t2))
    return x, y


@functools.cache
def shapes() -> tuple[dict[str, str], float, float]:
    """({iso2: SVG path data}, width, height) of every coded country but Antarctica, in pixels (x right, y down)."""
    topo = json.loads(TOPOLOGY.read_text(encoding="utf-8"))
    (sx, sy), (tx, ty) = topo["transform"]["scale"], topo["transform"]["translate"]
    arcs = []
    for arc in topo["arcs"]:
        x = y = 0
        points = []
        for dx, dy in arc:
            x, y = x + dx, y + dy
            points.append((x * sx + tx, y * sy + ty))
        arcs.append(points)
    with CODES.open(encoding="utf-8") as fh:
        codes = {row["numeric"]: row["iso2"] for row in csv.DictReader(fh)}
    rings: dict[str, list[list[tuple[float, float]]]] = {}
    for geometry in topo["objects"]["countries"]["geometries"]:
        iso = codes.get(geometry.get("id", ""))
        if iso is None or iso == "AQ":
            continue
        polygons = geometry["arcs"] if geometry["type"] == "MultiPolygon" else [geometry["arcs"]]
        for polygon in polygons:
            for ring in polygon:
                points: list[tuple[float, float]] = []
                for index in ring:
                    part = arcs[index] if index >= 0 else arcs[~index][::-1]
                    points += part[1:] if points else part
                for part in split_at_antimeridian(points):
                    rings.setdefault(iso, []).append([equal_earth(lon, lat) for lon, lat in part])
    xs = [p[0] for rs in rings.values() for r in rs for p in r]
    ys = [p[1] for rs in rings.values() for r in rs for p in r]
    scale = (WIDTH - 2) / (max(xs) - min(xs))
    x0, y0 = min(xs), max(ys)
    paths = {}
    for iso, found in sorted(rings.items()):
        parts = []
        for ring in found:
            pixels, last = [], None
            for px, py in ring:
                point = (round(1 + (px - x0) * scale), round(1 + (y0 - py) * scale))  # whole pixels: small files
                if point != last:
                    pixels.append(point)
                    last = point
            if len(pixels) >= 3:
                parts.append("M" + "L".join(f"{a} {b}" for a, b in pixels) + "Z")
        paths[iso] = "".join(parts)
    return paths, WIDTH, round(2 + (max(ys) - min(ys)) * scale, 1)


def split_at_antimeridian(ring: list[tuple[float, float]]) -> list[list[tuple[float, float]]]:
    """A ring (lon, lat in degrees) that crosses the 180th meridian (a step of more than 180 degrees of longitude,
    as Russia's and Fiji's do) as two rings, one each side, cut along the meridian: the longitudes are made
    continuous, then the ring is clipped to each half-plane (Sutherland-Hodgman) and the far part shifted by 360."""
    unwrapped, shift = [ring[0]], 0.0
    for (a, _), (b, lat) in itertools.pairwise(ring):
        if b - a > 180:
            shift -= 360
        elif a - b > 180:
            shift += 360
        unwrapped.append((b + shift, lat))
    low, high = min(p[0] for p in unwrapped), max(p[0] for p in unwrapped)
    if low >= -180 and high <= 180:
        return [ring]
    edge = 180.0 if high > 180 else -180.0
    inside = _clip(unwrapped, edge, keep_below=edge > 0)
    outside = [(lon - math.copysign(360, edge), lat) for lon, lat in _clip(unwrapped, edge, keep_below=edge < 0)]
    return [part for part in (inside, outside) if len(part) >= 3]


def _clip(ring: list[tuple[float, float]], edge: float, keep_below: bool) -> list[tuple[float, float]]:
    """The part of ``ring`` with longitude <= ``edge`` (``keep_below``) or >= it."""
    def keep(p):
        return p[0] <= edge if keep_below else p[0] >= edge

    out = []
    for a, b in zip(ring, ring[1:] + ring[:1]):
        if keep(b):
            if not keep(a):
                out.append(_cross(a, b, edge))
            out.append(b)
        elif keep(a):
            out.append(_cross(a, b, edge))
    return out


def _cross(a, b, edge: float) -> tuple[float, float]:
    t = (edge - a[0]) / (b[0] - a[0])
    return edge, a[1] + t * (b[1] - a[1])


def noise(values: dict[str, float | None], cis: Cis | None) -> tuple[float, float] | None:
    """(spread, typical CI width) where colouring ``values`` would paint noise (:func:`.plots.colour_is_noise`)."""
    cis = cis or {}
    return colour_is_noise({"value": v, "low": cis.get(iso, (None, None))[0], "high": cis.get(iso, (None, None))[1]}
                           for iso, v in values.items())


def colours(values: dict[str, float | None], vmin: float, vmax: float, cis: Cis | None = None,
            smallest: float | None = None, centre: float | None = None) -> dict[str, str]:
    """iso2 -> fill: the viridis colour of its value on [vmin, vmax], grey where it has none; light grey for every
    value where their spread is narrower than their typical CI (:func:`noise`), and for a value whose difference
    from the reference (``centre``, else the values' mean) does not clear ``smallest`` (:func:`.plots.meaningful`)."""
    span = (vmax - vmin) or 1.0
    flat = noise(values, cis) is not None
    reference = reference_of(values.values(), centre)
    cis = cis or {}

    def fill(iso, v):
        if v is None:
            return NO_VALUE
        if flat or not meaningful(v, *cis.get(iso, (None, None)), reference, smallest):
            return UNCOLOURED
        return _colour((v - vmin) / span)

    return {iso: fill(iso, v) for iso, v in values.items()}


def _paths(values: dict[str, float | None], cis: Cis | None, vmin: float, vmax: float, names: dict[str, str],
           digits: int, smallest: float | None = None, centre: float | None = None) -> list[str]:
    paths, _, _ = shapes()
    fills = colours(values, vmin, vmax, cis, smallest, centre)
    out = []
    for iso, d in paths.items():
        if iso in values:
            label = f"{names.get(iso, iso)}: {_fmt(values[iso], digits)}"
            low, high = (cis or {}).get(iso, (None, None))
            if values[iso] is not None and low is not None and high is not None:  # bounds that print apart
                value, low, high = at_precision(values[iso], low, high, digits)
                label = f"{names.get(iso, iso)}: {value} (95% CI {low} to {high})"
            out.append(f'<path class="country" data-iso="{_esc(iso)}" d="{d}" fill="{fills[iso]}" stroke="#fff" '
                       f'stroke-width="0.5"><title>{_esc(label)}</title></path>')
        else:
            out.append(f'<path class="outside" d="{d}" fill="{OUTSIDE}" stroke="#fff" stroke-width="0.5"/>')
    return out


def _legend(vmin: float, vmax: float, y: float, digits: int, hidden: bool = False,
            neutral: str | None = None) -> list[str]:
    ramp_w, steps = 220.0, 40
    body = ['<g class="legend"' + (' display="none">' if hidden else ">")]
    for k in range(steps):
        body.append(f'<rect x="{_n(8 + k * ramp_w / steps)}" y="{_n(y)}" width="{_n(ramp_w / steps + 0.5)}" height="10" '
                    f'fill="{_colour(k / (steps - 1))}"/>')
    for frac, anchor in ((0, "start"), (0.5, "middle"), (1, "end")):
        body.append(_text(8 + frac * ramp_w, y + 24, _fmt(vmin + frac * (vmax - vmin), digits), anchor=anchor,
                          extra=f' class="tick" data-frac="{frac}"'))
    body += [f'<rect x="{_n(8 + ramp_w + 24)}" y="{_n(y)}" width="14" height="10" fill="{NO_VALUE}" stroke="#999"/>',
             _text(8 + ramp_w + 42, y + 9, "no value"),
             f'<rect x="{_n(8 + ramp_w + 120)}" y="{_n(y)}" width="14" height="10" fill="{OUTSIDE}" stroke="#ccc"/>',
             _text(8 + ramp_w + 138, y + 9, "not in this prompt set")]
    if neutral is not None:  # the swatch of a value that does not clear the smallest meaningful difference
        body += [f'<rect class="neutral" x="{_n(8 + ramp_w + 290)}" y="{_n(y)}" width="14" height="10" '
                 f'fill="{UNCOLOURED}" stroke="#999"/>', _text(8 + ramp_w + 308, y + 9, neutral, extra=' class="neutral-text"')]
    return body + ["</g>"]


def _note(found: tuple[float, float] | None, y: float, digits: int) -> tuple[list[str], str]:
    """The note that replaces the legend where the colours would paint noise (hidden where ``found`` is None: a map
    page's script shows it for a choice that needs it), and its sentence for the description. The two numbers are
    ``<tspan class="spread">`` and ``<tspan class="width">``, printed to the decimals that tell them apart."""
    spread, width = found or (0.0, 0.0)
    digits = _distinct_digits([spread, width], digits)
    spread_text, width_text = (_fmt(v, digits) if found else "" for v in (spread, width))
    body = ['<g class="uncoloured"' + (">" if found else ' display="none">'),
            f'<text x="8" y="{_n(y + 9)}">Not coloured: the values span <tspan class="spread">{spread_text}</tspan>, '
            f'less than their typical 95% CI width (<tspan class="width">{width_text}</tspan>): colour would paint '
            f"noise.</text>", "</g>"]
    return body, (f"Not coloured: the values span {spread_text}, less than their typical 95% CI width "
                  f"({width_text}), so colour differences would be noise.")


def scale_of(values, centre: float | None = None) -> tuple[float, float, int]:
    """(vmin, vmax, digits) of the legend for the finite ``values`` (0..1 when there are none); with a ``centre``
    (a gap's 0, a target metric's target) the range is widened to be symmetric about it, so the centre is the
    ramp's middle colour and equal gaps either side are equally far from it."""
    finite = [v for v in values if v is not None]
    vmin, vmax = (min(finite), max(finite)) if finite else (0.0, 1.0)
    if centre is not None:
        half = max(abs(vmin - centre), abs(vmax - centre)) or 1.0
        vmin, vmax = centre - half, centre + half
    return vmin, vmax, _distinct_digits([vmin, (vmin + vmax) / 2, vmax], 2)


def neutral_label(values, smallest: float | None, centre: float | None, digits: int) -> str | None:
    """The legend's words for the neutral swatch of a map of ``values`` (None where the card has no ``smallest``)."""
    reference = reference_of(values, centre)
    if not smallest or reference is None:
        return None
    return neutral_text(reference, smallest, digits, centre is not None)


def map_svg(values: dict[str, float | None], title: str, *, names: dict[str, str], cis: Cis | None = None,
            vmin: float | None = None, vmax: float | None = None, desc: str | None = None,
            centre: float | None = None, smallest: float | None = None) -> str:
    """A standalone SVG world map of ``values`` (iso2 -> value or None; the countries of the data) with ``cis``
    (iso2 -> the value's 95% CI); ``centre``: see :func:`scale_of`. Not coloured where :func:`noise` says so; a
    country whose difference from the reference does not clear ``smallest`` (the card's smallest meaningful
    difference) is light grey (:func:`colours`)."""
    low, high, digits = scale_of(values.values(), centre)
    vmin, vmax = low if vmin is None else vmin, high if vmax is None else vmax
    _, width, height = shapes()
    top = 28.0
    found = noise(values, cis)
    note, why = _note(found, top + height + 10, digits)
    neutral = neutral_label(values.values(), smallest, centre, digits)
    body = [f'<g transform="translate(0 {_n(top)})">', *_paths(values, cis, vmin, vmax, names, digits, smallest, centre),
            "</g>", *(note if found else _legend(vmin, vmax, top + height + 10, digits, neutral=neutral))]
    if desc is None:
        shown = sorted((v, names.get(k, k)) for k, v in values.items() if v is not None)
        scale = (f". {why} Values" if found else
                 f" coloured from {_fmt(vmin, digits)} (dark purple) to {_fmt(vmax, digits)} (yellow)"
                 + (f", light grey: {neutral}" if neutral else ""))
        desc = (f"World map of {len(values)} countries{scale}: "
                + "; ".join(f"{n}: {_fmt(v, digits)}" for v, n in shown) + ".")
    elif found:
        desc = f"{desc} {why}"
    return _document(width, top + height + 44, title, desc, body)


def map_body(values: dict[str, float | None], label: str, *, names: dict[str, str], vmin: float, vmax: float,
             digits: int, cis: Cis | None = None, smallest: float | None = None, centre: float | None = None) -> str:
    """The map as an inline ``<svg>`` (no XML declaration, no ids) for a page whose script recolours it: both the
    legend and the note are drawn, the one that does not apply to ``values`` hidden; the legend's neutral line
    (``class="neutral-text"``) names the reference of ``values``, which the script rewrites for each choice."""
    _, width, height = shapes()
    found = noise(values, cis)
    neutral = neutral_label(values.values(), smallest, centre, digits)
    body = (_paths(values, cis, vmin, vmax, names, digits, smallest, centre)
            + _legend(vmin, vmax, height + 10, digits, hidden=found is not None, neutral=neutral)
            + _note(found, height + 10, digits)[0])
    return (f'<svg class="worldmap" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_n(width)} {_n(height + 44)}" '
            f'width="{_n(width)}" height="{_n(height + 44)}" role="img" aria-label="{_esc(label)}" '
            f'font-family="system-ui, sans-serif" font-size="11" fill="#222">' + "".join(body) + "</svg>")


def missing_shapes(codes) -> list[str]:
    """The codes among ``codes`` that have no shape on the map."""
    paths, _, _ = shapes()
    return sorted(c for c in codes if c not in paths)
