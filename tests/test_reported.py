"""Reported-paper rows (evaluators/results/reported.py and data/reported/*.yaml): every file loads, and the
transcribed numbers are the papers' (checked cell by cell against the seed text, against the engineering notes'
independent transcriptions, and against statements in the papers' prose)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cultureboard.errors import CultureboardError
from cultureboard.evaluators.results.reported import DATA, load_reported, load_validity


SHARED = Path(__file__).resolve().parents[1].parent / "shared"
needs_seeds = pytest.mark.skipif(not (SHARED / "seeds").is_dir(), reason="the seed papers are not on this machine")
NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?\*?")

#: (family, table) -> (seed file, prefix of the header line just above the data, which occurrence, label cells)
SEED_TABLES = {
    ("cube", "Table 3"): ("cube.md", "Concept\tModel", 0, 2),
    ("cube", "Table 5"): ("cube.md", "CD\tIM", 0, 1),
    ("cure", "Table 8"): ("cure.md", "\tSigLIP 2\tDINOv2", 0, 1),
    ("cure", "Table 1"): ("cure.md", "Encoder\tScorer\tFLUX.1 [dev]", 0, 2),
    ("cure", "Table 2"): ("cure.md", "Scorer\tFLUX.1 [dev]", 0, 1),
    ("cure", "Table 3"): ("cure.md", "Scorer\tFLUX.1 [dev]", 1, 1),
    ("cure", "Table 15"): ("cure.md", "ITA Scorer\tLAION-2B", 0, 1),
    ("cultivate", "Table 1"): ("cultivate-ahead.md", "\t\tALIGN", 0, 2),
    ("ecb", "Table 5"): ("ecb-blindspots.md", "\tChange (%)", 0, 1),
    ("ecb", "Table 6"): ("ecb-blindspots.md", "\tChange (%)", 1, 1),
}


@pytest.fixture(scope="module")
def tables():
    return {(t.family, t.table): t for t in load_reported()}


def seed_line(name: str, prefix: str, occurrence: int = 0, offset: int = 0) -> tuple[list[str], int]:
    lines = (SHARED / "seeds" / name).read_text(encoding="utf-8").splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(prefix)]
    return lines, starts[occurrence] + offset


def cell_numbers(line: str, labels: int) -> list[str]:
    return [n for cell in line.split("\t")[labels:] for n in NUMBER.findall(cell)]


def test_every_file_loads(tables):
    assert sorted(p.name for p in DATA.glob("*.yaml")) == ["cube.yaml", "cultivate.yaml", "cure.yaml", "ecb.yaml",
                                                           "evidence.yaml", "validity.yaml"]
    assert {k: len(t.rows) for k, t in tables.items()} == {
        ("cube", "Table 3"): 96, ("cube", "Table 5"): 60, ("cure", "Table 8"): 42, ("cure", "Table 1"): 117,
        ("cure", "Table 2"): 126, ("cure", "Table 3"): 36, ("cure", "Table 15"): 50, ("cultivate", "Table 1"): 72,
        ("ecb", "Table 5"): 30, ("ecb", "Table 6"): 30}
    for t in tables.values():
        assert t.paper and t.caption and t.url.startswith("https://") and t.labels and t.numbers
        frame = t.frame()
        assert list(frame.columns) == [*t.labels, *t.numbers] and len(frame) == len(t.rows)
    assert [t.table for t in load_reported("ecb")] == ["Table 5", "Table 6"]
    with pytest.raises(CultureboardError, match="has no reported tables"):
        load_reported("nope")


def test_printed_text_is_kept(tables):
    cube3 = tables["cube", "Table 3"]
    row = next(i for i, r in enumerate(cube3.rows) if (r["question"], r["concept"], r["country"], r["model"])
               == ("Faithfulness", "Art", "USA", "SDXL"))
    assert (cube3.rows[row]["mean"], cube3.rows[row]["sd"]) == (3.9, 1.7)
    ecb = tables["ecb", "Table 5"]
    assert (ecb.rows[0]["change_percent"], ecb.printed[0]["change_percent"]) == (0.4, "+0.4")
    assert tables["ecb", "Table 6"].printed[0]["final"] == "3.40"  # trailing zero as printed
    cure = tables["cure", "Table 8"]
    starred = [p["value"] for p in cure.printed if p["value"] and p["value"].endswith("*")]
    assert starred == ["0.019*", "0.755*", "0.057*", "0.073*", "0.789*"]


@needs_seeds
@pytest.mark.parametrize("key", sorted(SEED_TABLES))
def test_every_number_matches_the_seed_text(tables, key):
    """The table's numbers, read in the seed's order (rows, then cells left to right), are the seed's tokens."""
    name, prefix, occurrence, labels = SEED_TABLES[key]
    lines, start = seed_line(name, prefix, occurrence)
    seed = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        seed += cell_numbers(line, labels)
    t = tables[key]
    ours = [p[c] for p in t.printed for c in t.numbers if p[c] is not None]
    assert ours == seed


@needs_seeds
def test_labels_match_the_seed_text(tables):
    def data_lines(key):
        name, prefix, occurrence, _ = SEED_TABLES[key]
        lines, start = seed_line(name, prefix, occurrence)
        out = []
        for line in lines[start + 1:]:
            if not line.strip():
                return out
            out.append(line.split("\t"))

    def column(key, label, step):
        return [r[label] for r in tables[key].rows[::step]]

    cube3 = ("cube", "Table 3")
    concepts = [cells[0] for cells in data_lines(cube3) if cells[0] in ("Cuisine", "Landmarks", "Art")]
    assert concepts == column(cube3, "concept", 16)
    lines, start = seed_line("cube.md", "Concept\tModel")
    assert lines[start].split("\t")[2:10] == [r["country"] for r in tables[cube3].rows[:16:2]]
    assert [r["model"] for r in tables[cube3].rows[:2]] == data_lines(cube3)[1][1].split()  # "Imagen SDXL"
    lines, start = seed_line("cube.md", "CD\tIM")
    assert [c for c in lines[start].split("\t")[1:] if c] == [r["model"] for r in tables["cube", "Table 5"].rows[:12]]
    assert [cells[0] for cells in data_lines(("cure", "Table 8"))] == column(("cure", "Table 8"), "model", 7)
    models, regions = [], []
    for cells in data_lines(("cultivate", "Table 1")):
        models.append(cells[0] or models[-1])
        regions.append(cells[1])
    assert list(zip(models, regions)) == list(zip(column(("cultivate", "Table 1"), "model", 6),
                                                  column(("cultivate", "Table 1"), "region", 6)))
    for table in ("Table 5", "Table 6"):
        assert [cells[0] for cells in data_lines(("ecb", table))] == column(("ecb", table), "country", 5)


def test_every_transcribed_table_is_checked(tables):
    assert set(tables) == set(SEED_TABLES)


def _notes_rows(name: str, header: str) -> list[list[str]]:
    """The body rows of the markdown table (in the engineering notes) whose header line starts with ``header``."""
    lines = (SHARED / "notes" / name).read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def _value(text: str) -> float | None:
    found = NUMBER.search(text.replace("\u2212", "-"))
    return None if found is None else float(found.group().rstrip("*"))


@needs_seeds
def test_the_notes_independent_transcriptions_agree(tables):
    # CuRe Table 8 (notes/001-cure.md): one row per system, seven columns; "-" cells are null here
    notes = _notes_rows("001-cure.md", "| T2I | PS SigLIP2")
    cure = tables["cure", "Table 8"]
    assert [row[0].replace("\\", "").casefold() for row in notes] == [r["model"].casefold() for r in cure.rows[::7]]
    header = (SHARED / "notes" / "001-cure.md").read_text(encoding="utf-8").split("| T2I | ")[1].split("\n")[0]
    assert [h.strip() for h in header.strip(" |").split("|")][:6] == [
        f"{r['scorer'][4:]} {r['encoder'].replace(' ', '')}" for r in cure.rows[:6]]
    assert [[_value(c) for c in row[1:]] for row in notes] == [
        [r["value"] for r in cure.rows[i:i + 7]] for i in range(0, 42, 7)]
    # ECB Tables 5 and 6 (notes/004-blindspots.md): cells "change (final)" with a Unicode minus
    for table, header in (("Table 5", "| country | SD3.5"), ("Table 6", "| country | SD3.5")):
        occurrence = 0 if table == "Table 5" else 1
        lines = (SHARED / "notes" / "004-blindspots.md").read_text(encoding="utf-8").splitlines()
        start = [i for i, line in enumerate(lines) if line.startswith(header)][occurrence]
        notes = [[c.strip() for c in line.strip("|").split("|")] for line in lines[start + 2:start + 8]]
        ours = tables["ecb", table].rows
        flat = [(row[0], *map(float, NUMBER.findall(c.replace("\u2212", "-")))) for row in notes for c in row[1:]]
        assert flat == [(r["country"], r["change_percent"], r["final"]) for r in ours]


def _notes_cells(text: str) -> list[float | None]:
    """A notes cell of one to three values ".25/−.36/–": floats with their leading zero, None for a dash."""
    out = []
    for part in text.replace("\u2212", "-").split("/"):
        part = part.strip()
        out.append(None if part in ("\u2013", "-", "\u2014") else float(re.sub(r"^(-?)\.", r"\g<1>0.", part)))
    return out


@needs_seeds
def test_cure_correlation_tables_agree_with_the_notes(tables):
    """CuRe Tables 1, 2, 3 and 15 against the notes' independent transcription (notes/001-cure.md, section 5.1),
    row by row: the same numbers in the same order (the notes print VS(c) and qVS(c) as one row)."""
    text = (SHARED / "notes" / "001-cure.md").read_text(encoding="utf-8")
    sections = {"Table 1": "**Table 1, PS scorers", "Table 2": "**Table 2, ITA scorers", "Table 3": "**Table 3, DIV scorers",
                "Table 15": "**Table 15, ITA"}
    for table, heading in sections.items():
        lines = text[text.index(heading):].splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("|"))
        notes = []
        for line in lines[start + 2:]:
            if not line.startswith("|"):
                break
            cells = [c.strip() for c in line.strip("|").split("|")]
            labels = 2 if table == "Table 1" else 1
            values = [v for c in cells[labels:] for v in _notes_cells(c)]
            notes += [values] * (2 if cells[0].startswith("VS(c) = qVS(c)") else 1)
        width = len(notes[0])
        ours = [r["rho"] for r in tables["cure", table].rows]
        assert [ours[i:i + width] for i in range(0, len(ours), width)] == notes, table


@needs_seeds
def test_cure_correlation_labels_match_the_seed_text(tables):
    lines = (SHARED / "seeds" / "cure.md").read_text(encoding="utf-8").splitlines()
    for table in ("Table 1", "Table 2", "Table 3"):
        name, prefix, occurrence, labels = SEED_TABLES["cure", table]
        _, start = seed_line(name, prefix, occurrence)
        models = [c for c in lines[start].split("\t")[labels:] if c]
        golds = [c.replace("\u03d5_{", "phi*_").replace("}^*", "").strip() for c in lines[start + 1].split("\t") if c.strip()]
        rows = tables["cure", table].rows
        assert models == [r["model"] for r in rows[:9:3]] and golds == [r["gold"] for r in rows[:9]], table
        body = [line.split("\t")[labels - 1] for line in lines[start + 2:start + 2 + len(rows) // 9]]
        assert [_latex_free(c) for c in body] == [_latex_free(r["scorer"]) for r in rows[::9]], table
    # Table 1's encoder blocks, and the scorers of the blocks as CuRe prints them
    encoders = [r["encoder"] for r in tables["cure", "Table 1"].rows[::9]]
    assert encoders == ["none"] + ["SigLIP 2"] * 4 + ["AIMV2"] * 4 + ["DINOv2"] * 4
    assert [r["scorer"] for r in tables["cure", "Table 1"].rows[9:36:9]] == ["phi_GT(n)", "phi_PS(n)", "Delta phi_PS(n,c)"]
    assert [r["scorer"] for r in tables["cure", "Table 3"].rows[::9]] == ["LPIPS(n)", "VS(c)", "qVS(c)", "phi_DIV(a)"]
    assert [r["backbone"] for r in tables["cure", "Table 15"].rows[:5]] == ["LAION-2B", "WIT", "DFN-5B", "SigLIP 2", "DC-1B"]
    _, start = seed_line("cure.md", "ITA Scorer\tLAION-2B")
    assert lines[start].split("\t")[1:] == ["LAION-2B", "WIT", "DFN-5B", "SigLIP 2", "DC-1B"]
    body = [line.split("\t")[0] for line in lines[start + 1:start + 11]]
    assert [_latex_free(c) for c in body] == [_latex_free(r["scorer"]) for r in tables["cure", "Table 15"].rows[::5]]


def _latex_free(label: str) -> str:
    """A scorer label without LaTeX, citations, spaces or case: "$\\Delta\\phi_{PS}(n, c)$" -> "deltaphi_ps(n,c)"."""
    label = re.sub(r"\s*\[\d+\]$", "", label.strip()).replace("\\text", "")
    return re.sub(r"[$\\{}\s]", "", label).casefold()


def test_numbers_follow_the_papers_prose(tables):
    cube3 = {(r["question"], r["concept"], r["country"], r["model"]): r["mean"] for r in tables["cube", "Table 3"].rows}
    # "While Imagen generally outperforms SDXL, exceptions exist, such as art faithfulness in the USA"
    assert cube3["Faithfulness", "Art", "USA", "SDXL"] > cube3["Faithfulness", "Art", "USA", "Imagen"]
    cultivate = {(r["model"], r["region"], r["metric"]): r["value"] for r in tables["cultivate", "Table 1"].rows}
    # "Qwen-Image achieves higher FAITH (0.60 vs 0.55), higher ALIGN (0.36 vs 0.30), and lower HAL (0.51 vs 0.56)"
    assert [cultivate["Qwen-Image", region, m] for m in ("FAITH", "ALIGN", "HAL") for region in ("GN", "GS")] == \
        [0.60, 0.55, 0.36, 0.30, 0.51, 0.56]
    # "SDXL and Dall-E 3 perform best for SIGLIP 2" (phi_PS, lower is better)
    siglip = {r["model"]: r["value"] for r in tables["cure", "Table 8"].rows
              if (r["scorer"], r["encoder"]) == ("phi_PS", "SigLIP 2") and r["value"] is not None}
    assert sorted(m for m, v in siglip.items() if v == min(siglip.values())) == ["Dall-E 3*", "SDXL"]
    # "Nigeria recorded a severe HQS decline with an average of -55.4%"
    nigeria = [r["change_percent"] for r in tables["ecb", "Table 6"].rows if r["country"] == "Nigeria"]
    assert sum(nigeria) / len(nigeria) == pytest.approx(-55.4, abs=0.05)


#: validity.yaml rows -> (seed file, line prefix, offset from it, label cells, cell index per slice)
SEED_VALIDITY = {
    ("cultivate", "CLIPScore"): ("cultivate-ahead.md", "CLIPScore (Hessel", 0, 1),
    ("cultivate", "VQAScore"): ("cultivate-ahead.md", "VQAScore (Lin", 0, 1),
    ("cultivate", "CuRe"): ("cultivate-ahead.md", "CuRe (Rege", 0, 1),
    ("cultivate", "FAITH (InternVL3)"): ("cultivate-ahead.md", "InternVL3 (Zhu et al., 2025)\tMLLM", 1, 2),
    ("cultivate", "Human"): ("cultivate-ahead.md", "-\tHuman", 0, 2),
    ("cure", "DINOv2 phi_GT(n)"): ("cure.md", "DINOv2 [42]\t$\\phi_{GT}(n)$", 0, 2),
    ("cultdiff", "SSIM"): ("cultdiff.md", "SISM\t", 0, 1),
    ("cultdiff", "FID"): ("cultdiff.md", "FID\t", 0, 1),
    ("cultdiff", "LPIPS"): ("cultdiff.md", "LPIPS\t", 0, 1),
    ("cultdiff", "CultDiff-S"): ("cultdiff.md", "CULTDIFF-S\t", 0, 1),
}
SLICE_CELL = {"GS": 0, "GN": 1, "all": 2}


def test_validity_loads_with_sources():
    rows = load_validity()
    assert len(rows) == 20 and {r["family"] for r in rows} == {"cultivate", "cure", "cultdiff"}
    issue = {(r["metric"], r["slice"]): r["value"] for r in rows if r["family"] == "cultivate"}
    assert [issue[m, "all"] for m in ("CLIPScore", "VQAScore", "CuRe", "FAITH (InternVL3)", "Human")] == \
        [0.04, 0.14, 0.10, 0.47, 0.58]
    cultdiff = {r["metric"]: r["printed"] for r in rows if r["family"] == "cultdiff"}
    assert cultdiff == {"SSIM": "0.0458", "FID": "-0.1078", "LPIPS": "-0.1352", "CultDiff-S": "0.1848"}
    assert all(r["statistic"] == "spearman" and r["url"].startswith("https://arxiv.org/") and r["note"] for r in rows)


@needs_seeds
def test_validity_matches_the_seed_text():
    rows = load_validity()
    assert {(r["family"], r["metric"]) for r in rows} == set(SEED_VALIDITY)
    for r in rows:
        name, prefix, offset, labels = SEED_VALIDITY[r["family"], r["metric"]]
        lines, at = seed_line(name, prefix, offset=offset)
        cells = [NUMBER.findall(c)[0] for c in lines[at].split("\t")[labels:] if NUMBER.findall(c)]
        if r["family"] == "cultivate":
            expected = cells[SLICE_CELL[r["slice"]]]
        elif r["family"] == "cure":
            expected = cells[-1]  # SD 1.5, phi*_PS
        else:
            expected = cells[0]  # Spearman
        assert r["printed"] == expected, (r["family"], r["metric"], r["slice"])
    assert "no quantitative scorer surpasses $\\rho = 0.51$" in (SHARED / "seeds" / "cure.md").read_text()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("paper: p\nfamily: f\nurl: u\n", r"keys: missing \['tables'\]"),
        ("paper: p\nfamily: f\nurl: u\ntables: []\n", "has no tables"),
        ("paper: p\nfamily: f\nurl: u\ntables:\n  - {table: T1, caption: c, labels: [a], numbers: [v], rows: [{a: x, v: 1.5}], extra: 1}\n",
         r"unknown \['extra'\]"),
        ("paper: p\nfamily: f\nurl: u\ntables:\n  - {table: T1, caption: c, labels: [a], numbers: [v], rows: [{a: x, v: 1.5}, {a: x, v: 2}]}\n",
         "T1 row 2: repeats the labels of row 1"),
        ("paper: p\nfamily: f\nurl: u\ntables:\n  - {table: T1, caption: c, labels: [a], numbers: [v], rows: [{a: x, v: high}]}\n",
         r"T1 row 1: columns \['v'\] are not printed numbers"),
        ("paper: p\nfamily: f\nurl: u\ntables:\n  - {table: T1, caption: c, labels: [a], numbers: [v], rows: [{a: x}]}\n",
         r"T1 row 1: has the columns \['a'\], not \['a', 'v'\]"),
        ("paper: p\nfamily: f\nurl: u\ntables:\n  - {table: T1, caption: c, labels: [a], numbers: [v], rows: [{a: true, v: 1}]}\n",
         r"columns \['a'\] are not text"),
        ("paper: [p\n", "cannot be read as YAML"),
    ],
)
def test_bad_files_are_reported(tmp_path, text, message):
    (tmp_path / "x.yaml").write_text(text)
    with pytest.raises(CultureboardError, match=message):
        load_reported(folder=tmp_path)


def test_bad_validity_file(tmp_path):
    path = tmp_path / "validity.yaml"
    path.write_text("sources: {a: {paper: p, url: u}}\nlabels: [family, metric]\nnumbers: [value]\n"
                    "rows: [{family: b, metric: m, value: 0.1}]\n")
    with pytest.raises(CultureboardError, match="row 1: names family 'b', which has no source"):
        load_validity(path)
    path.write_text("sources: {}\nlabels: [family]\nnumbers: [rho]\nrows: [{family: b, rho: 0.1}]\n")
    with pytest.raises(CultureboardError, match=r"must have numbers: \[value\]"):
        load_validity(path)
