"""A table's header and body as HTML, built in Python: tables are most of the site's bytes (the image browser
alone has a row per image), and one function call per cell is several times faster than a Jinja macro.

Every value that reaches the HTML is escaped (text and attributes alike: ``& < > " '`` become entities, exactly
as Jinja's autoescaping does); the result is :class:`markupsafe.Markup` for the templates. Cells:

* ``score``: value [CI] at the precision of its CI (:func:`at_precision`; a value without a CI, from one
  prompt, shows its ``ci_note``, "no CI: 1 prompt"),
  n = images / prompts with their title, the caveat badge and any cell badges;
  ``data-sort`` = the value (empty without one), or its distance to the column's target;
* ``rank``: the rank, or "best–worst" with a title when tied, and its badges (the stand-in mark); ``range``: a rank spread with its best and worst
  ranks and the variants that gave them;
* ``link``, ``num`` (integers as they are, others to 3 decimals), ``pct``, ``text``;
* a ``sticky`` column's header and cells carry ``sticky s<k>`` (it stays in view while the table scrolls
  sideways); a metric column's header (``href``) links the metric's page and the trust page;
* ``thumb``: a thumbnail linked to its full-size image (an external link for a Hub image); ``notes``: the
  explanations of an image's rows, one ``<details>`` per (merged) metric.
"""

from __future__ import annotations

from markupsafe import Markup

from .media_hub import HUB
from .names import caveat, link, num, pct


def escape(v) -> str:
    """``v`` as HTML text or attribute value: Jinja's escaping, as plain text (no Markup object per call; a
    number needs none)."""
    if type(v) in (int, float):
        return str(v)
    return (str(v).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&#34;")
            .replace("'", "&#39;"))



def at_precision(value: float, low: float, high: float, digits: int = 3, most: int = 10) -> tuple[str, str, str]:
    """``value [low, high]`` as text with the fewest decimals, from ``digits`` up to ``most``, at which the
    bounds print differently (an interval that is not a point never prints as one: 0.3395 [0.3391, 0.3399] is
    not shown as 0.340 [0.340, 0.340]); a point interval (low = high) at ``digits``."""
    d = digits
    while low != high and d < most and f"{low:.{d}f}" == f"{high:.{d}f}":
        d += 1
    return f"{value:.{d}f}", f"{low:.{d}f}", f"{high:.{d}f}"


def _badges(items) -> str:
    return "".join(f' <span class="badge" title="{escape(b["title"])}">{escape(b["label"])}</span>' for b in items or ())


def head(columns, root: str = "") -> Markup:
    """The header row. A metric column (``href``) names its metric as a link to the metric's page, then links the
    trust page (where the metric tracks human judgement); a ``sticky`` column stays in view while the table
    scrolls sideways (:func:`_sticky`)."""
    cells = []
    sticky = _sticky(columns)
    for c in columns:
        attrs = f' data-key="{escape(c.key)}"'
        if c.better:
            attrs += f' data-better="{escape(c.better)}"'
        classes = " ".join(filter(None, ("muted" if c.muted else "", sticky.get(c.key, ""))))
        if classes:
            attrs += f' class="{classes}"'
        if c.title:
            attrs += f' title="{escape(c.title)}"'
        label = escape(c.label)
        if c.href:
            label = (f'<a href="{escape(root)}{escape(c.href)}">{label}</a> <a class="trust" href="{escape(root)}'
                     'trust.html" title="How far this metric tracks human judgement">trust</a>')
        cells.append(f'<th scope="col"{attrs}>{label}{_badges(c.badges)}</th>')
    return Markup("<thead><tr>" + "".join(cells) + "</tr></thead>")


def _sticky(columns) -> dict[str, str]:
    """key -> the classes of a sticky column: ``sticky s<k>`` for the k-th sticky column from the left (style.css
    places s0 at the left edge and s1 right of it, at the offset app.js measures; a table has at most two)."""
    return {c.key: f"sticky s{k}" for k, c in enumerate(c for c in columns if c.sticky)}


def body(columns, rows, root: str) -> Markup:
    out = ["<tbody>\n"]
    sticky = _sticky(columns)
    columns = [(c, c.key, sticky.get(c.key)) for c in columns]
    root = escape(root)
    for row in rows:
        marks = row.get("_marks") or {}
        cls = ' class="control"' if row.get("_control") else ' class="muted"' if row.get("_muted") else ""
        # what static/filters.js filters by: the fields the row's submission declares
        cls += "".join(f' data-{k}="{escape(v)}"' for k, v in (row.get("_filter") or {}).items() if v is not None)
        out.append(f"<tr{cls}>\n")
        for c, key, classes in columns:
            td = cell(c, row[key], marks.get(key), root)
            if classes:  # every cell starts '<td class="' or '<td>'
                td = (td.replace('<td class="', f'<td class="{classes} ', 1) if td.startswith('<td class="')
                      else td.replace("<td", f'<td class="{classes}"', 1))
            out.append(td + "\n")
        out.append("</tr>\n")
    out.append("</tbody>")
    return Markup("".join(out))


def cell(c, v, marks, root: str) -> str:
    """Column ``c``'s cell of value ``v`` with its badges ``marks``; ``root`` (the way up to the site's top) escaped."""
    muted = " muted" if c.muted else ""
    if v is None:
        return f'<td class="na{muted}" data-sort="">—{_badges(marks)}</td>'
    kind = c.kind
    if kind == "score":
        note = caveat(v)
        value = v["value"]
        shown = ('<span class="v">—</span>' if value is None else
                 '<span class="v">{}</span> <span class="ci">[{}, {}]</span>'.format(
                     *at_precision(value, v["ci_low"], v["ci_high"]))
                 if v["ci_low"] is not None else
                 f'<span class="v">{num(value)}</span> <span class="ci">({escape(v.get("ci_note") or "no CI")})</span>')
        images, prompts = escape(v["n_images"]), escape(v["n_prompts"])
        title = f'{images} images, {prompts} prompts, coverage {pct(v.get("coverage"))}'
        badge = f' <span class="badge" title="{escape(note["title"])}">{escape(note["label"])}</span>' if note else ""
        key = "" if value is None else escape(value if c.target is None else abs(value - c.target))
        return (f'<td class="score{muted}" data-sort="{key}">{shown} '
                f'<span class="n" title="{title}">n={images}/{prompts}</span>'
                f"{badge}{_badges(marks)}</td>")
    if kind == "rank":
        if v["best"] == v["worst"]:
            return f'<td class="rank" data-sort="{escape(v["rank"])}">{escape(v["best"])}{_badges(marks)}</td>'
        return (f'<td class="rank tie" data-sort="{escape(v["rank"])}" title="Tied: the 95% CI overlaps others\', so the '
                f'rank is anywhere from {escape(v["best"])} to {escape(v["worst"])}">{escape(v["best"])}–{escape(v["worst"])}'
                f'{_badges(marks)}</td>')
    if kind == "range":
        return (f'<td class="num" data-sort="{escape(v["value"])}" title="best rank {escape(v["best"][1])} with '
                f'{escape(v["best"][0])}, worst rank {escape(v["worst"][1])} with {escape(v["worst"][0])}">'
                f'{escape(v["value"])} <span class="ci">(ranks {escape(v["best"][1])}–{escape(v["worst"][1])}, '
                f'{escape(v["n"])} scorers)</span>{_badges(marks)}</td>')
    if kind == "link":
        return f'<td><a href="{root}{escape(v["href"])}">{escape(v["text"])}</a>{_badges(marks)}</td>'
    if kind == "num":
        if type(v) in (int, float):  # its text (digits, sign, point, exponent, nan, inf) needs no escaping
            return f'<td class="num" data-sort="{v}">{v if type(v) is int else num(v)}</td>'
        shown = v if isinstance(v, int) else num(v)
        return f'<td class="num" data-sort="{escape(v)}">{escape(shown)}</td>'
    if kind == "pct":
        return f'<td class="num" data-sort="{escape(v)}">{pct(v)}</td>'
    if kind == "thumb":
        return f'<td class="thumb">{_image(v, root)}</td>'
    if kind == "notes":
        return f'<td class="notes">{notes(v)}</td>'
    return f"<td>{escape(v)}{_badges(marks)}</td>"


def _image(im: dict, root: str) -> str:
    """A thumbnail linked to its full-size file; a Hub image as an external link; else its status (``root``
    escaped)."""
    external = bool(im.get("external") and im.get("full") and link(im["full"]))
    href = escape(im["full"]) if external else f'{root}{escape(im.get("full") or "")}'
    rel = ' rel="noopener noreferrer"' if external else ""
    if im.get("thumb"):
        src = escape(im["thumb"]) if im["thumb"].startswith(HUB + "/") else f"{root}{escape(im['thumb'])}"
        img = f'<img src="{src}" alt="{escape(im["alt"])}" loading="lazy">'
        return f'<a href="{href}"{rel} title="Full size">{img}</a>' if im.get("full") else img
    if external:
        return f'<a class="na" href="{href}"{rel}>image on the Hub</a>'
    return f'<span class="na">image {escape(im["status"])}</span>'


def image_list(images, root: str) -> Markup:
    """A prompt page's images of one submission: each a linked thumbnail with "sample k: value" under it."""
    out = []
    root = escape(root)
    for im in images:
        value = "" if im["value"] is None else f": {num(im['value'])}"
        out.append(f'<li>{_image(im, root)}<span class="caption">sample {escape(im["sample"])}{value}</span></li>')
    return Markup("\n".join(out))


def notes(items) -> str:
    out = []
    for n in items or ():
        flag = f': <span class="badge">flagged</span> {escape(n["flag"])}' if n.get("flag") else ""
        explained = ""
        if n.get("explained"):
            parts = []
            for item in n["explained"]:
                if "entries" in item:
                    value = "<ul>" + "".join(f"<li>{escape(x)}</li>" for x in item["entries"]) + "</ul>"
                    parts.append(f"<dt>{escape(item['label'])}</dt><dd>{value}</dd>")
                else:
                    parts.append(f'<dt>{escape(item["label"])}</dt><dd class="text">{escape(item["text"])}</dd>')
            explained = '<dl class="explain">' + "".join(parts) + "</dl>"
        out.append(f"<details><summary>{escape(n['metric'])}{flag}</summary>{explained}</details>")
    return "".join(out)
