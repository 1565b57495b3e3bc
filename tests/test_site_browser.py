"""The built site in a real browser (headless Chromium through Playwright), over file:// and over HTTP.

From real results of every family (``site_worlds``: tiny stand-in scorers, one submission under hostile names,
a text-only control, two shifted copies of each other family's result: models lab / v0 and lab / v1 on four
families, beside lab / alpha, so agreement.html has a tau) the site is built once; then, for each
origin, the pages reachable from ``index.html`` are loaded (every page, except that of a folder of many alike
pages, prompt pages, image-browser pages and map pages, two are loaded and the rest checked to exist) and must:
resolve every internal link and resource (no 404, no missing file, no missing ``#fragment`` target), log no
console error or page error, open no dialog, and request nothing outside the site. Then each view is used:
clicking a sortable header orders the rows by that column, best first on the first click; the keyboard reaches
and works every control (sorting, the prompt filters, the map's choice, explanations); the filter hides rows;
the gallery's filters keep only matching prompts; the world map is drawn (a screenshot holds its colours) and
recoloured for a chosen submission; no label of any plot is clipped; screenshots are not blank.

Needs Debian's ``chromium`` (``apt-get install chromium``; path overridable with ``CULTUREBOARD_CHROMIUM``)
and the ``playwright`` Python package (no browser download). Without them the tests are skipped, except
when ``CI`` is set: there a missing browser is a failure, so a broken CI set-up cannot pass silently.
"""

from __future__ import annotations

import functools
import http.server
import io
import json
import os
import re
import shutil
import threading
from collections import deque
from pathlib import Path
from urllib.parse import urldefrag, urlsplit
from urllib.request import url2pathname

import numpy as np
import pytest
import site_worlds
import yaml
from PIL import Image

CHROMIUM = os.environ.get("CULTUREBOARD_CHROMIUM", "/usr/bin/chromium")
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync"]
HOSTILE_MODEL = site_worlds.HOSTILE[1]
#: Folders of many alike pages: the crawl loads this many of each and checks that the others exist.
BULK = re.compile(r"/(prompt/[^/]+|model/[^/]+|map/[^/]+)/[^/]+\.html$")
PER_BULK_FOLDER = 2
#: headers that sort their table when clicked (the renderer's app.js marks them so)
SORTABLE = "table.sortable th, th[data-sort], th.sortable"
FILTER = "input[type=search][data-table], input[type=search]:not(#search-box), input[data-filter]"  # not the site search
TIMEOUT_MS = 15_000
#: The filter fields the shifted copies declare (lab / alpha declares none).
DECLARED = {"v0": {"weights": "open", "release_date": "2023-05-01", "parameters": 1e9},
            "v1": {"weights": "closed", "release_date": "2024-09-01", "parameters": 8e9}}


def _missing(reason: str):
    if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        pytest.fail(f"{reason}; CI is set, so the browser tests must run: install both (see .ci/run)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def sync_api():
    try:
        from playwright import sync_api
    except ImportError:
        _missing("the playwright Python package is not installed (pip install playwright)")
    if not os.access(CHROMIUM, os.X_OK):
        _missing(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set CULTUREBOARD_CHROMIUM)")
    return sync_api


@pytest.fixture(scope="session")
def browser(sync_api):
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def site(tmp_path_factory, tiny_scorers) -> Path:
    """The site built from real results of every family (and a few shifted copies)."""
    from cultureboard.site.render import build_site

    base = site_worlds.five_families(tmp_path_factory.getbasetemp(), tiny_scorers)
    root = tmp_path_factory.mktemp("browser-site")
    results, submissions = root / "results", root / "submissions"
    shutil.copytree(base["results"], results)
    shutil.copytree(base["submissions"], submissions)
    for k, (prompt_set, ids) in enumerate(sorted(base["ids"].items())):
        if prompt_set != "cube-awareness":
            for i, shift in enumerate((-0.05, 0.05)):
                site_worlds.variant(base["results"], base["submissions"], ids[0], f"v{i}", shift, 10 * k + i,
                                    results, submissions, unflag=prompt_set == "cultivate", tag=prompt_set)
    for folder in submissions.iterdir():  # what the boards' filters read: v0 open, older and smaller than closed v1
        model = folder.name.split("__")[1]
        if model in DECLARED:
            spec = yaml.safe_load((folder / "submission.yaml").read_text())
            spec["model"].update(DECLARED[model])
            (folder / "submission.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    out = root / "site"
    build_site(results, base["dataset"], submissions, out)
    assert (out / "index.html").is_file(), "the site has no index.html at its root"
    return out


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest's output clean
        pass


@pytest.fixture(scope="session")
def http_root(site):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.fixture(params=["file", "http"])
def root(request, site) -> str:
    """The site's root URL (ending in /) over file:// or over the local HTTP server."""
    return site.as_uri() + "/" if request.param == "file" else request.getfixturevalue("http_root")


class Watched:
    """A browser context whose page events are recorded: console errors, page errors, dialogs, failed or
    foreign requests (those are aborted, so nothing leaves the site even if the page tries)."""

    def __init__(self, browser, root: str, width: int = 1280, height: int = 900):
        self.root = root
        self.problems: list[str] = []
        self.context = browser.new_context(viewport={"width": width, "height": height})
        self.context.set_default_timeout(TIMEOUT_MS)
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.problems.append(f"console error: {m.text} ({m.location})"))
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.on("dialog", self._dialog)
        self.page.on("request", self._request)
        self.page.on("requestfailed", self._failed)
        self.page.on("response", lambda r: r.status >= 400 and self.problems.append(f"HTTP {r.status}: {r.url}"))

    def _failed(self, request):
        # ERR_ABORTED: the page was left while a (lazy) image loaded; a missing file shows as HTTP 404 or
        # ERR_FILE_NOT_FOUND, and a foreign request as "leaving the site"
        if request.failure != "net::ERR_ABORTED":
            self.problems.append(f"request failed: {request.url} ({request.failure})")

    def report(self) -> str:
        """The problems, each once with its count (a missing script repeats on every page)."""
        counts: dict[str, int] = {}
        for p in self.problems:
            counts[p] = counts.get(p, 0) + 1
        lines = [p + (f" (x{n})" if n > 1 else "") for p, n in counts.items()]
        return "\n".join(lines[:30] + ([f"... and {len(lines) - 30} more"] if len(lines) > 30 else []))

    def resource_ok(self, url: str) -> bool:
        """``url`` (of this site, fragment removed) names a file that exists; never loaded into the page."""
        if url.startswith("file:"):
            path = Path(url2pathname(urlsplit(url).path))  # url2pathname also undoes %-escapes
            return path.is_file() or (path.is_dir() and (path / "index.html").is_file())
        return self.context.request.get(url).ok

    def _dialog(self, dialog):
        self.problems.append(f"dialog opened: {dialog.type} {dialog.message!r} (a script ran from page data?)")
        dialog.dismiss()

    def _local(self, url: str) -> bool:
        return url.startswith((self.root, "data:", "blob:", "about:"))

    def _request(self, request):
        if not self._local(request.url):
            self.problems.append(f"request leaving the site: {request.url}")

    def _route(self, route):
        if self._local(route.request.url):
            route.continue_()
        else:
            route.abort()

    def goto(self, url: str):
        response = self.page.goto(url, wait_until="load")
        assert response is None or response.ok, f"{url}: HTTP {response.status}"

    def close(self):
        self.context.close()


@pytest.fixture
def watched(browser, root):
    w = Watched(browser, root)
    yield w
    w.close()


#: The results repository and commit the hub-mode site links its images at.
HUB_REPO, HUB_COMMIT = "lab/results", "d" * 40


@pytest.fixture(scope="session")
def hub_site(tmp_path_factory, tiny_scorers, site) -> tuple[Path, Path]:
    """The same results built with ``--media hub``: their media made as ``publish media`` makes them (into a folder
    that stands in for the results dataset: nothing is uploaded) and the site linking them at :data:`HUB_COMMIT`."""
    from cultureboard.site import media_hub
    from cultureboard.site.load import load_results
    from cultureboard.site.render import build_site

    base = site_worlds.five_families(tmp_path_factory.getbasetemp(), tiny_scorers)
    results, submissions, media = site.parent / "results", site.parent / "submissions", site.parent / "media"
    made = media_hub.make_media(load_results(results, submissions)[0], media)
    media_hub.record(media, HUB_REPO, HUB_COMMIT, made["media"])
    out = site.parent / "hub-site"
    build_site(results, base["dataset"], submissions, out, media="hub", media_from=media)
    return out, media


class HubWatched(Watched):
    """:class:`Watched` for a hub-mode site: the requests for its images on the Hub are answered from ``media``
    (a missing file: 404, a problem), every other request outside the site is still aborted."""

    def __init__(self, browser, root: str, media: Path):
        self.hub = f"https://huggingface.co/datasets/{HUB_REPO}/resolve/{HUB_COMMIT}/media/"
        self.media, self.served = media, 0
        super().__init__(browser, root)

    def _local(self, url: str) -> bool:
        return url.startswith(self.hub) or super()._local(url)

    def _route(self, route):
        url = route.request.url
        if not url.startswith(self.hub):
            return super()._route(route)
        path = self.media / url[len(self.hub):]
        if path.is_file():
            self.served += 1
            route.fulfill(status=200, body=path.read_bytes(), content_type="image/webp" if path.suffix == ".webp"
                          else "image/png")
        else:
            route.fulfill(status=404, body=b"")


def test_a_hub_media_site_works_with_its_images_on_the_hub(browser, hub_site):
    """The crawl, sorting and search of the local site pass on the hub-mode site, whose images load from the Hub."""
    out, media = hub_site
    assert not (out / "thumbs").exists() and not (out / "images").exists()
    w = HubWatched(browser, out.as_uri() + "/", media)
    try:
        test_crawl_every_page(w, w.root)
        assert w.served > 0, "no image of the hub-mode site was requested from the Hub"
        test_sort_by_clicking_header(w, w.root)
        test_search_box_lists_and_opens_a_result(w, w.root)
        assert not w.problems, w.report()
    finally:
        w.close()


def _is_page(url: str) -> bool:
    path = urlsplit(url).path
    return path.endswith((".html", "/"))


def test_crawl_every_page(watched, root):
    """Every page reachable from index.html loads with no error, broken link or image, missing anchor or
    foreign request (of a folder of many alike pages, :data:`PER_BULK_FOLDER` are loaded and the others checked to
    exist); downloads (CSV, JSON) and images are checked to exist without being opened."""
    start = root + "index.html"
    seen, queue, checked = {start}, deque([start]), {}
    loaded_in: dict[str, int] = {}
    fragments: list[tuple[str, str]] = []  # (page, link with #fragment to another page)
    broken: list[str] = []
    while queue:
        url = queue.popleft()
        watched.goto(url)
        assert watched.page.title().strip(), f"{url} has no <title>"
        links = watched.page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
        images = watched.page.eval_on_selector_all("img[src]", "els => els.map(e => e.currentSrc || e.src)")
        ids = set(watched.page.eval_on_selector_all("[id], a[name]", "els => els.map(e => e.id || e.name)"))
        for image in images:
            if image.startswith(root) and urldefrag(image)[0] not in checked:
                checked[urldefrag(image)[0]] = watched.resource_ok(urldefrag(image)[0])
            if not checked.get(urldefrag(image)[0], True):
                broken.append(f"{url}: image {image} does not exist")
        for link in links:
            target, fragment = urldefrag(link)
            if not target.startswith(root):
                assert not target.startswith(("file:", "http://127.0.0.1", "http://localhost")), \
                    f"{url} links outside the site's folder: {link}"
                continue  # an external link (paper, model card) is fine; following it is not this test's job
            if target == urldefrag(url)[0]:
                if fragment and fragment not in ids:
                    broken.append(f"{url}: #{fragment} names no element")
                continue
            if target.endswith("/") and root.startswith("file:"):
                broken.append(f"{url}: {link} links a folder, which file:// does not open as its index.html")
                continue
            if target not in checked:
                checked[target] = watched.resource_ok(target)
            if not checked[target]:
                broken.append(f"{url}: {link} does not exist")
            elif _is_page(target):
                if fragment:
                    fragments.append((url, link))
                if target not in seen:
                    seen.add(target)
                    bulk = BULK.search(urlsplit(target).path)
                    folder = bulk.group(1) if bulk else None
                    loaded_in[folder] = loaded_in.get(folder, 0) + 1
                    if folder is None or loaded_in[folder] <= PER_BULK_FOLDER:
                        queue.append(target)
    for url, link in fragments:
        target, fragment = urldefrag(link)
        watched.goto(target)
        if not watched.page.locator(f"[id='{fragment}'], a[name='{fragment}']").count():
            broken.append(f"{url}: {link} names no element of its page")
    assert not broken, "broken links:\n" + "\n".join(sorted(set(broken)))
    assert not watched.problems, watched.report()
    assert len(seen) >= 5, f"only {len(seen)} pages reachable from index.html"
    for kind in ("/country/", "/family/", "/leaderboard/", "/gallery/", "/prompt/", "/map/", "/metric/", "/images-"):
        assert any(kind in u for u in seen), f"no {kind} page reachable from index.html"


def test_hostile_model_name_is_text(watched, root):
    watched.goto(root + "index.html")
    body = watched.page.inner_text("body")
    assert HOSTILE_MODEL in body or "<script>alert(1)</script>" in body, "the hostile model name is not shown as text"
    assert not watched.problems, watched.report()


def _table_with_sortable_numeric_column(page):
    """(table, header, column index) of the visible sortable header whose column holds the most different
    numbers (at least two)."""
    best, most = None, 1
    for header in page.locator(SORTABLE).all():
        if not header.is_visible():
            continue
        table = header.locator("xpath=ancestor::table[1]")
        index = header.evaluate("th => th.cellIndex")
        distinct = len({v for v in _column(table, index) if v is not None})
        if distinct > most:
            best, most = (table, header, index), distinct
    return best


_NUMBER = re.compile(r"[-\u2212]?\d+(?:\.\d+)?")


def _column(table, index: int) -> list[float | None]:
    """The numbers of column ``index`` of the table's body rows, top to bottom (None where a cell has none);
    a cell's ``data-value`` (the sort key) wins over its text."""
    cells = table.evaluate(
        """(t, i) => Array.from(t.tBodies).flatMap(b => Array.from(b.rows)).map(r => {
               const c = r.cells[i]; if (!c) return null;
               return c.dataset.value ?? c.dataset.sort ?? c.textContent; })""", index)
    out = []
    for text in cells:
        m = _NUMBER.search(text or "")
        out.append(float(m.group().replace("\u2212", "-")) if m else None)
    return out


def _sort_click(header):
    """Click the header's padding: its middle may be a link (a metric's name links its page), which navigates."""
    header.click(position={"x": 3, "y": 3})


def _direction(values: list[float | None]) -> str | None:
    numbers = [v for v in values if v is not None]
    if numbers == sorted(numbers):
        return "ascending"
    if numbers == sorted(numbers, reverse=True):
        return "descending"
    return None


def test_sort_by_clicking_header(watched, root):
    watched.goto(root + "index.html")
    found = _table_with_sortable_numeric_column(watched.page)
    assert found, f"the overview has no sortable header ({SORTABLE}) over a column of different numbers"
    table, header, index = found
    directions = []
    for _ in range(2):
        _sort_click(header)
        directions.append(_direction(_column(table, index)))
        announced = header.get_attribute("aria-sort")  # optional; when set, it must tell the truth
        if announced in ("ascending", "descending"):
            assert announced == directions[-1], f"aria-sort says {announced}, the rows are {directions[-1]}"
    assert all(directions) and directions[0] != directions[1], \
        f"clicking the header twice gave orders {directions}: {_column(table, index)}"
    assert not watched.problems, watched.report()


def _visible_rows(table) -> list[str]:
    return table.evaluate("""t => Array.from(t.tBodies).flatMap(b => Array.from(b.rows))
                               .filter(r => r.getClientRects().length > 0).map(r => r.textContent)""")


def test_filter_hides_rows(watched, root):
    watched.goto(root + "index.html")
    box = watched.page.locator(FILTER).first
    assert box.count(), f"the overview has no filter box ({FILTER})"
    table = _filtered_table(watched.page, box)
    rows = _visible_rows(table)
    assert len(rows) >= 2, "the filtered table has fewer than two rows"
    needle = "alpha"
    assert any(needle in r for r in rows) and not all(needle in r for r in rows), "fixture rows changed"
    box.fill(needle)
    shown = _visible_rows(table)
    assert shown and all(needle in r.casefold() for r in shown), f"rows without {needle!r} still shown: {shown}"
    assert len(shown) < len(rows)
    box.fill("")
    assert len(_visible_rows(table)) == len(rows), "clearing the filter does not show every row again"
    assert not watched.problems, watched.report()


def test_search_box_lists_and_opens_a_result(watched, root):
    """Typing a country (any case) in the header's search box (static/search.js over search-index.js, file:// too)
    lists its page as a link; Enter opens the first result."""
    watched.goto(root + "country/IT.html")  # a page one folder down: result links must climb to the root
    box = watched.page.locator("#search-box")
    assert box.is_visible(), "the search box is hidden: search.js or search-index.js did not run"
    box.fill("nigeria")
    links = watched.page.locator("div.search ul a")
    assert "Nigeria (NG)" in links.all_inner_texts()
    box.fill("no such thing anywhere")
    assert watched.page.locator("div.search ul a").count() == 0
    box.fill("NIGERIA country")
    box.press("Enter")
    watched.page.wait_for_url("**/country/NG.html")
    assert not watched.problems, watched.report()


def _filtered_table(page, box):
    """The table a filter box controls: ``aria-controls``/``data-filter`` names its id, else the next table."""
    for attr in ("aria-controls", "data-filter", "data-table"):
        target = box.get_attribute(attr)
        if target and page.locator(f"[id='{target}']").count():
            node = page.locator(f"[id='{target}']")
            return node if node.evaluate("n => n.tagName") == "TABLE" else node.locator("table").first
    return box.locator("xpath=following::table[1]")


def test_overview_screenshot_is_not_blank(watched, root, tmp_path):
    watched.goto(root + "index.html")
    png = watched.page.screenshot(full_page=True)
    (tmp_path / "overview.png").write_bytes(png)
    image = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.float64)
    assert image.shape[0] >= 300 and image.shape[1] >= 300, f"screenshot is only {image.shape[1]}x{image.shape[0]}"
    grey = image.mean(axis=2)
    assert grey.std() > 10, f"the overview looks blank (pixel std {grey.std():.1f}); see {tmp_path / 'overview.png'}"
    colours = len(np.unique(image.reshape(-1, 3)[:: max(1, image.shape[0] * image.shape[1] // 200_000)], axis=0))
    assert colours > 20, f"the overview has only {colours} colours: is anything drawn?"
    dark = (grey < 128).mean()
    assert 0.002 < dark < 0.9, f"{dark:.1%} of the overview is dark: no text, or a black page"
    assert not watched.problems, watched.report()


def _values(table, key: str) -> list[float | None]:
    index = table.evaluate("(t, k) => Array.from(t.tHead.rows[0].cells).findIndex(c => c.dataset.key === k)", key)
    return _column(table, index)


def test_sorting_puts_the_best_first(watched, root):
    """A header marked higher-is-better sorts descending on the first click, lower-is-better ascending (ranks:
    1 first); aria-sort says so, and a second click reverses."""
    watched.goto(root + "leaderboard/cultdiff.html")
    table = watched.page.locator("table#cultdiff-g1")
    tried = set()
    for header in table.locator("thead th[data-better]").all():
        better, key = header.get_attribute("data-better"), header.get_attribute("data-key")
        if len({v for v in _values(table, key) if v is not None}) < 2:
            continue
        _sort_click(header)
        expected = "descending" if better == "higher" else "ascending"
        assert header.get_attribute("aria-sort") == expected and _direction(_values(table, key)) == expected, key
        _sort_click(header)
        assert _direction(_values(table, key)) != expected, key
        tried.add(better)
    assert tried == {"higher", "lower"}, f"no column of each direction to sort: {tried}"
    assert not watched.problems, watched.report()


def _tab_to(page, selector: str, limit: int = 400):
    """Press Tab until the focused element matches ``selector``; returns it (fails if never reached)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("s => document.activeElement && document.activeElement.matches(s)", selector):
            return page.locator(":focus")
    pytest.fail(f"the keyboard never reaches {selector}")


def test_keyboard_reaches_and_works_every_control(watched, root):
    page = watched.page
    watched.goto(root + "leaderboard/cultdiff.html")
    header = _tab_to(page, "table#cultdiff-g1 th[data-key='cultdiff.dino']")
    page.keyboard.press("Enter")
    assert header.get_attribute("aria-sort") == "descending"
    assert _direction(_values(page.locator("table#cultdiff-g1"), "cultdiff.dino")) == "descending"

    watched.goto(root + "gallery/cube-awareness.html")
    _tab_to(page, "select[data-field='country']")
    page.keyboard.press("ArrowDown")  # the first country
    chosen = page.evaluate("document.activeElement.value")
    shown = page.eval_on_selector_all("#prompts > li:not([hidden])", "els => els.map(e => e.dataset.country)")
    assert chosen and shown and set(shown) == {chosen}

    watched.goto(root + "map/cube-awareness-g1/cube.cultural_relevance.html")
    # each country's fill (grey where its difference is not meaningful) and its title's value
    drawn = "els => els.map(e => e.getAttribute('fill') + ' ' + e.querySelector('title').textContent)"
    before = page.eval_on_selector_all("path[data-iso]", drawn)
    select = _tab_to(page, "select.map-select")
    for _ in range(select.locator("option").count() - 1):  # down the submissions until one draws another map
        page.keyboard.press("ArrowDown")
        if page.eval_on_selector_all("path[data-iso]", drawn) != before:
            break
    else:
        pytest.fail("choosing a submission with the keyboard did not redraw the map")

    watched.goto(root + "model/lab__alpha__cultivate/images-1.html")
    summary = _tab_to(page, "td.notes summary")
    page.keyboard.press("Enter")
    assert summary.evaluate("s => s.parentElement.open"), "Enter on an explanation does not open it"
    assert not watched.problems, watched.report()


def test_world_map_is_drawn_and_recoloured(watched, root, tmp_path):
    from cultureboard.site import worldmap

    page = watched.page
    watched.goto(root + "map/cube-awareness-g1/cube.cultural_relevance.html")
    figure = page.locator("figure#worldmap")
    png = figure.screenshot()
    (tmp_path / "map.png").write_bytes(png)
    image = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int64)
    assert image.shape[1] >= 600 and image.shape[0] >= 300, f"the map is only {image.shape[1]}x{image.shape[0]}"
    data = json.loads(figure.get_attribute("data-map"))
    for k, choice in enumerate(data["choices"][:3]):
        if k:
            page.select_option("select.map-select", str(k))
        fills = dict(page.eval_on_selector_all("path[data-iso]", "els => els.map(e => [e.dataset.iso, e.getAttribute('fill')])"))
        cis = dict(zip(data["countries"], zip(choice["low"], choice["high"])))
        expected = worldmap.colours(dict(zip(data["countries"], choice["values"])), data["vmin"], data["vmax"], cis,
                                    data["smallest"], data["centre"])  # neutral where d is not cleared (app.js too)
        for iso, colour in expected.items():
            got, want = (np.array([int(c[i:i + 2], 16) for i in (1, 3, 5)]) for c in (fills[iso], colour))
            assert np.abs(got - want).max() <= 1, (choice["label"], iso, fills[iso], colour)
        assert choice["label"] in figure.locator(".map-label").inner_text()
    # the screenshot holds the countries' colours (their paths are drawn) and the pale rest of the world
    pixels = image.reshape(-1, 3)
    first = data["choices"][0]
    for iso, colour in worldmap.colours(dict(zip(data["countries"], first["values"])), data["vmin"], data["vmax"],
                                        dict(zip(data["countries"], zip(first["low"], first["high"]))),
                                        data["smallest"], data["centre"]).items():
        want = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])
        assert (np.abs(pixels - want).max(axis=1) <= 3).sum() > 20, f"{iso}'s colour {colour} is not on the map"
    pale = np.array([0xf1, 0xf1, 0xf1])
    assert (np.abs(pixels - pale).max(axis=1) <= 2).mean() > 0.1, "the other countries are not drawn"
    assert not watched.problems, watched.report()


def test_world_map_choices_narrower_than_their_cis_are_not_coloured(browser, tmp_path):
    """app.js applies the maps' rule (site/plots.py colour_is_noise) to each choice of a map page: hand-made
    submissions (test_worldmap.MAP_RESULTS) whose spread is narrower than the median width of their CIs (grey, the
    note with both numbers instead of the legend), wider or equal (coloured, the legend) and without CIs
    (coloured)."""
    from test_worldmap import MAP_GREY, write_map_page

    from cultureboard.site import worldmap

    page_file, data = write_map_page(tmp_path)
    watched = Watched(browser, tmp_path.as_uri() + "/")
    try:
        page = watched.page
        watched.goto(page_file.as_uri())
        figure = page.locator("figure#worldmap")
        greyed = []
        for k, choice in enumerate(data["choices"]):
            page.select_option("select.map-select", str(k))
            fills = dict(page.eval_on_selector_all("path[data-iso]",
                                                   "els => els.map(e => [e.dataset.iso, e.getAttribute('fill')])"))
            cis = dict(zip(data["countries"], zip(choice["low"], choice["high"])))
            expected = worldmap.colours(dict(zip(data["countries"], choice["values"])), data["vmin"], data["vmax"], cis)
            for iso, colour in expected.items():
                got, want = (np.array([int(c[i:i + 2], 16) for i in (1, 3, 5)]) for c in (fills[iso], colour))
                assert np.abs(got - want).max() <= 1, (choice["label"], iso, fills[iso], colour)
            note, legend = figure.locator("g.uncoloured"), figure.locator("g.legend")
            if worldmap.UNCOLOURED in expected.values():
                greyed.append(choice["label"])
                assert note.is_visible() and not legend.is_visible(), choice["label"]
            else:
                assert legend.is_visible() and not note.is_visible(), choice["label"]
            if choice["label"] == "lab / flat":
                assert "the values span 0.02, less than their typical 95% CI width (0.10)" in note.text_content()
                tooltip = page.locator("path[data-iso='NG'] title").text_content()
                assert tooltip == "Nigeria: 0.52 (95% CI 0.47 to 0.57)", tooltip
        assert set(greyed) == MAP_GREY
        assert not watched.problems, watched.report()
    finally:
        watched.close()


def test_world_map_choices_colour_only_differences_that_clear_the_smallest_one(browser, tmp_path):
    """app.js applies site/plots.py's meaningful to each choice: with a smallest meaningful difference of 0.05, a
    country whose interval of the difference from the choice's mean does not clear it is grey, and the legend's
    neutral line names that choice's mean."""
    from test_worldmap import write_map_page

    from cultureboard.site import worldmap

    page_file, data = write_map_page(tmp_path, smallest=0.05)
    watched = Watched(browser, tmp_path.as_uri() + "/")
    try:
        page = watched.page
        watched.goto(page_file.as_uri())
        neutral = 0
        for k, choice in enumerate(data["choices"]):
            page.select_option("select.map-select", str(k))
            fills = dict(page.eval_on_selector_all("path[data-iso]",
                                                   "els => els.map(e => [e.dataset.iso, e.getAttribute('fill')])"))
            values = dict(zip(data["countries"], choice["values"]))
            cis = dict(zip(data["countries"], zip(choice["low"], choice["high"])))
            expected = worldmap.colours(values, data["vmin"], data["vmax"], cis, 0.05)
            for iso, colour in expected.items():
                got, want = (np.array([int(c[i:i + 2], 16) for i in (1, 3, 5)]) for c in (fills[iso], colour))
                assert np.abs(got - want).max() <= 1, (choice["label"], iso, fills[iso], colour)
            neutral += worldmap.noise(values, cis) is None and worldmap.UNCOLOURED in expected.values()
            mean = sum(v for v in values.values() if v is not None) / sum(v is not None for v in values.values())
            line = page.locator("text.neutral-text").text_content()
            assert line == f"difference from the mean ({mean:.{data['digits']}f}) not clearly beyond ±0.05", line
        assert neutral, "no choice tried the rule (a coloured map with a grey country)"
        assert not watched.problems, watched.report()
    finally:
        watched.close()


def test_no_plot_label_is_clipped(watched, root, site):
    """Every <text> of every kind of plot lies inside its SVG's drawing area, measured by the browser's layout."""
    kinds = {}
    for path in sorted((site / "plots").glob("*.svg")):
        kinds.setdefault(path.stem.rsplit("-", 1)[-1], path)
    assert {"heatmap", "map", "eras", "edit_step", "frontier"} <= set(kinds), sorted(kinds)
    clipped = []
    for kind, path in sorted(kinds.items()):
        watched.goto(root + path.relative_to(site).as_posix())
        found = watched.page.evaluate("""() => {
            const svg = document.documentElement, w = svg.viewBox.baseVal.width, h = svg.viewBox.baseVal.height;
            return Array.from(svg.querySelectorAll('text')).map(t => { const b = t.getBBox();
                let m = t.getCTM(); const p = [[b.x, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height],
                [b.x + b.width, b.y]].map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
                const xs = p.map(q => q[0]), ys = p.map(q => q[1]);
                return [t.textContent, Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys), w, h]; });
        }""")
        for text, x0, y0, x1, y1, w, h in found:
            if x0 < -1 or y0 < -1 or x1 > w + 1 or y1 > h + 1:
                clipped.append(f"{path.name}: {text!r} spans ({x0:.0f}, {y0:.0f})-({x1:.0f}, {y1:.0f}) of {w:.0f}x{h:.0f}")
    assert not clipped, "clipped labels:\n" + "\n".join(clipped[:20])


#: Pages screenshotted at a desktop and a phone width: page -> (its headline's table, the headline column's key;
#: None: the page's first table with a sticky headline, column s1).
SCREENS = {"models/lab__v0.html": ("prompt-sets", "headline"), "country/NG.html": (None, None),
           "agreement.html": ("overall", "tau")}
PHONE = 390

_HEADLINE = """([table, key]) => {
    const t = table ? document.getElementById(table)
                    : Array.from(document.querySelectorAll("table")).find(x => x.querySelector("thead th.s1"));
    const th = key ? t.querySelector(`thead th[data-key="${key}"]`) : t.querySelector("thead th.s1");
    const cell = t.tBodies[0].rows[0].cells[th.cellIndex], value = cell.querySelector(".v") || cell;
    const r = value.getBoundingClientRect();
    return {text: value.textContent.trim(), left: r.left, right: r.right, top: r.top, bottom: r.bottom};
}"""

_WIDE = """() => Array.from(document.body.querySelectorAll("*"))
    .filter(e => !e.closest(".scroll") && e.getBoundingClientRect().right > window.innerWidth + 1)
    .slice(0, 8).map(e => `${e.tagName.toLowerCase()}.${e.className}: right ${Math.round(e.getBoundingClientRect().right)}`)"""

_SCROLL_STICKY = """() => Array.from(document.querySelectorAll(".scroll"))
    .filter(box => box.querySelector("thead th.sticky") && box.scrollWidth > box.clientWidth + 1).map(box => {
        const t = box.querySelector("table"), plain = t.tBodies[0].rows[0].querySelector("td:not(.sticky)");
        const before = plain.getBoundingClientRect().left;
        box.scrollLeft = box.scrollWidth;
        const b = box.getBoundingClientRect();
        const sticky = Array.from(t.querySelectorAll("thead th.sticky"))
            .concat(Array.from(t.tBodies[0].rows[0].querySelectorAll("td.sticky")));
        const out = sticky.map(c => { const r = c.getBoundingClientRect();
            return [c.textContent.trim().slice(0, 30), r.left - b.left, b.right - r.right]; });
        const rects = Array.from(t.tBodies[0].rows[0].querySelectorAll("td.sticky")).map(c => c.getBoundingClientRect());
        const overlap = Math.max(0, ...rects.slice(1).map((r, k) => rects[k].right - r.left));
        return {id: t.id, scrolled: box.scrollLeft, cells: out, overlap: overlap,
                moved: before - plain.getBoundingClientRect().left};
    })"""


@pytest.mark.parametrize("width", [1280, PHONE])
@pytest.mark.parametrize("path", list(SCREENS))
def test_screens_at_desktop_and_phone_width(browser, site, path, width, tmp_path):
    """The model page, a country page and agreement.html at a desktop width and a phone's 390 px: no element
    wider than the window (no page-level sideways scrolling), the headline value of the page's first table on
    screen, and each table box that scrolls sideways keeps its sticky columns (a row's name, the headline) in view,
    side by side, when scrolled to its right end. Screenshots: <tmp>/<page>-<width>.png (whole page) and -scrolled.png."""
    watched = Watched(browser, site.as_uri() + "/", width=width, height=844 if width == PHONE else 900)
    try:
        page = watched.page
        watched.goto(watched.root + path)
        name = path.removesuffix(".html").replace("/", "-")
        page.screenshot(path=str(tmp_path / f"{name}-{width}.png"), full_page=True)
        wide = page.evaluate(_WIDE)
        assert page.evaluate("document.documentElement.scrollWidth") <= width and not wide, \
            f"{path} scrolls sideways at {width} px: {wide}"
        headline = page.evaluate(_HEADLINE, list(SCREENS[path]))
        assert headline["text"] and 0 <= headline["left"] and headline["right"] <= width, \
            f"{path}: the headline {headline} is off screen at {width} px"
        boxes = page.evaluate(_SCROLL_STICKY)
        page.screenshot(path=str(tmp_path / f"{name}-{width}-scrolled.png"), full_page=True)
        if width == PHONE:
            assert boxes, f"{path}: no table scrolls sideways at {width} px (nothing sticky was tried)"
        for box in boxes:
            assert box["scrolled"] > 0 and box["moved"] > 0, f"{path}: table {box['id']} did not scroll: {box}"
            hidden = [c for c in box["cells"] if c[1] < -1 or c[2] < -1]
            assert not hidden, f"{path}: sticky cells of table {box['id']} left the box when scrolled: {hidden}"
            assert box["overlap"] <= 1, f"{path}: sticky cells of table {box['id']} cover each other: {box}"
        assert not watched.problems, watched.report()
    finally:
        watched.close()


# --- phones first: every kind of page at a phone's and a laptop's size

#: One page of each kind (the first by name where a folder holds many alike pages).
PAGE_KINDS = ["index.html", "topics.html", "topic/*.html", "slices.html", "country/*.html", "category/*.html",
              "era/*.html", "region/*.html", "leaderboard/*.html", "family/*.html", "metrics.html", "metric/*.html",
              "trust.html", "agreement.html", "submissions.html", "models/*.html", "model/*.html",
              "model/*/images-1.html", "gallery/*.html", "prompt/*/*.html", "map/*/*.html"]
#: What a page is for: its first table, its answer ("which model for ...?"), a card, a figure, its images or prompts.
CONTENT = ("main table, main section.answer, main dl.card, main figure, main ul.images, main ul.prompts, "
           "main .empty")
SIZES = [(PHONE, 844), (1366, 900)]
MIN_TEXT_PX = 11

_LAYOUT = """(content) => {
    const first = document.querySelector(content);
    const inline = Array.from(document.querySelectorAll("main svg text")).map(t => {
        const m = t.getScreenCTM(); return [t.textContent, parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b)]; });
    const images = Array.from(document.querySelectorAll("main img")).filter(i => /\\.svg$/.test(i.getAttribute("src")))
        .map(i => [i.getAttribute("src"), i.getBoundingClientRect().width]);
    // a name in a sticky cell whose last character (")") sits alone on a line below the rest
    const lone = Array.from(document.querySelectorAll("td.sticky a")).filter(a => {
        const text = a.firstChild; if (!text || text.length < 2 || !text.textContent.endsWith(")")) return false;
        const r = document.createRange(); r.setStart(text, text.length - 1); r.setEnd(text, text.length);
        const last = r.getBoundingClientRect(); r.setStart(text, text.length - 2); r.setEnd(text, text.length - 1);
        return last.top > r.getBoundingClientRect().top + 1; }).map(a => a.textContent);
    return {top: first ? first.getBoundingClientRect().top + window.scrollY : null, what: first && first.tagName,
            width: document.documentElement.scrollWidth, inline, images, lone};
}"""


def _svg_text_px(svg: Path) -> tuple[float, float]:
    """The smallest font size an SVG file's text is drawn at, and its viewBox width."""
    text = svg.read_text(encoding="utf-8")
    return (min(float(s) for s in re.findall(r'font-size="([\d.]+)"', text)),
            float(re.search(r'viewBox="[\d.-]+ [\d.-]+ ([\d.]+)', text).group(1)))


def _sample_pages(site: Path) -> list[str]:
    out = []
    for kind in PAGE_KINDS:
        found = sorted(p.relative_to(site).as_posix() for p in site.glob(kind) if p.is_file())
        assert found, f"the site has no page like {kind}"
        out.append(found[0])
    return out


@pytest.mark.parametrize("width, height", SIZES)
def test_every_kind_of_page_fits_the_screen(browser, site, width, height):
    """At a phone's 390x844 and a laptop's 1366x900, on one page of every kind: the page's content (its first table
    or answer, :data:`CONTENT`) starts on the first screen, nothing scrolls the page sideways, every figure's text is
    drawn at 11 px or more, and no name in a table's fixed column breaks before its closing ")"."""
    watched = Watched(browser, site.as_uri() + "/", width=width, height=height)
    try:
        problems = []
        for path in _sample_pages(site):
            watched.goto(watched.root + path)
            got = watched.page.evaluate(_LAYOUT, CONTENT)
            if got["top"] is None or got["top"] > height:
                problems.append(f"{path}: its content ({got['what']}) starts at {got['top']} px, below the first screen")
            if got["width"] > width:
                problems.append(f"{path}: the page is {got['width']} px wide")
            small = [f"{t!r} at {px:.1f} px" for t, px in got["inline"] if px < MIN_TEXT_PX - 0.01]
            for src, shown in got["images"]:
                px, drawn = _svg_text_px((site / path).parent.joinpath(src).resolve())
                if px * shown / drawn < MIN_TEXT_PX - 0.01:
                    small.append(f"{src}: text at {px * shown / drawn:.1f} px")
            if small:
                problems.append(f"{path}: figure text below {MIN_TEXT_PX} px: {small[:3]}")
            if got["lone"]:
                problems.append(f"{path}: names break before their ')': {got['lone'][:3]}")
        assert not problems, "\n".join(problems)
        assert not watched.problems, watched.report()
    finally:
        watched.close()


def test_which_model_for_food_is_one_click_from_home(watched, root):
    """From the home page, the topic link "food and drink" opens the topic page, which opens with the answer: the
    models of every family that has a food category (CUBE's cuisine, CultDiff's and ECB's food, CULTIVate's eating)."""
    watched.goto(root + "index.html")
    watched.page.locator("nav.answers a", has_text="food and drink").click()
    watched.page.wait_for_load_state("load")
    assert watched.page.url.endswith("topic/food.html"), watched.page.url
    answer = watched.page.locator("section.answer")
    assert answer.locator("h2").inner_text() == "Which model for food and drink?"
    families = {li.split(":")[0] for li in answer.locator("li strong").all_inner_texts()}
    assert {"CUBE", "CultDiff", "CULTIVate", "ECB"} <= {f.split(":")[0].split()[0] for f in families}, families
    assert not watched.problems, watched.report()


def test_two_models_compare_side_by_side_offline(watched, root):
    """From a model page, "Compare it with another model" opens compare.html with that model as A; choosing B draws,
    from the models' data scripts alone (no request leaves the site), one row per shared prompt set whose values are
    those of each model's own page, with a verdict, and per-country and per-topic tables."""
    headline = {}
    for key in ("lab__v0", "lab__v1"):
        watched.goto(root + f"models/{key}.html")
        rows = watched.page.locator("#prompt-sets tbody tr")
        headline[key] = {rows.nth(i).locator("td").nth(0).inner_text(): rows.nth(i).locator("td .v").first.inner_text()
                         for i in range(rows.count())}
    watched.page.locator("a", has_text="Compare it with another model").click()
    watched.page.wait_for_load_state("load")
    assert watched.page.input_value("#compare-a") == "lab__v1", "the model page's link does not preselect it"
    watched.page.select_option("#compare-b", "lab__v0")
    watched.page.wait_for_function("document.querySelectorAll('#compare-overall tbody tr').length > 0")
    rows = watched.page.locator("#compare-overall tbody tr")
    shared = sorted(set(headline["lab__v0"]) & set(headline["lab__v1"]))
    assert rows.count() == len(shared) > 0
    for i in range(rows.count()):
        cells = rows.nth(i).locator("td").all_inner_texts()
        a, b = headline["lab__v1"], headline["lab__v0"]
        assert cells[2].split()[0] == a[cells[0]] and cells[3].split()[0] == b[cells[0]], cells
        assert cells[4].startswith(("differ: ", "CIs overlap", "descriptive")), cells
        assert all(c.endswith("stand-in: measures nothing") for c in cells[2:4]), cells  # tiny stand-in scorers
    assert watched.page.locator("#compare-countries tbody tr").count() > 0
    assert watched.page.locator("#compare-topics tbody tr").count() > 0
    pairs = watched.page.locator("#compare-images figure.pair")  # both models' thumbnails of the same prompts
    assert pairs.count() > 0
    for i in range(pairs.count()):
        images = pairs.nth(i).locator("img")
        assert images.count() == 2
        alts = [images.nth(k).get_attribute("alt") for k in (0, 1)]
        assert alts[0].split(": ", 1)[1] == alts[1].split(": ", 1)[1], alts  # the same prompt
        sources = [images.nth(k).get_attribute("src") for k in (0, 1)]
        assert sources[0].startswith("thumbs/lab__v1__") and sources[1].startswith("thumbs/lab__v0__"), sources
        for k in (0, 1):
            assert images.nth(k).evaluate("img => img.decode().then(() => img.naturalWidth)") > 0, sources[k]
    assert not watched.problems, watched.report()


def test_board_filters_hide_rows_and_keep_ranks(watched, root):
    """On a leaderboard, the filters by weights, release date and size hide the rows they reject (and, while set,
    the rows that declare nothing), never change a shown row's rank, and say that the board is filtered."""
    page = watched.page
    watched.goto(root + "leaderboard/cultdiff.html")
    table = page.locator("table#cultdiff-g1")
    box = "details.board-filters[data-table='cultdiff-g1']"

    def shown() -> dict[str, str]:
        rows = table.locator("tbody tr:visible")
        return {rows.nth(i).locator("td").nth(1).inner_text().split("\n")[0]: rows.nth(i).locator("td").nth(0).inner_text()
                for i in range(rows.count())}

    ranks = shown()
    assert {"lab / v0 (cultdiff)", "lab / v1 (cultdiff)"} <= set(ranks) and len(ranks) > 2, ranks
    note = page.locator("#cultdiff-g1-filtered")
    assert note.is_hidden()
    page.locator(f"{box} summary").click()
    page.select_option(f"{box} select[data-filter-field='weights']", "closed")
    assert shown() == {"lab / v1 (cultdiff)": ranks["lab / v1 (cultdiff)"]}
    assert note.is_visible() and note.inner_text().startswith(f"Filtered: 1 of {len(ranks)} rows shown.")
    page.select_option(f"{box} select[data-filter-field='weights']", "")
    page.fill(f"{box} input[data-filter-field='release_date'][data-bound='max']", "2023-12-31")
    assert shown() == {"lab / v0 (cultdiff)": ranks["lab / v0 (cultdiff)"]}
    page.fill(f"{box} input[data-filter-field='parameters'][data-bound='min']", "2e9")  # v0 is 1e9: none left
    assert shown() == {} and note.inner_text().startswith(f"Filtered: 0 of {len(ranks)}")
    page.fill(f"{box} input[data-filter-field='release_date'][data-bound='max']", "")
    assert shown() == {"lab / v1 (cultdiff)": ranks["lab / v1 (cultdiff)"]}  # 8e9 >= 2e9
    page.fill(f"{box} input[data-filter-field='parameters'][data-bound='min']", "")
    assert shown() == ranks and note.is_hidden()
    assert not watched.problems, watched.report()
