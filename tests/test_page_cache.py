"""A rebuild links a page from the previous site instead of rendering it when the page's key (site/write.py
Site.page_key) is the one the previous build recorded in its manifest and the file still holds the recorded bytes;
each input of the key, changed alone, makes the page rendered afresh, and a broken manifest or previous file only
costs a render."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from markupsafe import Markup
from cultureboard.site import write
from cultureboard.site.load import Result
from cultureboard.site.write import MANIFEST, Site

PAGE = "model/p.html"
TEMPLATE = "{{ title }} {{ root }}{{ path }} {{ x }} {{ galleries }}\n"


@pytest.fixture
def sources(tmp_path, monkeypatch) -> Path:
    """A copy of the site package (templates and modules) that the Site renders from and hashes, with t.html."""
    copy = shutil.copytree(write.HERE, tmp_path / "package", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "templates" / "t.html").write_text(TEMPLATE)
    monkeypatch.setattr(write, "HERE", copy)
    return copy


class Build:
    """One build of the page ``PAGE`` into ``root`` (the previous build in ``previous``), counting renders."""

    def __init__(self, root: Path, previous: Path | None = None, galleries: dict | None = None, **context):
        self.site = Site(root, {"galleries": galleries or {}}, previous=previous)
        self.rendered = []  # the templates Site.page renders (not those they include)
        get = self.site.env.get_template

        def spy(name, *args, **kwargs):
            if not args and not kwargs:
                self.rendered.append(name)
            return get(name, *args, **kwargs)

        self.site.env.get_template = spy
        self.site.page(PAGE, "t.html", context.pop("title", "T"), **({"x": 1} | context))
        self.site.finish()
        self.file = root / PAGE


def again(tmp_path: Path, first: Build, **changes) -> Build:
    """A build into a fresh folder with ``first``'s folder as the previous site."""
    return Build(tmp_path / f"build-{len(list(tmp_path.glob('build-*')))}", first.site.root, **changes)


def test_an_unchanged_page_is_linked_not_rendered(sources, tmp_path):
    first = Build(tmp_path / "a")
    assert first.rendered == ["t.html"] and first.file.read_text() == "T ../model/p.html 1 {}"
    second = again(tmp_path, first)
    assert second.rendered == []
    assert second.file.stat().st_ino == first.file.stat().st_ino
    assert second.site.sizes == {PAGE: first.file.stat().st_size}
    assert json.loads((second.site.root / MANIFEST).read_text()) == json.loads((first.site.root / MANIFEST).read_text())
    assert again(tmp_path, second).rendered == []  # the linked page is recorded for the build after


@pytest.mark.parametrize("change, text", [
    ({"x": 2}, "T ../model/p.html 2 {}"),
    ({"title": "U"}, "U ../model/p.html 1 {}"),
    ({"galleries": {"cube": "gallery/cube.html"}}, "T ../model/p.html 1 {&#39;cube&#39;: &#39;gallery/cube.html&#39;}"),
    ({"y": {"unused": True}}, "T ../model/p.html 1 {}"),  # the key covers the context whole, used or not
])
def test_a_changed_context_title_or_global_is_rendered_afresh(sources, tmp_path, change, text):
    first = Build(tmp_path / "a")
    second = again(tmp_path, first, **change)
    assert second.rendered == ["t.html"] and second.file.read_text() == text


def test_a_global_set_after_the_site_is_made_is_in_the_key(sources, tmp_path):
    first = Build(tmp_path / "a")
    site = Site(tmp_path / "b", {"galleries": {}}, previous=first.site.root)
    site.env.globals["galleries"] = {"cube": "gallery/cube.html"}  # as build_site does, after the Site is made
    assert site.page_key(PAGE, "t.html", "T", {"x": 1}) != first.site.keys[PAGE][0]


def test_a_changed_template_is_rendered_afresh(sources, tmp_path):
    first = Build(tmp_path / "a")
    (sources / "templates" / "t.html").write_text("changed " + TEMPLATE)
    second = again(tmp_path, first)
    assert second.rendered == ["t.html"] and second.file.read_text().startswith("changed T")


def test_a_changed_template_that_the_page_only_includes_is_rendered_afresh(sources, tmp_path):
    (sources / "templates" / "t.html").write_text('{% include "inner.html" %}')
    (sources / "templates" / "inner.html").write_text("inner {{ x }}")
    first = Build(tmp_path / "a")
    (sources / "templates" / "inner.html").write_text("inner, changed {{ x }}")
    second = again(tmp_path, first)
    assert second.rendered == ["t.html"] and second.file.read_text() == "inner, changed 1"


def test_a_changed_site_module_is_rendered_afresh(sources, tmp_path):
    first = Build(tmp_path / "a")
    with open(sources / "names.py", "a") as fh:
        fh.write("\n# a change in the code the templates call")
    assert again(tmp_path, first).rendered == ["t.html"]


def test_the_key_covers_the_rest_of_cultureboard_and_the_libraries(sources, tmp_path, monkeypatch):
    folders = [Path(p) for p in write._other_sources()]
    assert {p.name for p in folders} >= {"cultureboard", "evaluators", "builder"}
    digest = write.code_digest([sources])
    other = tmp_path / "other"
    other.mkdir()
    (other / "module.py").write_text("X = 1")
    one = write.code_digest([sources, other])
    (other / "module.py").write_text("X = 2")  # the same size
    assert len({digest, one, write.code_digest([sources, other])}) == 3
    monkeypatch.setattr(write.importlib.metadata, "version", lambda name: "0" if name == "jinja2" else "1")
    assert write.code_digest([sources]) != digest


@pytest.mark.parametrize("spoil", ["same size", "other size", "symlink", "removed"])
def test_a_previous_page_that_is_not_the_recorded_file_is_rendered_afresh(sources, tmp_path, spoil):
    first = Build(tmp_path / "a")
    good = first.file.read_text()
    if spoil == "same size":
        first.file.write_text(good.replace("T", "X"))
    elif spoil == "other size":
        first.file.write_text(good + "more")
    elif spoil == "symlink":  # a link to a file of the very bytes: never followed
        decoy = tmp_path / "decoy.html"
        decoy.write_text(good)
        first.file.unlink()
        first.file.symlink_to(decoy)
    else:
        first.file.unlink()
    second = again(tmp_path, first)
    assert second.rendered == ["t.html"] and second.file.read_text() == good and not second.file.is_symlink()


@pytest.mark.parametrize("manifest", [None, "{not json", "[]", '{"model/p.html": "x"}', '{"model/p.html": []}',
                                      '{"model/p.html": [null, null]}', "symlink"])
def test_a_missing_or_broken_manifest_only_costs_a_render(sources, tmp_path, manifest):
    first = Build(tmp_path / "a")
    path = first.site.root / MANIFEST
    if manifest is None:
        path.unlink()
    elif manifest == "symlink":  # the very manifest, through a link: not read
        real = tmp_path / "pages.json"
        path.rename(real)
        path.symlink_to(real)
    else:
        path.write_text(manifest)
    second = again(tmp_path, first)
    assert second.rendered == ["t.html"] and second.file.read_text() == first.file.read_text()
    assert again(tmp_path, second).rendered == []  # and the next build has a manifest again


def test_a_page_without_a_key_is_always_rendered(sources, tmp_path):
    first = Build(tmp_path / "a", x=(i for i in ()))
    assert first.site.keys == {} and again(tmp_path, first, x=(i for i in ())).rendered == ["t.html"]


def _result(**changes) -> Result:
    r = Result("lab__m", {"metrics": []}, pd.DataFrame({"metric": ["a", "b"], "value": [0.5, 0.25]}), {"model": "m"},
               Path("/x/lab__m"), [{"file_name": "a.png"}], {("a", "overall", "all"): {"value": 0.5}}, "Lab / m")
    return dataclasses.replace(r, **changes)


@pytest.mark.parametrize("change", [
    {"summary": {"metrics": [1]}}, {"scores": pd.DataFrame({"metric": ["a", "b"], "value": [0.5, 0.26]})},
    {"scores": pd.DataFrame({"metric": ["a", "b"], "v": [0.5, 0.25]})}, {"spec": {"model": "n"}},
    {"folder": Path("/x/other")}, {"images": []}, {"entries": {("a", "overall", "all"): {"value": 0.6}}},
    {"display": "Lab / n"}, {"label": "n"}, {"control": "text-only"},
])
def test_each_field_of_a_shown_result_is_in_the_key(sources, tmp_path, change):
    site = Site(tmp_path / "a", {"galleries": {}})
    key = lambda r: site.page_key(PAGE, "t.html", "T", {"r": r})  # noqa: E731
    same = key(_result())
    assert same is not None and key(_result()) == same
    assert key(_result(**change)) != same


def test_a_result_is_hashed_once_and_a_field_set_anew_is_noticed(sources, tmp_path):
    site = Site(tmp_path / "a", {"galleries": {}})
    r = _result()
    key = lambda: site.page_key(PAGE, "t.html", "T", {"lines": [{"r": r}]})  # noqa: E731
    before = key()
    r.rows_of("a")  # a lazily built index (kept out of the Result's equality) changes nothing
    assert key() == before
    r.display = "Lab / renamed"
    assert key() != before
    r.images = [(i for i in ())]  # a result that cannot be pickled: no key for the pages that show it
    assert key() is None


def test_values_are_written_by_what_they_hold(sources, tmp_path):
    site = Site(tmp_path / "a", {"galleries": {}})
    key = lambda value: site.page_key(PAGE, "t.html", "T", {"v": value})  # noqa: E731

    def closure(n):
        return lambda: n

    assert key(closure(1)) == key(closure(1)) != key(closure(2))
    assert key(write.Column("a", "A", "num")) != key(write.Column("a", "A", "pct"))
    assert key(len) == key(len) != key(sorted)
    assert key("<b>") != key(Markup("<b>")) and key((1, 2)) != key([1, 2]) and key(0.0) != key(-0.0)
    assert key({"a": 1, "b": 2}) != key({"b": 2, "a": 1})  # a dict is shown in its order
    assert key({(1, 2): "tuple key"}) != key({(1, 3): "tuple key"})
    shared, cycle = {"a": [1]}, []
    cycle.append(cycle)
    assert key([shared, shared]) == key([shared, {"a": [1]}])  # which values are one object does not matter
    assert key(i for i in ()) is None and key(cycle) is None


# --- a table's downloads

COLUMNS = [write.Column("name", "Name", "text"), write.Column("score", "Score", "num")]
ROWS = [{"name": "a", "score": 0.5}, {"name": "b", "score": 0.25}]
FILES = ["data/model-p-t.csv", "data/model-p-t.json"]
DOWNLOADS = write._downloads


class Tables:
    """One build of the table t of ``PAGE`` into ``root``, counting the downloads made."""

    def __init__(self, root: Path, monkeypatch, previous: Path | None = None, columns=COLUMNS, rows=ROWS,
                 banner=None):
        self.made = []
        monkeypatch.setattr(write, "_downloads", lambda *a: self.made.append(a[1]) or DOWNLOADS(*a))
        self.site = Site(root, {"galleries": {}, "banner": banner}, previous=previous)
        self.table = self.site.table(PAGE, "t", columns, rows)
        self.site.finish()
        self.files = [root / f for f in FILES]


def test_unchanged_downloads_are_linked_not_made(sources, tmp_path, monkeypatch):
    first = Tables(tmp_path / "a", monkeypatch)
    assert first.made == ["t"] and [first.table.csv, first.table.json] == FILES
    second = Tables(tmp_path / "b", monkeypatch, first.site.root)
    assert second.made == [] and second.table == first.table
    assert [f.stat().st_ino for f in second.files] == [f.stat().st_ino for f in first.files]
    assert Tables(tmp_path / "c", monkeypatch, second.site.root).made == []


@pytest.mark.parametrize("change", [{"rows": ROWS[:1]}, {"rows": [ROWS[0] | {"score": 0.75}, ROWS[1]]},
                                    {"columns": [COLUMNS[0], dataclasses.replace(COLUMNS[1], kind="pct")]},
                                    {"banner": {"count": 1}}])
def test_changed_rows_columns_or_banner_make_the_downloads_afresh(sources, tmp_path, monkeypatch, change):
    first = Tables(tmp_path / "a", monkeypatch)
    second = Tables(tmp_path / "b", monkeypatch, first.site.root, **change)
    assert second.made == ["t"]
    fresh = Tables(tmp_path / "fresh", monkeypatch, **change)  # what a build without a previous site writes
    assert [f.read_bytes() for f in second.files] == [f.read_bytes() for f in fresh.files]


def test_a_changed_module_makes_the_downloads_afresh(sources, tmp_path, monkeypatch):
    first = Tables(tmp_path / "a", monkeypatch)
    with open(sources / "write.py", "a") as fh:
        fh.write("\n# a change in the code that makes the downloads\n")
    assert Tables(tmp_path / "b", monkeypatch, first.site.root).made == ["t"]


@pytest.mark.parametrize("spoiled", FILES)
def test_one_spoiled_download_makes_both_afresh_and_links_neither(sources, tmp_path, monkeypatch, spoiled):
    first = Tables(tmp_path / "a", monkeypatch)
    good = [f.read_bytes() for f in first.files]
    path = first.site.root / spoiled
    path.write_bytes(path.read_bytes().replace(b"a", b"z"))
    second = Tables(tmp_path / "b", monkeypatch, first.site.root)
    assert second.made == ["t"] and [f.read_bytes() for f in second.files] == good
    assert (first.site.root / spoiled).read_bytes() != good[FILES.index(spoiled)]  # the previous file untouched
    assert all(f.stat().st_nlink == 1 for f in second.files if f.name == Path(spoiled).name)


def test_a_link_that_fails_halfway_leaves_the_previous_files_alone(sources, tmp_path, monkeypatch):
    first = Tables(tmp_path / "a", monkeypatch)
    good = [f.read_bytes() for f in first.files]
    written = [f.stat().st_mtime_ns for f in first.files]
    link = Site._link
    monkeypatch.setattr(Site, "_link", lambda self, path, target: path.endswith(".csv") and link(self, path, target))
    second = Tables(tmp_path / "b", monkeypatch, first.site.root)
    assert second.made == ["t"] and [f.read_bytes() for f in second.files] == good
    assert [f.stat().st_mtime_ns for f in first.files] == written  # never written through a link
