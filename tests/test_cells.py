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


def tds(columns, rows, root="") -> list[str]:
    return [line for line in str(body(columns, rows, root)).split("\n") if line.startswith("<td")]


def test_number_cells_show_integers_whole_and_other_values_to_three_decimals():
    got = tds([Column("x", "X", "num")], [{"x": 3}, {"x": 0.12345}, {"x": float("nan")}, {"x": True}, {"x": -2e-7}])
    assert got == ['<td class="num" data-sort="3">3</td>', '<td class="num" data-sort="0.12345">0.123</td>',
                   '<td class="num" data-sort="nan">—</td>', '<td class="num" data-sort="True">True</td>',
                   '<td class="num" data-sort="-2e-07">-0.000</td>']


def test_a_score_cell_counts_images_then_prompts():
    [cell] = tds([Column("m", "M", "score")], [{"m": {**ROW["m"], "n_images": 8, "n_prompts": 4}}])
    assert '<span class="n" title="8 images, 4 prompts, coverage 100%">n=8/4</span>' in cell


def test_every_link_and_image_under_the_root_is_escaped():
    columns = [Column("s", "S", "link"), Column("i", "I", "thumb")]
    image = {"thumb": "thumbs/a.webp", "full": "images/a.png", "alt": 'a "b"', "status": "ok"}
    got = tds(columns, [{"s": {"text": "<x>", "href": "model/a.html"}, "i": image}], root='"/')
    assert got == ['<td><a href="&#34;/model/a.html">&lt;x&gt;</a></td>',
                   '<td class="thumb"><a href="&#34;/images/a.png" title="Full size"><img src="&#34;/thumbs/a.webp" '
                   'alt="a &#34;b&#34;" loading="lazy"></a></td>']
