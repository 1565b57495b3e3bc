"""Importers of the released CUBE-1K JSON and CuRe CSVs (read from ../shared/reference, never committed)."""

import csv
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from cultureboard.builder.importers import CURE_AXES, import_cube_1k, import_cure
from cultureboard.countries import load_countries
from cultureboard.errors import CultureboardError
from cultureboard.records import ARTIFACT_SCHEMA, PROMPT_SCHEMA, table_from_rows

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference"
CUBE_1K = REFERENCE / "cube" / "dataset" / "cube_1k.json"
CURE_DIR = REFERENCE / "cure" / "prepare_data" / "cure_dataset_csv"
UNREACHABLE = "http://127.0.0.1:9/"

needs_cube = pytest.mark.skipif(not CUBE_1K.is_file(), reason=f"CUBE-1K reference data not found at {CUBE_1K}")
needs_cure = pytest.mark.skipif(not CURE_DIR.is_dir(), reason=f"CuRe reference CSVs not found at {CURE_DIR}")


@pytest.fixture(scope="module")
def cube():
    return import_cube_1k(CUBE_1K, load_countries())


@pytest.fixture(scope="module")
def cure():
    return import_cure(CURE_DIR, load_countries())


# ---------------------------------------------------------------------------------------------- CUBE-1K


@needs_cube
def test_cube_1k_keeps_every_row_verbatim(cube):
    _, ps = cube
    released = json.loads(CUBE_1K.read_text(encoding="utf-8"))
    assert len(ps.rows) == 1002
    assert [r["text"] for r in ps.rows] == [item["prompt"] for item in released]
    assert "A panoramic view of Meiji Shrinein Japan, realistic" in {r["text"] for r in ps.rows}


@needs_cube
def test_cube_1k_countries_and_concepts(cube):
    artifacts, ps = cube
    assert Counter(r["country_name"] for r in ps.rows) == {
        "India": 140, "Italy": 135, "Japan": 129, "Turkey": 128, "France": 125, "United States": 122,
        "Brazil": 115, "Nigeria": 108}
    cells = {(r["country"], r["category"]) for r in ps.rows}
    assert len(cells) == 24 and {c for _, c in cells} == {"cuisine", "landmarks", "art"}
    assert {r["subcategory"] for r in ps.rows if r["category"] == "art"} == {"performance", "clothing", "painting", "folk art"}
    assert {a["source"] for a in artifacts} == {"cube-1k"}
    assert all(isinstance(a[p], list) for a in artifacts for p in ("P31", "P279", "P495", "P17", "P2012", "P361"))


@needs_cube
def test_cube_1k_ids_unique_and_stable(cube):
    _, ps = cube
    ids = [r["prompt_id"] for r in ps.rows]
    assert len(set(ids)) == 1002
    _, again = import_cube_1k(CUBE_1K)
    assert [r["prompt_id"] for r in again.rows] == ids
    assert "cube-awareness/q882985/in/2" in ids  # the second, identical garba row
    assert {"cube-awareness/cube-1k-it-pantheon/it", "cube-awareness/cube-1k-fr-pantheon/fr"} <= set(ids)


@needs_cube
def test_cube_1k_notes_licence_and_templates(cube):
    artifacts, ps = cube
    assert ps.name == "cube-awareness" and ps.license == "CC-BY-NC-SA-4.0"
    notes = " ".join(ps.notes)
    assert "4ec2d350102dcfc03e41aa51ee0f2398d642a1a6" in notes
    assert "14 prompts lack the space before 'in'" in notes and "10 the space before 'from'" in notes
    assert "10 have a double space" in notes and "7 distinct prompts are repeated (8 surplus rows" in notes
    countries = load_countries()
    for r in ps.rows:  # the template, filled in, gives the released prompt back (rows that contain their name)
        if r["artifact_name"] in r["text"]:
            adjective = countries.by_iso(r["country"]).adjective
            assert r["template"].format(name=r["artifact_name"], adjective=adjective, country=r["country_name"]) == r["text"]
    assert {tuple(r["seeds"]) for r in ps.rows} == {(0, 1, 2, 3)}
    assert table_from_rows(ps.rows, PROMPT_SCHEMA).num_rows == 1002
    assert table_from_rows(artifacts, ARTIFACT_SCHEMA).num_rows == len(artifacts)


def test_cube_1k_unreachable_url():
    with pytest.raises(CultureboardError, match="could not download"):
        import_cube_1k(UNREACHABLE + "cube_1k.json")


def test_cube_1k_missing_file(tmp_path):
    with pytest.raises(CultureboardError, match="missing") as err:
        import_cube_1k(tmp_path / "cube_1k.json")
    assert "cube_1k.json" in err.value.source


# ---------------------------------------------------------------------------------------------- CuRe


@needs_cure
def test_cure_artifacts(cure):
    artifacts, _ = cure
    assert len(artifacts) == 300
    assert Counter(a["concept"] for a in artifacts) == {axis: 50 for axis in CURE_AXES}
    assert len({(a["concept"], a["subcategory"]) for a in artifacts}) == 31
    assert len({a["country"] for a in artifacts}) == 64
    assert len({a["qid"] for a in artifacts}) == 300
    banku = next(a for a in artifacts if a["name"] == "Banku")
    assert (banku["qid"], banku["country"], banku["category"], banku["subcategory"], banku["era"]) == (
        "cure:food-banku", "GH", "food", "dumpling", None)
    cristo = next(a for a in artifacts if a["name"] == "Cristo Redentor")
    assert cristo["description"] == "Commons category: Cristo Redentor (Rio de Janeiro)" and cristo["era"]
    assert cristo["commons_category"] == "Cristo Redentor (Rio de Janeiro)"  # shell escapes removed
    assert all(a["commons_category"] for a in artifacts)  # every artifact can get reference photos
    several = {a["name"]: a["commons_category"] for a in artifacts if ";" in a["commons_category"]}
    assert len(several) == 15
    assert several["Festa da Uva"] == "Festa da Uva (Caxias do Sul);Festa da Uva (Jundiaí)"  # "Category:" and "_" gone
    assert next(a for a in artifacts if a["name"] == "Jajangmyeon")["country"] == "KR"
    assert table_from_rows(artifacts, ARTIFACT_SCHEMA).num_rows == 300


@needs_cure
def test_cure_ladder(cure):
    _, ps = cure
    levels = Counter(r["level"] for r in ps.rows)
    assert levels == {"n": 300, "n,c": 300, "n,r": 300, "n,c,r": 300, "c": 31}
    assert Counter(r["region_group"] for r in ps.rows if r["level"] == "n") == {"GN": 123, "GS": 177}
    texts = {r["text"] for r in ps.rows}
    assert "An image of Banku, a type of dumpling from Ghana" in texts
    assert "An image of Jajangmyeon, a type of noodle dish from South Korea" in texts
    assert "An image of a dumpling" in texts
    assert ps.name == "cure-ladder" and ps.license == "MIT"
    assert any("3ec629f9c78fac6ff7ce5e50356df3f31a4734f1" in n and "MIT" in n for n in ps.notes)
    assert len({r["prompt_id"] for r in ps.rows}) == 1231
    assert table_from_rows(ps.rows, PROMPT_SCHEMA).num_rows == 1231


@needs_cure
def test_cure_ids_stable(cure):
    _, ps = cure
    _, again = import_cure(CURE_DIR)
    assert [r["prompt_id"] for r in again.rows] == [r["prompt_id"] for r in ps.rows]


def _copy_cure(tmp_path: Path) -> Path:
    folder = tmp_path / "cure"
    shutil.copytree(CURE_DIR, folder)
    return folder


@needs_cure
def test_cure_missing_column(tmp_path):
    folder = _copy_cure(tmp_path)
    path = folder / "food.csv"
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, [c for c in rows[0] if c != "Region"], extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(CultureboardError) as err:
        import_cure(folder)
    assert err.value.source.endswith("food.csv") and "'Region'" in err.value.problem and err.value.fix


@needs_cure
def test_cure_columns_in_any_order(tmp_path):
    folder = _copy_cure(tmp_path)
    path = folder / "food.csv"
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, list(reversed(list(rows[0]))))
        writer.writeheader()
        writer.writerows(rows)
    artifacts, _ = import_cure(folder)
    assert next(a for a in artifacts if a["name"] == "Banku")["country"] == "GH"


@needs_cure
def test_cure_missing_file(tmp_path):
    folder = _copy_cure(tmp_path)
    (folder / "art.csv").unlink()
    with pytest.raises(CultureboardError, match="missing") as err:
        import_cure(folder)
    assert err.value.source.endswith("art.csv")


def test_cure_unreachable_url():
    with pytest.raises(CultureboardError, match="could not download") as err:
        import_cure(UNREACHABLE + "cure/")
    assert err.value.source.endswith("architecture.csv")
