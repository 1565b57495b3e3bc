"""The stand-ins' cache folder: keys that change with what they cover, entries written whole or not at all."""

from __future__ import annotations

import importlib
import sys

import pytest

from cultureboard.errors import CultureboardError
from cultureboard.standins import code_fingerprint, fingerprint, make_once, resolve_scorers


def test_fingerprint_is_canonical_and_sensitive():
    assert fingerprint({"a": 1, "b": [1, 2]}) == fingerprint({"b": [1, 2], "a": 1})
    assert fingerprint({"a": 1, "b": [1, 2]}) != fingerprint({"a": 1, "b": [2, 1]})


def test_code_fingerprint_follows_the_files_and_the_libraries(tmp_path, monkeypatch):
    package = tmp_path / "probe_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "writer.py").write_text("SIZE = 16\n")
    (package / "notes.md").write_text("not code")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    before = code_fingerprint(("probe_pkg",), ("pyyaml",))
    assert code_fingerprint(("probe_pkg",), ("pyyaml",)) == before
    (package / "notes.md").write_text("other prose")  # not a code or data file
    assert code_fingerprint(("probe_pkg",), ("pyyaml",)) == before
    (package / "writer.py").write_text("SIZE = 32\n")
    changed = code_fingerprint(("probe_pkg",), ("pyyaml",))
    assert changed != before
    assert code_fingerprint(("probe_pkg",), ("pyyaml", "numpy")) != changed
    assert code_fingerprint(("probe_pkg.writer",), ()) != code_fingerprint(("probe_pkg",), ())
    sys.modules.pop("probe_pkg", None)


def test_make_once_writes_whole_entries_and_never_rewrites_one(tmp_path):
    target = tmp_path / "cache" / "entry"
    calls = []

    def write(folder):
        calls.append(folder)
        folder.mkdir()
        (folder / "model.bin").write_bytes(b"weights")

    assert make_once(target, write) == target and (target / "model.bin").read_bytes() == b"weights"
    make_once(target, write)
    assert len(calls) == 1 and calls[0] != target  # written elsewhere, then renamed

    def fail(folder):
        folder.mkdir()
        (folder / "half").write_bytes(b"x")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        make_once(tmp_path / "cache" / "other", fail)
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["entry"]  # no half-written entry left


def test_resolve_scorers(tmp_path):
    assert resolve_scorers(None) is None and resolve_scorers("default") is None
    config = tmp_path / "scorers.yaml"
    config.write_text("clip-vit-l-14: {path: /models/clip}\n")
    assert resolve_scorers(str(config)) == str(config)
    with pytest.raises(CultureboardError, match="'tiny' or 'default'") as err:
        resolve_scorers(str(tmp_path / "missing.yaml"))
    assert err.value.exit_code == 2
