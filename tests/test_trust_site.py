"""Several ratings folders reach the site: `cultureboard build site --ratings A --ratings B` shows the trust rows of
both studies on trust.html (the site workflow passes every folder under ratings/)."""

from __future__ import annotations

import json

import pytest

from cultureboard.cli import main
from cultureboard.site import render


def write(folder, name, doc):
    folder.mkdir(parents=True)
    (folder / name).write_text(json.dumps(doc), encoding="utf-8")


@pytest.fixture
def two_studies(tmp_path):
    """A CUBE ratings folder (validity.json, trust rows) and a CuRe one (correlations.json, trust rows)."""
    write(tmp_path / "ratings" / "cube", "validity.json", {"trust": [
        {"metric": "cube.faithfulness", "human": "faithfulness", "slice_type": "overall", "slice": "all", "n": 30,
         "rho": 0.5, "rho_low": 0.2, "rho_high": 0.7}]})
    write(tmp_path / "ratings" / "cure", "correlations.json", {"correlations": [], "trust": [
        {"metric": "cure.ps_delta.cr", "human": "phi*_PS", "slice_type": "overall", "slice": "all", "n": 25,
         "rho": 0.1, "rho_low": -0.3, "rho_high": 0.25}]})
    return tmp_path


def test_two_ratings_folders_both_show_on_the_trust_page(two_studies, monkeypatch, capsys):
    root = two_studies
    monkeypatch.setattr(render, "_load_results", lambda results, submissions: ([], []))  # no results needed here
    code = main(["build", "site", "--results", str(root), "--dataset", str(root), "--submissions", str(root),
                 "--out", str(root / "site"), "--ratings", str(root / "ratings" / "cube"),
                 "--ratings", str(root / "ratings" / "cure")])
    assert code == 0, capsys.readouterr().err
    shown = json.loads((root / "site" / "data" / "trust-trust.json").read_text())
    rows = {row["human"]: row for row in shown["rows"]}
    assert set(rows) == {"faithfulness", "phi*_PS"}
    assert rows["faithfulness"]["verdict"].startswith("usable: ")
    assert rows["phi*_PS"]["verdict"] == "diagnostic only: upper 95% bound of Spearman's rho 0.25 < 0.3 (25 items)"
    page = (root / "site" / "trust.html").read_text()
    assert "faithfulness" in page and "phi*_PS" in page
