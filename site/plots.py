"""Static SVG plots for the leaderboard site, written by hand: no plotting dependency, no scripts.

Each function returns one standalone SVG document as text: only the SVG namespace URL, no external
font, image or link, generic font families only. Every label is XML-escaped (text and attributes), the
output is byte-for-byte deterministic for the same input, and it carries an accessible name and
summary (``<title>``/``<desc>`` as first children, ``role="img"``). No element has an ``id``, so
several plots can be inlined in one HTML page. Items the caller gives keep the caller's order (rows
top to bottom, heatmap columns left to right, in order of first appearance).

* :func:`heatmap_svg`: model x country grid of values; missing cells hatched grey ("no data"); not coloured at all
  when the values spread less than their typical 95% CI is wide (:func:`colour_is_noise`): the plot says so; with
  the card's smallest meaningful difference, a cell whose difference from the reference does not clear it is drawn
  neutral (:func:`meaningful`), and the legend says so.
* :func:`gap_svg`: one bar per model from zero to its gap (e.g. Global North minus Global South), with its CI.
* :func:`era_bars_svg`: per model, one bar per era, with CIs.
* :func:`curve_svg`: per model, a line over an ordered slice (an edit step), with a CI whisker at each point.

Both draw the metric's chance level as a dashed reference line labelled "chance" where it is given, and the rows of
the ``controls`` they are given (submissions the project made, never ranked) faded and dashed, with a legend entry.
* :func:`frontier_svg`: one point per model at (level, gap) with both CIs; the models no other beats on both
  (higher level and smaller gap) joined as the frontier.

A value of ``None`` or NaN is "no data", never zero.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Sequence

from cultureboard.evaluators.results.disparity import clears

__all__ = ["curve_svg", "era_bars_svg", "frontier_svg", "gap_svg", "heatmap_svg"]

SVG_NS = "http://www.w3.org/2000/svg"
FONT = "system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif"
FONT_SIZE = 11
LABEL_CHARS = 44  # longer labels are shortened on the plot (full text stays in the tooltip)
TEXT, GRID, AXIS, MISSING = "#222", "#ddd", "#555", "#e6e6e6"
UNCOLOURED = "#f4f4f4"  # a heatmap cell whose colour would paint noise (colour_is_noise), or no difference (meaningful)
VIRIDIS = ("#440154", "#3b528b", "#21918c", "#5ec962", "#fde725")
# Okabe-Ito: distinguishable with the common colour-vision deficiencies
CATEGORICAL = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
POSITIVE, NEGATIVE = "#0072B2", "#D55E00"
MAX_PRINTED_CELLS = 150  # values are printed inside heatmap cells up to this many cells

_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


# --- small helpers ------------------------------------------------------------------------------

def _esc(value: object) -> str:
    """XML-escaped text, safe in element content and in double- or single-quoted attributes."""
    text = _INVALID_XML.sub("\ufffd", str(value))
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#39;"))


def _n(x: float) -> str:
    """A coordinate: one decimal, no trailing ``.0``, never ``-0``."""
    text = f"{x:.1f}"
    text = text.removesuffix(".0")
    return "0" if text == "-0" else text


def _num(value) -> float | None:
    """``value`` as a finite float, or None for missing (None, NaN, infinite)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _fmt(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "no data"
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def _short(label: str, chars: int = LABEL_CHARS) -> str:
    """``label`` cut in the middle to ``chars`` characters: names that differ only at the end (``..._run-07``)
    stay distinguishable."""
    if len(label) <= chars:
        return label
    head = (chars - 1) // 2
    return label[:head] + "\u2026" + label[len(label) - (chars - 1 - head):]


_NARROW = set("fijlrt.,:;'|!()[] ")
_WIDE = set("mwMW@%&\u2014\u2026")


def _width(text: str, size: float = FONT_SIZE) -> float:
    """A generous estimate of ``text``'s advance width at ``size`` px in a sans-serif system font (layout only:
    no font metrics are available; overestimating costs whitespace, underestimating clips labels)."""
    em = 0.0
    for ch in str(text):
        if ch in _NARROW:
            em += 0.36
        elif ch in _WIDE:
            em += 0.95
        elif ch.isupper() or ch.isdigit():
            em += 0.68
        else:
            em += 0.6
    return em * size


def _unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _text(x: float, y: float, content: str, *, anchor: str = "start", extra: str = "") -> str:
    return f'<text x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}"{extra}>{_esc(content)}</text>'


def _document(width: float, height: float, title: str, desc: str, body: Sequence[str]) -> str:
    width = max(width, 16 + _width(title, 13) * 1.15)  # room for the visible title (13 px bold: wider glyphs)
    head = (f'<svg xmlns="{SVG_NS}" width="{_n(width)}" height="{_n(height)}" viewBox="0 0 {_n(width)} {_n(height)}" '
            f'role="img" font-family="{_esc(FONT)}" font-size="{FONT_SIZE}" fill="{TEXT}">')
    return "\n".join([head, f"<title>{_esc(title)}</title>", f"<desc>{_esc(desc)}</desc>",
                      f'<rect class="background" width="{_n(width)}" height="{_n(height)}" fill="#fff"/>',
                      _text(8, 18, title, extra=' font-size="13" font-weight="bold"'), *body, "</svg>"]) + "\n"


def _empty(title: str, what: str) -> str:
    return _document(360, 60, title, f"{what}: no data.", [_text(8, 44, "no data", extra=' class="missing"')])


def _nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values from at most ``low`` to at least ``high`` (low < high)."""
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first, last = math.floor(low / step + 1e-9), math.ceil(high / step - 1e-9)
    return [round(k * step, 12) for k in range(first, last + 1)]


def _tick_digits(ticks: list[float]) -> int:
    """The decimals the ticks need (0.25 steps: 2, 0.5 steps: 1, 5 steps: 0)."""
    return next(d for d in range(7) if all(abs(round(t, d) - t) < 1e-9 for t in ticks) or d == 6)


def _tick_label(value: float, ticks: list[float]) -> str:
    return _fmt(value, _tick_digits(ticks))


def _distinct_digits(values: list[float], digits: int) -> int:
    """At least ``digits`` decimals, more (up to 6) until different ``values`` print differently."""
    while digits < 6 and len({_fmt(v, digits) for v in values}) < len(set(values)):
        digits += 1
    return digits


def _domain(values: Iterable[float | None]) -> list[float]:
    """Nice ticks over ``values`` and zero (bars start at zero)."""
    finite = [v for v in values if v is not None] + [0.0]
    low, high = min(finite), max(finite)
    size = max(abs(low), abs(high))
    if high - low <= 1e-9 * max(1.0, size):  # equal, or apart by rounding only (no ticks between)
        pad = 0.5 * (size if size > 1e-9 else 1.0)
        low, high = low - pad, high + pad
    return _nice_ticks(low, high)


def _ci_digits(triples: Iterable[tuple], ticks: list[float]) -> int:
    """Decimals for "value [low, high]" labels: at least 2 and the ticks' own, more (up to 4) until the
    bounds of every CI that has width print differently."""
    triples = [t for t in triples if None not in t[:3]]
    digits = max(2, _tick_digits(ticks))
    while digits < 4 and any(lo < hi and _fmt(lo, digits) == _fmt(hi, digits) for _, lo, hi in triples):
        digits += 1
    return digits


def _ci_text(value: float | None, low: float | None, high: float | None, digits: int = 2) -> str:
    text = _fmt(value, digits)
    if value is not None and low is not None and high is not None:
        text += f" [{_fmt(low, digits)}, {_fmt(high, digits)}]"
    return text


def _x_axis(ticks: list[float], x, top: float, bottom: float) -> list[str]:
    """Vertical grid lines with tick labels below ``bottom``; the zero line drawn darker."""
    out = []
    for t in ticks:
        colour, width = (AXIS, "1.2") if t == 0 else (GRID, "1")
        out.append(f'<line class="{"zero" if t == 0 else "grid"}" x1="{_n(x(t))}" x2="{_n(x(t))}" y1="{_n(top)}" '
                   f'y2="{_n(bottom)}" stroke="{colour}" stroke-width="{width}"/>')
        out.append(_text(x(t), bottom + 14, _tick_label(t, ticks), anchor="middle"))
    return out


def _hline(x1: float, x2: float, y: float) -> str:
    return f'<line class="grid" x1="{_n(x1)}" x2="{_n(x2)}" y1="{_n(y)}" y2="{_n(y)}" stroke="{GRID}"/>'


def _vline(x: float, y1: float, y2: float) -> str:
    return f'<line class="grid" x1="{_n(x)}" x2="{_n(x)}" y1="{_n(y1)}" y2="{_n(y2)}" stroke="{GRID}"/>'


def _whisker(x1: float, x2: float, y: float, half: float = 4) -> str:
    return (f'<path class="whisker" d="M{_n(x1)} {_n(y)}H{_n(x2)}M{_n(x1)} {_n(y - half)}v{_n(2 * half)}'
            f'M{_n(x2)} {_n(y - half)}v{_n(2 * half)}" stroke="{TEXT}" stroke-width="1.2" fill="none"/>')


# --- heatmap ------------------------------------------------------------------------------------

def _hex(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def _colour(t: float) -> str:
    """Viridis, linearly interpolated between five stops; t in [0, 1]."""
    t = min(1.0, max(0.0, t)) * (len(VIRIDIS) - 1)
    i = min(int(t), len(VIRIDIS) - 2)
    a, b = _hex(VIRIDIS[i]), _hex(VIRIDIS[i + 1])
    return "#" + "".join(f"{round(p + (q - p) * (t - i)):02x}" for p, q in zip(a, b))


def _ink(background: str) -> str:
    r, g, b = _hex(background)
    return "#000" if 0.299 * r + 0.587 * g + 0.114 * b > 140 else "#fff"


def _missing_cell(x: float, y: float, w: float, h: float, tooltip: str) -> list[str]:
    """A grey cell hatched with diagonal lines (drawn as a path: no pattern ids)."""
    step, d = 6.0, []
    k = step
    while k < w + h:
        x1, y1 = x + min(k, w), y + max(0.0, k - w)
        x2, y2 = x + max(0.0, k - h), y + min(k, h)
        d.append(f"M{_n(x1)} {_n(y1)}L{_n(x2)} {_n(y2)}")
        k += step
    return [(f'<g class="missing"><rect x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}" fill="{MISSING}">'
             f"<title>{_esc(tooltip)}</title></rect>"),
            f'<path d="{"".join(d)}" stroke="#aaa" stroke-width="1" fill="none"/></g>']


def colour_is_noise(cells: Iterable[dict]) -> tuple[float, float] | None:
    """(spread, typical CI width) when a colour scale over ``cells`` (``{value, low, high}``) would paint noise:
    the values' spread (largest minus smallest) is smaller than the median width (high - low) of their 95% CIs.
    None otherwise, and where fewer than two values or no CI are given."""
    values, widths = [], []
    for c in cells:
        value, low, high = (_num(c.get(k)) for k in ("value", "low", "high"))
        if value is not None:
            values.append(value)
            if low is not None and high is not None:
                widths.append(high - low)
    if len(values) < 2 or not widths:
        return None
    spread, typical = max(values) - min(values), statistics.median(widths)
    return (spread, typical) if spread < typical else None


def reference_of(values: Iterable[float | None], centre: float | None = None) -> float | None:
    """What a colour scale's differences are taken from: the ``centre`` it is drawn about where it has one (a
    target metric's target), else the mean of the finite ``values`` (None when there are none)."""
    if centre is not None:
        return centre
    finite = [v for v in (_num(x) for x in values) if v is not None]
    return sum(finite) / len(finite) if finite else None


def meaningful(value: float | None, low: float | None, high: float | None, reference: float | None,
               smallest: float | None) -> bool:
    """Whether a cell may take a colour of the scale: its difference from ``reference`` clears the card's smallest
    meaningful difference ``smallest`` (:func:`~cultureboard.evaluators.results.disparity.clears`: the interval
    [low - reference, high - reference] lies wholly beyond +-smallest; without a CI the point difference
    |value - reference| must reach it). Always True where the card declares no ``smallest`` (or the scale has no
    reference); never for a missing value."""
    value = _num(value)
    if value is None:
        return False
    if not smallest or smallest <= 0 or reference is None:
        return True
    low, high = _num(low), _num(high)
    if low is None or high is None:
        low = high = value
    return clears(low - reference, high - reference, smallest)


def neutral_text(reference: float, smallest: float, digits: int, centre: bool) -> str:
    """The legend's line for the neutral swatch (:func:`meaningful`)."""
    what = "the target" if centre else "the mean"
    return f"difference from {what} ({_fmt(reference, digits)}) not clearly beyond ±{smallest:g}"


def heatmap_svg(cells: list[dict], title: str, *, desc: str | None = None, vmin: float | None = None,
                vmax: float | None = None, digits: int = 2, smallest: float | None = None,
                centre: float | None = None) -> str:
    """A model (rows) x country (columns) heatmap of ``cells`` = ``[{model, country, value, low?, high?}]``
    (``low``, ``high``: the value's 95% CI).

    Colours: viridis from ``vmin`` (default: the smallest value) to ``vmax`` (default: the largest),
    with a legend. Pairs without a cell, or with value None/NaN, are hatched grey "no data" cells
    (``class="missing"``). Values are printed in the cells when the grid has at most
    ``MAX_PRINTED_CELLS`` cells; every cell has a tooltip with its model, country and value. Where the values
    spread less than their typical CI is wide (:func:`colour_is_noise`), no cell is coloured (all pale grey,
    values printed) and a note under the grid says why, in place of the legend. With ``smallest`` (the card's
    smallest meaningful difference), a cell whose difference from the reference (``centre``, else the mean of the
    cells: :func:`reference_of`) does not clear it is drawn pale grey (``class="cell neutral"``,
    :func:`meaningful`), and a legend line says so.
    """
    models = _unique(str(c["model"]) for c in cells)
    countries = _unique(str(c["country"]) for c in cells)
    if not models:
        return _empty(title, "Heatmap")
    grid: dict[tuple[str, str], float | None] = {}
    for c in cells:
        key = (str(c["model"]), str(c["country"]))
        if key in grid:
            raise ValueError(f"heatmap_svg: two cells for model {key[0]!r} and country {key[1]!r}")
        grid[key] = _num(c.get("value"))
    values = [v for v in grid.values() if v is not None]
    reference = reference_of(values, centre) if smallest else None
    coloured = {(str(c["model"]), str(c["country"])): meaningful(c.get("value"), c.get("low"), c.get("high"),
                                                                 reference, smallest) for c in cells}
    noise = colour_is_noise(cells)
    low = vmin if vmin is not None else (min(values) if values else 0.0)
    high = vmax if vmax is not None else (max(values) if values else 1.0)
    span = (high - low) or 1.0
    cell_digits = digits + 1 if span < 10 ** (1 - digits) else digits  # 0.50-0.51: three decimals

    cell_w = max(34.0, max(_width(c) for c in countries) + 8) if len(countries) <= 20 else 30.0
    cell_h = 22.0
    rotate = max(_width(c) for c in countries) + 6 > cell_w  # labels at -45 degrees
    reach = max(_width(_short(c)) for c in countries) * 0.72 if rotate else 0.0
    left = 12 + max(_width(_short(m)) for m in models)
    top = 30 + (reach + 14 if rotate else 18)
    grid_w, grid_h = cell_w * len(countries), cell_h * len(models)
    width = max(left + grid_w + 16 + reach, 380.0)
    height = top + grid_h + 62
    printed = len(models) * len(countries) <= MAX_PRINTED_CELLS or noise is not None

    body = []
    for j, country in enumerate(countries):
        cx = left + (j + 0.5) * cell_w
        if rotate:
            body.append(_text(cx, top - 6, _short(country), extra=f' transform="rotate(-45 {_n(cx)} {_n(top - 6)})"'))
        else:
            body.append(_text(cx, top - 6, country, anchor="middle"))
    missing = 0
    for i, model in enumerate(models):
        y = top + i * cell_h
        body.append(_text(left - 6, y + cell_h / 2 + 4, _short(model), anchor="end"))
        for j, country in enumerate(countries):
            x = left + j * cell_w
            value = grid.get((model, country))
            tooltip = f"{model} \u00d7 {country}: {_fmt(value, cell_digits)}"
            if value is None:
                missing += 1
                body += _missing_cell(x, y, cell_w, cell_h, tooltip)
                continue
            plain = noise or not coloured[(model, country)]
            fill = UNCOLOURED if plain else _colour((value - low) / span)
            body.append(f'<rect class="cell{"" if noise or not plain else " neutral"}" x="{_n(x)}" y="{_n(y)}" width="{_n(cell_w)}" height="{_n(cell_h)}" '
                        f'fill="{fill}" stroke="#fff" stroke-width="1"><title>{_esc(tooltip)}</title></rect>')
            if printed:
                body.append(_text(x + cell_w / 2, y + cell_h / 2 + 4, _fmt(value, cell_digits), anchor="middle",
                                  extra=f' fill="{_ink(fill)}" pointer-events="none"'))

    ly, lx, steps, ramp_w = top + grid_h + 18, 8.0, 40, 200.0
    if noise is not None:  # a note in place of the legend
        digits_of = _distinct_digits([noise[0], noise[1]], cell_digits)
        lines = [f"Not coloured: the values span {_fmt(noise[0], digits_of)}, less than",
                 f"their typical 95% CI width ({_fmt(noise[1], digits_of)}): colour would paint noise."]
        body += ['<g class="uncoloured">'] + [_text(lx, ly + 9 + 14 * k, line) for k, line in enumerate(lines)] + ["</g>"]
        width = max(width, lx + 8 + max(_width(line) for line in lines))
        why = (f"Not coloured: the values span {_fmt(noise[0], digits_of)}, less than their typical 95% CI width "
               f"({_fmt(noise[1], digits_of)}), so colour differences would be noise.")
        desc = (f"{desc} {why}" if desc else f"Heatmap of {len(models)} models (rows) by {len(countries)} countries "
                f"(columns). {why} {missing} of {len(models) * len(countries)} cells have no data (hatched grey).")
        return _document(width, height, title, desc, body)
    # legend: a ramp of 40 steps with its ends and middle labelled, and the "no data" swatch
    body.append('<g class="legend">')
    for k in range(steps):
        body.append(f'<rect x="{_n(lx + k * ramp_w / steps)}" y="{_n(ly)}" width="{_n(ramp_w / steps + 0.5)}" '
                    f'height="10" fill="{_colour(k / (steps - 1))}"/>')
    ends = [low + frac * (high - low) for frac in (0, 0.5, 1)]
    legend_digits = _distinct_digits(ends, digits)
    for frac, value, anchor in zip((0, 0.5, 1), ends, ("start", "middle", "end")):
        body.append(_text(lx + frac * ramp_w, ly + 24, _fmt(value, legend_digits), anchor=anchor))
    body += [f'<rect x="{_n(lx + ramp_w + 24)}" y="{_n(ly)}" width="14" height="10" fill="{MISSING}" stroke="#aaa"/>',
             _text(lx + ramp_w + 42, ly + 9, "no data")]
    neutral = ""
    if reference is not None:  # the neutral swatch, on a line of its own under the ramp
        neutral = neutral_text(reference, smallest, legend_digits, centre is not None)
        body += [f'<rect class="neutral" x="{_n(lx)}" y="{_n(ly + 32)}" width="14" height="10" fill="{UNCOLOURED}" '
                 f'stroke="#aaa"/>', _text(lx + 18, ly + 41, neutral)]
        width, height = max(width, lx + 26 + _width(neutral)), height + 18
    body.append("</g>")

    if desc is None:
        desc = (f"Heatmap of {len(models)} models (rows) by {len(countries)} countries (columns); colour from "
                f"{_fmt(low, legend_digits)} (dark purple) to {_fmt(high, legend_digits)} (yellow); "
                f"{missing} of {len(models) * len(countries)} cells have no data (hatched grey)"
                + (f"; pale grey: {neutral}." if neutral else "."))
    elif neutral:
        desc = f"{desc} Pale grey: {neutral}."
    return _document(width, height, title, desc, body)


# --- bars with CIs ------------------------------------------------------------------------------

def gap_svg(rows: list[dict], title: str, *, desc: str | None = None, positive: str = "Global North higher",
            negative: str = "Global South higher") -> str:
    """One row per model: a bar from zero to ``gap`` with its CI whisker [``low``, ``high``].

    ``rows`` = ``[{model, gap, low, high}]``. Bars right of the zero line (``positive``) and left of it
    (``negative``) have different colours; the value and CI are printed right of the plot. A row whose
    gap is missing shows "no data"; a row without CI bounds has no whisker.
    """
    if not rows:
        return _empty(title, "Gap plot")
    data = [(str(r["model"]), _num(r.get("gap")), _num(r.get("low")), _num(r.get("high"))) for r in rows]
    ticks = _domain(v for _, g, lo, hi in data for v in (g, lo, hi))
    digits = _ci_digits([(g, lo, hi) for _, g, lo, hi in data], ticks)
    row_h, plot_w = 24.0, 320.0
    # the "<- negative" label sits left of the zero line: leave it room even when the names are short
    left = 12 + max([_width(_short(m)) for m, *_ in data] + [_width(f"\u2190 {negative}") + 8])
    top = 50.0
    note_x = left + plot_w + 12

    def x(v: float) -> float:
        return left + (v - ticks[0]) / (ticks[-1] - ticks[0]) * plot_w

    notes = [_width(_ci_text(g, lo, hi, digits)) for _, g, lo, hi in data]
    width = max(note_x + max(notes) + 8, x(0) + 14 + _width(f"{positive} \u2192"))
    height = top + row_h * len(data) + 42

    bottom = top + row_h * len(data)
    body = _x_axis(ticks, x, top - 6, bottom)
    body += [_text(x(0) - 6, top - 12, f"\u2190 {negative}", anchor="end", extra=f' fill="{NEGATIVE}"'),
             _text(x(0) + 6, top - 12, f"{positive} \u2192", extra=f' fill="{POSITIVE}"')]
    for i, (model, gap, low, high) in enumerate(data):
        cy = top + (i + 0.5) * row_h
        body.append(_text(left - 6, cy + 4, _short(model), anchor="end"))
        summary = _ci_text(gap, low, high, digits)
        if gap is None:
            body.append(_text(x(0) + 6, cy + 4, "no data", extra=' class="missing" fill="#777"'))
        else:
            x0, x1 = sorted((x(0), x(gap)))
            body.append(f'<rect class="bar" x="{_n(x0)}" y="{_n(cy - 6)}" width="{_n(max(x1 - x0, 1))}" height="12" '
                        f'fill="{POSITIVE if gap >= 0 else NEGATIVE}" fill-opacity="0.75">'
                        f"<title>{_esc(f'{model}: {summary}')}</title></rect>")
            if low is not None and high is not None:
                body.append(_whisker(x(low), x(high), cy))
        body.append(_text(note_x, cy + 4, summary, extra=' fill="#555"'))

    if desc is None:
        shown = [d for d in data if d[1] is not None]
        desc = (f"Bars from zero for {len(data)} models, {len(shown)} with data: right of zero = {positive}, "
                f"left = {negative}; whiskers are 95% confidence intervals. "
                + "; ".join(f"{m}: {_ci_text(g, lo, hi, digits)}" for m, g, lo, hi in data) + ".")
    return _document(width, height, title, desc, body)


CHANCE = "#000"  # the chance level's reference line
CONTROL_DASH = "4 2"  # the outline of a control's bar, the stroke of its curve


def _chance_line(x1: float, y1: float, x2: float, y2: float) -> str:
    return (f'<line class="chance" x1="{_n(x1)}" x2="{_n(x2)}" y1="{_n(y1)}" y2="{_n(y2)}" stroke="{CHANCE}" '
            'stroke-width="1.2" stroke-dasharray="6 3"/>')


def era_bars_svg(rows: list[dict], title: str, *, desc: str | None = None, chance: float | None = None,
                 controls: Iterable[str] = ()) -> str:
    """Grouped horizontal bars: per model, one bar per era with its CI whisker.

    ``rows`` = ``[{model, era, value, low, high}]``; eras are coloured in order of first appearance
    and listed in a legend. A (model, era) pair that is absent or has value None shows "no data". ``chance``: the
    metric's chance level, a dashed vertical line labelled above the bars; ``controls``: the models that are
    controls, their bars faded with a dashed outline (``class="bar control"``) and a legend entry.
    """
    controls = set(controls)
    if not rows:
        return _empty(title, "Era bars")
    models = _unique(str(r["model"]) for r in rows)
    eras = _unique(str(r["era"]) for r in rows)
    data: dict[tuple[str, str], tuple] = {}
    for r in rows:
        key = (str(r["model"]), str(r["era"]))
        if key in data:
            raise ValueError(f"era_bars_svg: two rows for model {key[0]!r} and era {key[1]!r}")
        data[key] = (_num(r.get("value")), _num(r.get("low")), _num(r.get("high")))
    ticks = _domain([v for triple in data.values() for v in triple] + [_num(chance)])
    digits = _ci_digits(data.values(), ticks)
    bar_h, gap_h, plot_w = 14.0, 9.0, 320.0  # a bar per era, as tall as its 11 px note
    band = bar_h * len(eras) + gap_h
    left = 12 + max(_width(_short(m)) for m in models)
    top = 52.0 + (16 if _num(chance) is not None else 0)  # room for the chance line's label
    note_x = left + plot_w + 12
    notes = [_width(f"{_short(era, 12)}: {_ci_text(*data[(m, era)], digits)}")
             for m in models for era in eras if (m, era) in data]
    shown_controls = [m for m in models if m in controls]
    control_key = "faded, dashed: a control (never ranked)" if shown_controls else ""
    width = max(note_x + max(notes + [0.0]) + 8, 8 + sum(_width(e) + 30 for e in eras) + _width(control_key) + 24)
    bottom = top + band * len(models)
    height = bottom + 42

    def x(v: float) -> float:
        return left + (v - ticks[0]) / (ticks[-1] - ticks[0]) * plot_w

    body = ['<g class="legend">']
    lx = 8.0
    for k, era in enumerate(eras):
        body += [f'<rect x="{_n(lx)}" y="28" width="12" height="10" fill="{CATEGORICAL[k % len(CATEGORICAL)]}"/>',
                 _text(lx + 16, 37, era)]
        lx += _width(era) + 30
    if control_key:
        body += [f'<rect class="control" x="{_n(lx)}" y="28" width="12" height="10" fill="{CATEGORICAL[0]}" '
                 f'fill-opacity="0.35" stroke="{TEXT}" stroke-dasharray="{CONTROL_DASH}"/>', _text(lx + 16, 37, control_key)]
    body.append("</g>")
    body += _x_axis(ticks, x, top - 4, bottom)
    if _num(chance) is not None:
        body += [_chance_line(x(chance), top - 4, x(chance), bottom),
                 _text(x(chance), top - 8, f"chance {_fmt(chance, digits)}", anchor="middle", extra=' class="chance-label"')]
    for i, model in enumerate(models):
        y0 = top + i * band + gap_h / 2
        body.append(_text(left - 6, y0 + bar_h * len(eras) / 2 + 4, _short(model), anchor="end"))
        for k, era in enumerate(eras):
            cy = y0 + (k + 0.5) * bar_h
            value, low, high = data.get((model, era), (None, None, None))
            summary = _ci_text(value, low, high, digits)
            if value is None:
                body.append(_text(x(0) + 4, cy + 3.5, f"{era}: no data", extra=' class="missing" fill="#777"'))
                continue
            x0, x1 = sorted((x(0), x(value)))
            faded = (f' fill-opacity="0.35" stroke="{TEXT}" stroke-dasharray="{CONTROL_DASH}"' if model in controls
                     else "")
            body.append(f'<rect class="bar{" control" if model in controls else ""}" x="{_n(x0)}" '
                        f'y="{_n(cy - bar_h / 2 + 1)}" width="{_n(max(x1 - x0, 1))}" '
                        f'height="{_n(bar_h - 2)}" fill="{CATEGORICAL[k % len(CATEGORICAL)]}"{faded}>'
                        f"<title>{_esc(f'{model}, {era}: {summary}')}</title></rect>")
            if low is not None and high is not None:
                body.append(_whisker(x(low), x(high), cy, half=3))
            body.append(_text(note_x, cy + 3.5, f"{_short(era, 12)}: {summary}", extra=' fill="#555"'))

    if desc is None:
        missing = sum(data.get((m, e), (None,))[0] is None for m in models for e in eras)
        desc = (f"Grouped bars for {len(models)} models and {len(eras)} eras ({', '.join(eras)}); whiskers are 95% "
                f"confidence intervals; {missing} model-era pairs have no data."
                + _context_desc(chance, shown_controls, digits))
    return _document(width, height, title, desc, body)


def _context_desc(chance: float | None, controls: list[str], digits: int) -> str:
    """The description's sentence on the chance line and the controls."""
    out = f" The dashed line is the chance level, {_fmt(chance, digits)}." if _num(chance) is not None else ""
    return out + (f" Controls (never ranked), drawn faded and dashed: {', '.join(controls)}." if controls else "")


# --- curves over an ordered slice ---------------------------------------------------------------

def curve_svg(rows: list[dict], title: str, *, x_label: str, desc: str | None = None, chance: float | None = None,
              controls: Iterable[str] = ()) -> str:
    """One line per model over ordered x values (``rows`` = ``[{model, x, value, low, high}]``, x numbers), with a
    CI whisker at each point and a legend. Points without a value break the line ("no data"). ``chance``: a dashed
    horizontal line at the chance level, labelled at its right end; ``controls``: those models' lines are dashed
    (``class="line control"``), as is their legend swatch, named "(control)"."""
    controls = set(controls)
    rows = [r for r in rows if _num(r.get("x")) is not None]
    if not rows:
        return _empty(title, "Curves")
    models = _unique(str(r["model"]) for r in rows)
    xs = sorted({float(r["x"]) for r in rows})
    data = {(str(r["model"]), float(r["x"])): (_num(r.get("value")), _num(r.get("low")), _num(r.get("high")))
            for r in rows}
    values = [v for triple in data.values() for v in triple if v is not None]
    values += [chance] if _num(chance) is not None and values else []
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    if low == high:
        low, high = low - (abs(low) or 1) * 0.5, high + (abs(high) or 1) * 0.5
    ticks = _nice_ticks(low, high)
    plot_w, plot_h, left, top = 360.0, 200.0, 56.0, 40.0
    legend_w = max(_width(_short(m) + (" (control)" if m in controls else "")) for m in models) + 30
    width = left + plot_w + 24 + legend_w
    height = max(top + plot_h + 46, top + 16 * len(models) + 10)

    def x(v: float) -> float:
        return left + (0.5 if len(xs) == 1 else (v - xs[0]) / (xs[-1] - xs[0])) * plot_w

    def y(v: float) -> float:
        return top + plot_h - (v - ticks[0]) / (ticks[-1] - ticks[0]) * plot_h

    body = []
    for t in ticks:
        body += [_hline(left, left + plot_w, y(t)), _text(left - 6, y(t) + 4, _tick_label(t, ticks), anchor="end")]
    for v in xs:
        body.append(_text(x(v), top + plot_h + 16, _fmt(v, _tick_digits(xs)), anchor="middle"))
    body.append(_text(left + plot_w / 2, top + plot_h + 34, x_label, anchor="middle"))
    digits = _ci_digits(data.values(), ticks)
    if _num(chance) is not None:
        body += [_chance_line(left, y(chance), left + plot_w, y(chance)),
                 _text(left + plot_w - 4, y(chance) - 4, f"chance {_fmt(chance, digits)}", anchor="end",
                       extra=' class="chance-label"')]
    for k, model in enumerate(models):
        colour = CATEGORICAL[k % len(CATEGORICAL)]
        dash = f' stroke-dasharray="{CONTROL_DASH}"' if model in controls else ""
        path, pen = [], "M"
        for v in xs:
            value, lo, hi = data.get((model, v), (None, None, None))
            if value is None:
                pen = "M"
                continue
            path.append(f"{pen}{_n(x(v))} {_n(y(value))}")
            pen = "L"
            if lo is not None and hi is not None:
                body.append(f'<path class="whisker" d="M{_n(x(v))} {_n(y(lo))}V{_n(y(hi))}" stroke="{colour}" '
                            f'stroke-width="1" fill="none"/>')
            body.append(f'<circle class="point" cx="{_n(x(v))}" cy="{_n(y(value))}" r="3" fill="{colour}">'
                        f"<title>{_esc(f'{model}, {x_label} {_fmt(v, _tick_digits(xs))}: {_ci_text(value, lo, hi, digits)}')}"
                        "</title></circle>")
        if path:
            body.append(f'<path class="line{" control" if dash else ""}" d="{"".join(path)}" stroke="{colour}" '
                        f'stroke-width="1.6" fill="none"{dash}/>')
        ly = top + 8 + 16 * k
        body += [f'<path d="M{_n(left + plot_w + 24)} {_n(ly - 6.5)}h14" stroke="{colour}" stroke-width="3"{dash}/>',
                 _text(left + plot_w + 42, ly - 3, _short(model) + (" (control)" if dash else ""))]
    if desc is None:
        desc = (f"Lines of {len(models)} models over {x_label} ({', '.join(_fmt(v, _tick_digits(xs)) for v in xs)}); "
                "whiskers are 95% confidence intervals." + _context_desc(chance, [m for m in models if m in controls],
                                                                         digits))
    return _document(width, height, title, desc, body)


# --- level versus gap -------------------------------------------------------------------------

def frontier_svg(points: list[dict], title: str, *, x_label: str, y_label: str, higher_is_better: bool = True,
                 desc: str | None = None) -> str:
    """One point per model at (``x``: its level, ``y``: its gap, smaller is better) with CI whiskers on both axes
    (``points`` = ``[{model, x, x_low, x_high, y, y_low, y_high}]``). The frontier joins the models that no other
    model beats on both: a better level (higher, or lower when not ``higher_is_better``) and a smaller gap; they
    are labelled, the others have tooltips."""
    data = [(str(p["model"]), *(_num(p.get(k)) for k in ("x", "x_low", "x_high", "y", "y_low", "y_high")))
            for p in points]
    data = [d for d in data if d[1] is not None and d[4] is not None]
    if not data:
        return _empty(title, "Frontier plot")
    sign = 1 if higher_is_better else -1
    front = [d for d in data if not any((sign * o[1] >= sign * d[1] and o[4] <= d[4]) and
                                        (sign * o[1] > sign * d[1] or o[4] < d[4]) for o in data)]
    front.sort(key=lambda d: d[1])
    x_ticks = _nice_ticks(*_spread([v for d in data for v in (d[1], d[2], d[3]) if v is not None]))
    y_ticks = _nice_ticks(*_spread([0.0] + [v for d in data for v in (d[4], d[5], d[6]) if v is not None]))
    plot_w, plot_h, left, top = 380.0, 240.0, 60.0, 40.0
    labels = max([_width(_short(d[0], 28)) for d in front] + [0.0])
    width = left + plot_w + 16 + labels
    height = max(top + plot_h + 48, top + 12 * len(front) + 60)

    def x(v: float) -> float:
        return left + (v - x_ticks[0]) / (x_ticks[-1] - x_ticks[0]) * plot_w

    def y(v: float) -> float:
        return top + plot_h - (v - y_ticks[0]) / (y_ticks[-1] - y_ticks[0]) * plot_h

    body = []
    for t in x_ticks:
        body += [_vline(x(t), top, top + plot_h), _text(x(t), top + plot_h + 14, _tick_label(t, x_ticks), anchor="middle")]
    for t in y_ticks:
        body += [_hline(left, left + plot_w, y(t)), _text(left - 6, y(t) + 4, _tick_label(t, y_ticks), anchor="end")]
    body += [_text(left + plot_w / 2, top + plot_h + 34, f"{x_label} ({'higher' if higher_is_better else 'lower'} is better) \u2192",
                   anchor="middle"),
             _text(left, top - 8, f"\u2191 {y_label} (smaller is better)")]
    if len(front) > 1:
        body.append(f'<path class="frontier" d="M{"L".join(f"{_n(x(d[1]))} {_n(y(d[4]))}" for d in front)}" '
                    f'stroke="{POSITIVE}" stroke-width="1.5" stroke-dasharray="4 3" fill="none"/>')
    for model, xv, xl, xh, yv, yl, yh in data:
        on = any(d[0] == model for d in front)
        if xl is not None and xh is not None:
            body.append(f'<path class="whisker" d="M{_n(x(xl))} {_n(y(yv))}H{_n(x(xh))}" stroke="#999" fill="none"/>')
        if yl is not None and yh is not None:
            body.append(f'<path class="whisker" d="M{_n(x(xv))} {_n(y(yl))}V{_n(y(yh))}" stroke="#999" fill="none"/>')
        tip = f"{model}: {x_label} {_ci_text(xv, xl, xh, 3)}; {y_label} {_ci_text(yv, yl, yh, 3)}"
        body.append(f'<circle class="point{" front" if on else ""}" cx="{_n(x(xv))}" cy="{_n(y(yv))}" r="{4 if on else 3}" '
                    f'fill="{POSITIVE if on else "#888"}"><title>{_esc(tip)}</title></circle>')
    placed = -math.inf
    for model, xv, _, _, yv, _, _ in sorted(front, key=lambda d: -d[4]):  # top to bottom, at least 12 px apart
        label_y = max(y(yv) + 4, placed + 12)
        placed = label_y
        body.append(_text(left + plot_w + 8, label_y, _short(model, 28), extra=f' fill="{POSITIVE}"'))
        body.append(f'<path d="M{_n(x(xv) + 5)} {_n(y(yv))}L{_n(left + plot_w + 6)} {_n(label_y - 4)}" '
                    f'stroke="{POSITIVE}" stroke-width="0.6" stroke-dasharray="1 2" fill="none"/>')
    if desc is None:
        desc = (f"{len(data)} models by {x_label} (x) and {y_label} (y, smaller is better), whiskers are 95% confidence "
                f"intervals; the dashed frontier joins the {len(front)} model(s) no other beats on both: "
                + "; ".join(d[0] for d in front) + ".")
    return _document(width, height, title, desc, body)


def _spread(values: list[float]) -> tuple[float, float]:
    low, high = min(values), max(values)
    if low == high:
        low, high = low - (abs(low) or 1) * 0.5, high + (abs(high) or 1) * 0.5
    return low, high
