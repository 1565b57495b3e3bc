"""The tables' HTML (site/cells.py): metric headers link their page and the trust page; sticky columns are marked
in the header and every body cell, whatever the cell's kind, numbered from the left (style.css, app.js). Fast."""

from __future__ import annotations

from cultureboard.site.cells import body, head
from cultureboard.site.write import Column

COLUMNS = [Column("rank", "Rank", "rank"), Column("submission", "Submission", "link", sticky=True),
           Column("m", "Metric <M>", "score", href="metric/m.html", sticky=True),
           Column("weights", "Weights", "text")]
ROW = {"rank": {"rank": 1, "best": 1, "worst": 2}, "submission": {"text": "lab / a", "href": "model/a.html"},
       "m": {"value": 0.5, "ci_low": 0.4, "ci_high": 0.6, "n_images": 8, "n_prompts": 4, "coverage": 1.0},
       "weights": "open"}


def test_a_metric_header_links_its_page_and_the_trust_page():
    html = str(head(COLUMNS, "../"))
    assert ('<a href="../metric/m.html">Metric &lt;M&gt;</a> <a class="trust" href="../trust.html" '
            'title="How far this metric tracks human judgement">trust</a>') in html
    assert html.count("<a ") == 2  # the other headers are plain text (a click sorts)


def test_sticky_columns_are_marked_in_the_header_and_every_cell():
    html = str(head(COLUMNS, ""))
    assert '<th scope="col" data-key="submission" class="sticky s0"' in html
    assert '<th scope="col" data-key="m" class="sticky s1"' in html
    assert html.count("sticky") == 2
    cells = str(body(COLUMNS, [ROW, {**ROW, "m": None}], "")).split("\n")
    tds = [c for c in cells if c.startswith("<td")]
    assert [t.split(">", 1)[0] for t in tds[:4]] == [
        '<td class="rank tie" data-sort="1" title="Tied: the 95% CI overlaps others\', so the rank is anywhere from 1 '
        'to 2"', '<td class="sticky s0"', '<td class="sticky s1 score" data-sort="0.5"', "<td"]
    assert tds[6].startswith('<td class="sticky s1 na" data-sort="">')  # a missing value's cell too
