"""The command line as a user runs it: real processes, one-line errors, exit codes, nothing half-written."""

from __future__ import annotations

import csv
import functools
import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pyarrow.parquet as pq
import pytest

from cultureboard.builder.build import sample_dump_path
from cultureboard.progress import without_progress
from cultureboard.cli import ALIASES, main
from cultureboard.cli import cli as command_line
from cultureboard.demo import (CHEAT_SETS, CONTROL_SETS, COPIED_SET, DEMO_COUNTRIES, STANDIN_MODELS,
                              TEXT_ONLY_SETS, WRITTEN_SETS)

#: The demo's control submissions: reference photographs, text-only images, the two cheats and the written prompts.
DEMO_CONTROLS = ([f"control__reference-photos__{ps}" for ps in CONTROL_SETS]
                 + [f"control__text-only__{ps}" for ps in TEXT_ONLY_SETS]
                 + [f"control__{kind}__{ps}" for ps, kind in CHEAT_SETS.items()]
                 + [f"control__written-prompt__{ps}" for ps in WRITTEN_SETS])
#: The control the demo makes for validation to refuse: kept in submissions/, never scored.
REFUSED = f"control__copied-references__{COPIED_SET}"

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference"
REQUIRED = {"qid", "name", "country", "concept", "hop", "root", "P31", "P279", "P495", "P17", "P2012", "P361",
            "popularity", "image", "inception_year", "time_period", "description", "aliases"}


def cli(*args, cwd=None, env=None):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "cultureboard.cli", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=600)


def assert_clean_error(result, *needles, code=1):
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    lines = without_progress(result.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0]


def test_artifacts_command(tmp_path):
    out = tmp_path / "space"
    r = cli("extract-artifacts", "--dump", sample_dump_path(), "--concepts", "cuisine,landmarks,art", "--countries", "IT,JP",
            "--hops", 4, "--out", out)
    assert r.returncode == 0, r.stderr
    table = pq.read_table(out / "artifacts.parquet")
    assert REQUIRED <= set(table.column_names)
    rows = table.to_pylist()
    assert {r["country"] for r in rows} == {"IT", "JP"} and {r["concept"] for r in rows} == {"cuisine", "landmarks", "art"}
    filone = [r for r in rows if r["qid"] == "Q5449200"]
    assert filone and filone[0]["country"] == "IT" and filone[0]["hop"] >= 2
    assert (out / "report.json").is_file()


@pytest.mark.parametrize(
    "args, needles, code",
    [
        (["--concepts", "cuisine,fashionz", "--countries", "IT"], ["fashionz", "unknown concept"], 1),
        (["--concepts", "cuisine", "--countries", "IT,XX"], ["'XX'", "ISO 3166-1"], 1),
        (["--concepts", "cuisine", "--countries", "IT", "--hops", "0"], ["--hops 0"], 2),
    ],
)
def test_artifacts_bad_options(tmp_path, args, needles, code):
    out = tmp_path / "out"
    assert_clean_error(cli("extract-artifacts", "--dump", sample_dump_path(), *args, "--out", out), *needles, code=code)
    assert not out.exists()


def test_missing_root(tmp_path):
    concepts = tmp_path / "concepts.yaml"
    concepts.write_text("cuisine:\n  roots:\n    - {qid: Q746549, name: dish}\n    - {qid: Q999999999, name: nothing}\n")
    r = cli("extract-artifacts", "--dump", sample_dump_path(), "--concepts", "cuisine", "--countries", "IT",
            "--concepts-file", concepts, "--out", tmp_path / "out")
    assert_clean_error(r, "Q999999999", "not in the knowledge base")
    assert not (tmp_path / "out").exists()


def test_corrupt_dump_and_unreachable_endpoint(tmp_path):
    corrupt = tmp_path / "dump.json.gz"
    corrupt.write_bytes(gzip.compress(sample_dump_path().read_bytes())[:5000])
    r = cli("extract-artifacts", "--dump", corrupt, "--concepts", "cuisine", "--countries", "IT", "--out", tmp_path / "a")
    assert_clean_error(r, str(corrupt), "cannot be read as a Wikidata JSON dump")
    r = cli("artifacts", "--sparql", "http://127.0.0.1:9/sparql", "--concepts", "cuisine", "--countries", "IT",
            "--out", tmp_path / "b")
    assert_clean_error(r, "http://127.0.0.1:9/sparql", "unreachable")
    r = cli("artifacts", "--concepts", "cuisine", "--countries", "IT", "--out", tmp_path / "c")
    assert_clean_error(r, "exactly one knowledge base", code=2)
    assert not any((tmp_path / d).exists() for d in "abc")


def test_out_folder_is_never_clobbered(tmp_path):
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("do not delete")
    r = cli("extract-artifacts", "--dump", sample_dump_path(), "--concepts", "cuisine", "--countries", "IT", "--out", precious)
    assert_clean_error(r, "will not be overwritten")
    assert (precious / "thesis.tex").read_text() == "do not delete"


def test_bad_build_inputs(tmp_path):
    bad_config = tmp_path / "config.yaml"
    bad_config.write_text("countries: [IT]\nflavour: spicy\n")
    assert_clean_error(cli("build", "--out", tmp_path / "o", "--config", bad_config), "flavour")
    assert_clean_error(cli("build", "--out", tmp_path / "o", "--prompt-sets", "cube-awareness,nope"), "nope")
    assert_clean_error(cli("build", "--out", tmp_path / "o", "--llm", "telepathy:x"), "telepathy")
    assert not (tmp_path / "o").exists()


def test_cure_import_with_missing_column(tmp_path):
    if not REFERENCE.is_dir():
        pytest.skip(f"the papers' reference data is not at {REFERENCE}")
    broken = tmp_path / "csv"
    broken.mkdir()
    for src in (REFERENCE / "cure/prepare_data/cure_dataset_csv").glob("*.csv"):
        text = src.read_text(encoding="utf-8")
        if src.name == "food.csv":
            text = text.replace("Region,", "Place,", 1)
        (broken / src.name).write_text(text, encoding="utf-8")
    assert_clean_error(cli("import", "cure", broken, "--out", tmp_path / "o"), "food.csv", "Region")
    assert not (tmp_path / "o").exists()


def test_earlier_command_names_still_work(tmp_path, capsys):
    """Every earlier name runs the command it became (hidden from the help); `build` alone is `build dataset`."""
    ctx = click.Context(command_line)
    for old, new in ALIASES.items():
        words_old, words_new = old.split(), new.split()
        resolve = lambda words: functools.reduce(lambda group, w: group.get_command(ctx, w), words, command_line)
        assert resolve(words_old).callback is resolve(words_new).callback, old
        assert resolve(words_old).hidden
    assert main(["--help"]) == 0
    listed = capsys.readouterr().out.split("Commands:")[1].split("Earlier names")[0]
    assert not any(f"  {old.split()[0]} " in listed for old in ALIASES if " " not in old)
    for argv in (["build"], ["build", "dataset"]):  # routed to the dataset build: its option check answers
        assert_clean_error(cli(*argv, "--out", tmp_path / "o", "--prompt-sets", "nope"), "nope")
    assert not (tmp_path / "o").exists()


def test_demo_help_states_the_countries_it_builds(capsys):
    assert main(["demo", "--help"]) == 0
    assert f"(default: {','.join(DEMO_COUNTRIES)})" in " ".join(capsys.readouterr().out.split())


# ------------------------------------------------------------------------------------ the demo

@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory):
    """The demo run twice with one cache: into a new folder, then into another new folder (``--json``)."""
    root = tmp_path_factory.mktemp("demo")
    env = {"CULTUREBOARD_CACHE": str(root / "cache")}
    first = cli("demo", "--out", root / "first", env=env)
    assert first.returncode == 0, first.stderr
    second = cli("demo", "--out", root / "second", "--json", env=env)
    assert second.returncode == 0, second.stderr
    return {"root": root, "env": env, "first": first, "second": second, "demo": root / "first"}


def _results(folder: Path) -> dict:
    return {p.name: json.loads((p / "summary.json").read_text()) for p in sorted((folder / "results").iterdir())}


def test_demo_runs_every_step_of_every_family(demo_runs):
    from cultureboard.evaluators.engine.registry import family_of, load_families

    demo, out = demo_runs["demo"], demo_runs["first"].stdout
    lines = out.splitlines()
    assert lines[0].startswith(f"cultureboard demo -> {demo}: build, generate")  # printed before any heavy import
    steps = [line.split("]")[0] for line in lines if line.startswith("[")]
    assert steps == ["[1/5", "[2/5", "[3/5", "[4/5", "[5/5"]
    assert (demo / "dataset/README.md").is_file() and (demo / "site/index.html").is_file()
    subs = sorted(p.name for p in (demo / "submissions").iterdir())
    models = sorted(f"demo__{model}__{ps}" for model, sets in STANDIN_MODELS.items() for ps in sets)
    refused = REFUSED
    assert subs == sorted(models + DEMO_CONTROLS + [refused])
    assert f"{refused}: refused, as it must be: " in out
    assert {"control__category-images__cure-ladder", "control__unedited__ecb"} <= set(subs)  # the two cheats
    assert out.count("generated") == len(models) and "reused" not in out
    results = _results(demo)
    assert sorted(results) == [s for s in subs if s != refused]
    scored = {family_of(s.split("__")[-1])[0].name for s in subs}
    assert scored == set(load_families())  # every registered family is in the demo
    for sid, summary in results.items():  # ... and has at least one metric with a value
        assert any(entry["value"] is not None for entry in summary["metrics"]), sid
    build = json.loads((demo / "dataset/build.json").read_text())
    assert sorted(build["options"]["countries"]) == sorted(DEMO_COUNTRIES)
    assert "random-weight stand-in" in out and str((demo / "site" / "index.html").resolve()) in out
    assert "Traceback" not in demo_runs["first"].stderr and "Loading pipeline components" not in demo_runs["first"].stderr


def test_demo_shows_the_reference_photos_controls_as_unranked_rows(demo_runs):
    """cure-ladder's and cultdiff's reference-photos controls are scored (each photograph against the others:
    never a self-match) and shown on their leaderboards as control rows, without a rank."""
    import csv

    import pyarrow.parquet as pq

    demo = demo_runs["demo"]
    results = _results(demo)
    for prompt_set, metric in (("cure-ladder", "cure.gt"), ("cultdiff", "cultdiff.ssim")):
        sid = f"control__reference-photos__{prompt_set}"
        summary = results[sid]
        assert summary["provenance"]["submission"]["id"] == sid
        [overall] = [e for e in summary["metrics"] if (e["metric"], e["slice_type"]) == (metric, "overall")]
        assert overall["value"] is not None and overall["n_prompts"] > 0
        scores = pq.read_table(demo / "results" / sid / "scores.parquet").to_pandas()
        rows = scores[(scores.metric == metric) & scores.flag.isna()]
        if prompt_set == "cure-ladder":  # each photograph against the others only
            assert all(json.loads(d)["left_out"] for d in rows.detail)
        else:  # SSIM(x, x) = 1 would be among an image's values if its own photograph were compared
            assert max(v for d in rows.detail for v in json.loads(d)["per_reference"]) < 0.99
        page = (demo / "site" / "leaderboard" / f"{prompt_set}.html").read_text()
        [row] = [r.split("</tr>", 1)[0] for r in page.split('<tr class="control"')[1:] if f"model/{sid}.html" in r]
        assert "control: reference-photos" in row
        assert row.split("<td", 2)[1].startswith(' class="na" data-sort="">—')  # the rank cell: none
        table = demo / "site" / "data" / f"leaderboard-{prompt_set}-{prompt_set}-g1.csv"
        rows = list(csv.DictReader(table.open(encoding="utf-8")))
        [control] = [r for r in rows if r["control"] == "reference-photos"]
        assert (control["rank_best"], control["rank_worst"]) == ("", "")
        # the model beside it is ranked on CuRe's validated headline (cure.gt); CultDiff's are all diagnostic
        assert any(r["rank_best"] for r in rows if not r["control"]) == (prompt_set == "cure-ladder")


def test_demo_remakes_its_controls_in_a_folder_it_ran_in(demo_runs, tmp_path):
    from cultureboard.demo import _controls

    demo = shutil.copytree(demo_runs["demo"] / "dataset", tmp_path / "dataset")
    sources = [shutil.copytree(demo_runs["demo"] / "submissions" / sid, tmp_path / "models" / sid)
               for sid in sorted(os.listdir(demo_runs["demo"] / "submissions")) if sid.startswith("demo__")]
    for _ in range(2):  # the second run replaces the first's (finished submissions, which carry no output marker)
        made = _controls(demo, tmp_path / "submissions", sources, lambda line: None)
    assert [f.name for f in made] == DEMO_CONTROLS
    assert all((f / "metadata.jsonl").is_file() for f in made)


def test_demo_shows_where_the_cheats_land_and_badges_what_they_top(demo_runs):
    """category-images (cure-ladder, from tiny-b's P(c) images) and unedited (ecb, from tiny-a's bases) are scored
    and shown as control rows with where they would rank; every metric page badges "gameable" exactly where a cheat
    scores better than every model over all prompts (from enough prompts to rank), in the card's direction."""
    from cultureboard.site.gaming import CHEATS, standings
    from cultureboard.site.names import MIN_PROMPTS

    demo, results = demo_runs["demo"], _results(demo_runs["demo"])
    for prompt_set, kind in CHEAT_SETS.items():
        sid = f"control__{kind}__{prompt_set}"
        assert results[sid]["provenance"]["submission"]["id"] == sid
        assert f"control {sid}: " in demo_runs["first"].stdout and "copied from demo__tiny-" in demo_runs["first"].stdout
        page = (demo / "site" / "leaderboard" / f"{prompt_set}.html").read_text()
        [row] = [r.split("</tr>", 1)[0] for r in page.split('<tr class="control"')[1:] if f"model/{sid}.html" in r]
        assert f"control: {kind}" in row and "would rank " in row
        assert "Where each control lands on" in page and f"{sid} ({kind}) scores " in page
    # the written-prompt cheat is read by the OCR's real weights: nearly every image spells its prompt
    written = results["control__written-prompt__cube-awareness"]["written"]
    assert written["share"] >= 0.9 and written["ocr"]["package"] == "rapidocr-onnxruntime"
    assert "the first number in this demo that measures something" in demo_runs["first"].stdout
    values = {}  # metric -> {sid: overall value}
    for sid, summary in results.items():
        for e in summary["metrics"]:
            if (e["slice_type"], e["slice"]) == ("overall", "all") and e["n_prompts"] >= MIN_PROMPTS:
                values.setdefault(e["metric"], {})[sid] = e["value"]
    cards = {c["name"]: c for summary in results.values() for c in summary["metrics_info"]}
    gameable = set()
    for metric in cards:
        found = values.get(metric, {})
        models = [v for sid, v in found.items() if not sid.startswith("control__")]
        cheats = [(sid, sid.split("__")[1], v) for sid, v in found.items() if sid.split("__")[1] in CHEATS]
        if any(s.gameable for s in standings(cards[metric], models, cheats)):
            gameable.add(metric)
        page = (demo / "site" / "metric" / f"{metric}.html").read_text()
        assert ("<dt>Gaming</dt>" in page) == (metric in gameable), metric


def test_a_cheat_that_tops_the_headline_badges_it_gameable(demo_runs, tmp_path):
    """The demo's results with the unedited control's ECB headline moved past the model's, in the card's direction:
    the headline is badged "gameable" on the leaderboard and its metric page, and the control would rank first."""
    from cultureboard.site.render import build_site

    demo, sid = demo_runs["demo"], "control__unedited__ecb"
    results = shutil.copytree(demo / "results", tmp_path / "results")
    headline = "ecb.aesthetic"  # the board's headline: ecb's one validated card (its primary is diagnostic)
    summaries = _results(demo)
    card = next(c for c in summaries[sid]["metrics_info"] if c["name"] == headline)
    [model] = [e["value"] for e in summaries["demo__tiny-a__ecb"]["metrics"]
               if (e["metric"], e["slice_type"]) == (headline, "overall")]
    top = card["target"] if card["direction"] == "target" else model + (1 if card["direction"] == "higher" else -1)
    summary = summaries[sid]
    for e in summary["metrics"]:
        if (e["metric"], e["slice_type"]) == (headline, "overall"):
            e["value"], e["ci_low"], e["ci_high"] = top, top, top
    (results / sid / "summary.json").write_text(json.dumps(summary))
    build_site(results, demo / "dataset", demo / "submissions", tmp_path / "site")
    board = (tmp_path / "site" / "leaderboard" / "ecb.html").read_text()
    head = board.split(f'data-key="{headline}"', 1)[1].split("</th>", 1)[0]  # the headline's column header
    assert ">gameable</span>" in head
    [row] = [r.split("</tr>", 1)[0] for r in board.split('<tr class="control"')[1:] if f"model/{sid}.html" in r]
    assert "would rank 1 of 2, gameable" in row
    assert "not ranked: a cheat tops every model" in board  # the cheat unranks the board
    downloaded = list(csv.DictReader((tmp_path / "site" / "data" / "leaderboard-ecb-ecb-g1.csv").open()))
    assert not any(r["rank_best"] for r in downloaded)
    page = (tmp_path / "site" / "metric" / f"{headline}.html").read_text()
    assert "<dt>Gaming</dt>" in page and f"{sid} (unedited) scores " in page


def test_demo_site_has_a_model_page_per_model_and_a_kendall_tau(demo_runs):
    """Each stand-in model's page lists every prompt set it generated; agreement.html compares the families the
    three stand-ins share (cube-awareness and cultdiff) with a tau over three models, not "too few shared models"."""
    site = demo_runs["demo"] / "site"
    for model, sets in STANDIN_MODELS.items():
        rows = json.loads((site / f"data/models-demo__{model}-prompt-sets.json").read_text())["rows"]
        assert sorted(r["prompt_set"] for r in rows) == sorted(sets), model
    rows = json.loads((site / "data/agreement-overall.json").read_text())["rows"]
    compared = [r for r in rows if r["tau"] is not None]
    assert compared and all(r["shared"] == len(STANDIN_MODELS) and -1 <= r["tau"] <= 1 for r in compared), rows
    assert any({r["a"].split(":")[0], r["b"].split(":")[0]} == {"cube", "cultdiff"} for r in compared), rows
    assert "Too few shared models" not in (site / "agreement.html").read_text()


def test_demo_scores_a_held_out_split_and_no_public_file_names_it(demo_runs):
    """The private dataset beside the public one, one stand-in scored on it, the column, the gap and the page; no
    file of the demo but the private dataset names a held-out prompt or artifact."""
    from cultureboard.builder.held_out import find_leaks
    from cultureboard.demo import HELD_OUT_SUBMISSION

    demo = demo_runs["demo"]
    sid = "demo__{}__{}".format(*HELD_OUT_SUBMISSION)
    record = json.loads((demo / "results-held-out" / f"{sid}.json").read_text())
    split = json.loads((demo / "dataset" / "build.json").read_text())["held_out"]
    assert record["status"] == "tested" and record["split"]["fingerprint"] == split["fingerprint"]
    assert split["prompts"]["cube-awareness"] == record["metrics"][0]["held_out"]["n_prompts"]
    assert 'data-key="held_out"' in (demo / "site" / "leaderboard" / "cube-awareness.html").read_text()
    assert "Held-out prompts" in (demo / "site" / "model" / f"{sid}.html").read_text()
    assert split["fingerprint"] in (demo / "site" / "held-out.html").read_text()
    public = [p for p in demo.iterdir() if p.name != "dataset-held-out"]
    assert find_leaks(public, demo / "dataset-held-out") == []


def test_synthetic_answers_rise_with_the_anchor_rank():
    """likert: clip(round(1 + 4 u + e), 1, 5); relevance: yes above 0.6, maybe above 0.3 (of u + e / 4)."""
    import numpy as np

    from cultureboard.demo_ratings import likert, ranks, relevance

    assert likert(np.array([0.0, 0.5, 1.0, 1.0, 0.0]), np.array([0.0, 0.0, 0.0, 2.0, -0.6])).tolist() == [1, 3, 5, 5, 1]
    assert likert(np.array([0.5]), np.array([0.6])).tolist() == [4]  # 1 + 2 + 0.6 rounds to 4
    assert relevance(np.array([0.7, 0.5, 0.2, 0.5]), np.array([0.0, 0.0, 0.0, 0.8])) == ["yes", "maybe", "no", "yes"]
    import pandas as pd
    assert ranks(pd.Series([0.3, 0.1, 0.2, 0.2])).tolist() == [1.0, 0.0, 0.5, 0.5] and ranks(pd.Series([7.0])).tolist() == [0.5]


def test_demo_shows_the_trust_view_of_synthetic_ratings(demo_runs):
    """The demo rates one submission of four studies' prompt sets synthetically (3 raters of the item's country, answers
    that follow the anchor metric's rank), imports each with its study's writer, and the site shows the trust table
    with per-country rows, says on every page and on the trust page that the ratings are synthetic, and explains what
    real ones would show."""
    import pandas as pd

    from cultureboard.demo_ratings import ANCHORS, MARKER

    demo, out = demo_runs["demo"], demo_runs["first"].stdout
    ratings = demo / "ratings"
    assert sorted(p.name for p in ratings.iterdir() if p.is_dir()) == ["cube", "cultdiff", "cultivate", "cure"]
    assert "synthetic ratings (noisy functions of the automatic scores, seed 0; not human judgements)" in out
    for study in ("cube", "cultdiff", "cultivate", "cure"):
        marker = json.loads((ratings / study / MARKER).read_text())
        assert marker["synthetic"] is True and "not human judgements" in marker["note"], study
        assert any((ratings / study / name).is_file() for name in ("validity.json", "correlations.json")), study
    rows = pd.read_csv(ratings / "cube.csv")
    assert (rows.groupby("prompt_id")["rater"].nunique() == 3).all()
    assert (rows["rater_country"] == rows["rater"].str.split("-").str[1].str.upper()).all()
    sid = rows["submission"].iloc[0]
    scores = pd.read_parquet(demo / "results" / sid / "scores.parquet")
    anchor = scores[scores["metric"] == ANCHORS["cube"][1]["faithfulness"]].set_index("prompt_id")["value"]
    mean = rows.groupby("prompt_id")["faithfulness"].mean()
    assert mean.corr(anchor.loc[mean.index], method="spearman") > 0.5  # the answers follow the anchor
    trust = json.loads((demo / "site" / "data" / "trust-trust.json").read_text())["rows"]
    titles = {r["metric"] for r in trust}  # a metric of each study's family
    assert {"Quality (HPS v2.1)", "CultDiff-S learned similarity to real photographs", "Faithfulness (FAITH)",
            "Similarity to reference photographs, SigLIP 2 (phi_GT(n))"} <= titles, titles
    assert {"Nigeria (NG)", "Spain (ES)", "Mexico (MX)"} <= {r["slice"] for r in trust}  # per-country rows
    page = (demo / "site" / "trust.html").read_text()
    assert 'id="synthetic-ratings"' in page and "What real ratings would show" in page and "Nigeria (NG)" in page
    for path in ("index.html", "trust.html", f"model/{sid}.html"):
        assert "<strong>Synthetic ratings:</strong> not human judgements." in (demo / "site" / path).read_text(), path


def test_demo_submissions_declare_release_date_and_size(demo_runs):
    """Every stand-in's submissions declare its (illustrative) release date and its real parameter count."""
    import yaml

    from cultureboard.demo import STANDIN_RELEASES, parameter_count
    from cultureboard.standins import standin_pipeline

    for seed, (model, sets) in enumerate(STANDIN_MODELS.items()):
        size = parameter_count(standin_pipeline(model, seed))
        assert size > 1000
        for prompt_set in sets:
            spec = yaml.safe_load((demo_runs["demo"] / "submissions" / f"demo__{model}__{prompt_set}" / "submission.yaml").read_text())
            assert (spec["model"]["release_date"], spec["model"]["parameters"]) == (STANDIN_RELEASES[model], size)


def test_demo_rerun_into_a_new_folder_reuses_the_cache(demo_runs):
    first, second = demo_runs["demo"], demo_runs["root"] / "second"
    summary = json.loads(demo_runs["second"].stdout)
    subs = sorted(p.name for p in (first / "submissions").iterdir())
    generated = [s for s in subs if not s.startswith("control__")]  # the controls (and REFUSED) are made anew
    assert sorted(summary["cached"]) == sorted(["dataset", "held-out", *generated])  # the held-out images too
    assert len(generated) == len(subs) - len(DEMO_CONTROLS) - 1
    assert set(summary["seconds"]) == {"start", "build", "generate", "validate", "evaluate", "ratings", "site", "total"}
    for study in ("cube", "cultdiff", "cultivate", "cure"):  # the synthetic ratings: seeded, the same bytes
        assert (first / "ratings" / f"{study}.csv").read_bytes() == (second / "ratings" / f"{study}.csv").read_bytes()
    assert demo_runs["second"].stderr.count("reused from the cache") == len(generated) + 2
    assert "held-out images reused from the cache" not in demo_runs["first"].stdout
    assert (first / "results-held-out").is_dir() and all(  # the held-out record: the same bytes
        (second / "results-held-out" / p.name).read_bytes() == p.read_bytes() for p in (first / "results-held-out").iterdir())
    for sub in subs:  # the same bytes: images, metadata and submission.yaml
        a, b = first / "submissions" / sub, second / "submissions" / sub
        files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
        assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
        assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files), sub
    assert _results(first) == _results(second)


def test_demo_generation_cache_is_keyed_by_its_inputs(demo_runs, tmp_path, monkeypatch):
    """A stand-in's submission made again from the same inputs is the cached one, the same bytes (True: reused);
    another setting (3 denoising steps instead of 2) misses, generates and stores its own entry, reused next time."""
    import torch

    from cultureboard.demo import STANDIN_GENERATION, _cached_generate
    from cultureboard.standins import standin_pipeline

    monkeypatch.setenv("CULTUREBOARD_CACHE", demo_runs["env"]["CULTUREBOARD_CACHE"])
    demo, sid = demo_runs["demo"], "demo__tiny-a__cube-awareness"
    settings = {"organization": "demo", "model_name": "tiny-a", "tag": "cube-awareness", "contact": "cultureboard demo",
                **STANDIN_GENERATION}
    pipeline = str(standin_pipeline("tiny-a", 0))

    def files(folder: Path) -> dict:  # the images and metadata (the demo adds release date and size to the spec)
        return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
                if p.is_file() and p.name != "submission.yaml"}

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the demo runs the stand-ins (the thread count is part of the key)
    try:
        assert _cached_generate(demo / "dataset", "cube-awareness", pipeline, tmp_path / "same" / sid, **settings)
        assert files(tmp_path / "same" / sid) == files(demo / "submissions" / sid)
        other = {**settings, "steps": 3}
        assert not _cached_generate(demo / "dataset", "cube-awareness", pipeline, tmp_path / "steps" / sid, **other)
        assert files(tmp_path / "steps" / sid) != files(demo / "submissions" / sid)
        assert _cached_generate(demo / "dataset", "cube-awareness", pipeline, tmp_path / "again" / sid, **other)
        assert files(tmp_path / "again" / sid) == files(tmp_path / "steps" / sid)
    finally:
        torch.set_num_threads(threads)


def test_evaluate_with_the_tiny_scorers(demo_runs, tmp_path):
    """`--scorers tiny` is the demo's scorers, for any submission: the same summary as the demo's."""
    demo, sub = demo_runs["demo"], "demo__tiny-b__cube-awareness"
    # a copy: the site hard-links the demo's images, which the validator refuses (notes/requests/demo.md)
    submission = shutil.copytree(demo / "submissions" / sub, tmp_path / "submissions" / sub)
    r = cli("evaluate", submission, "--dataset", demo / "dataset", "--out", tmp_path / "results",
            "--scorers", "tiny", "--json", env=demo_runs["env"])
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["stand_in_scorers"] is True and info["submission"] == sub and info["prompt_set"] == "cube-awareness"
    assert info["metrics"] and Path(info["results"]) == tmp_path / "results" / sub
    assert json.loads((tmp_path / "results" / sub / "summary.json").read_text()) == _results(demo)[sub]
    assert_clean_error(cli("evaluate", submission, "--dataset", demo / "dataset", "--out", tmp_path / "other",
                           "--scorers", tmp_path / "none.yaml"), "none.yaml", "'tiny'", code=2)


def test_build_site_and_make_control_print_json(demo_runs, tmp_path):
    demo = demo_runs["demo"]
    r = cli("build", "site", "--results", demo / "results", "--dataset", demo / "dataset", "--submissions",
            demo / "submissions", "--out", tmp_path / "site", "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["pages"] > 0 and (tmp_path / "site/index.html").is_file() and info["skipped"] == []
    r = cli("make-control", "text-only", "--dataset", demo / "dataset", "--prompt-set", "cube-awareness", "--out",
            tmp_path / "control__text-only", "--json")
    assert r.returncode == 0, r.stderr
    made = json.loads(r.stdout)
    assert made["images"] == len(list((tmp_path / "control__text-only" / "images").rglob("*.png"))) > 0


def test_import_ratings_of_any_study(demo_runs, tmp_path):
    """One dispatch over the registered studies: a study without a writer of its own (cultivate) gets the
    common format and agreement; options a study does not take are usage errors naming its options."""
    import pandas as pd

    from cultureboard.dataset_folder import read_prompt_set

    demo = demo_runs["demo"]
    prompts = [p["prompt_id"] for p in read_prompt_set(demo / "dataset", "cultivate")][:2]
    ratings = tmp_path / "ratings.csv"
    sid = next(p.name for p in (demo / "results").iterdir() if p.name.endswith("__cultivate"))
    ratings.write_text("rater,rater_country,submission,prompt_id,sample_idx,gt_faith,gt_hal\n"
                       f"r1,IT,{sid},{prompts[0]},0,4,2\nr2,IT,{sid},{prompts[0]},0,3,2\nr1,NG,{sid},{prompts[1]},1,5,1\n")
    r = cli("import", "ratings", ratings, "--study", "cultivate", "--dataset", demo / "dataset", "--prompt-set",
            "cultivate", "--out", tmp_path / "rated", "--results", demo / "results", "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["study"] == "cultivate" and info["rows"] == 6 and info["raters"] == 2
    assert sorted(p.name for p in (tmp_path / "rated").iterdir() if not p.name.startswith(".")) == \
        ["agreement.json", "ratings.parquet", "validity.json"]
    trust = json.loads((tmp_path / "rated/validity.json").read_text())["trust"]
    assert trust and {(t["submission"], t["human"]) for t in trust} <= {(sid, "GT-FAITH"), (sid, "GT-HAL")}
    assert len(pd.read_parquet(tmp_path / "rated/ratings.parquet")) == 6
    base = ("--dataset", demo / "dataset", "--out", tmp_path / "x")
    assert_clean_error(cli("import", "ratings", ratings, "--study", "cure", "--scores", ratings, *base),
                       "study cure", "takes no --scores", "--results", code=2)
    assert_clean_error(cli("import", "ratings", ratings, "--study", "ecb", "--submissions", demo / "submissions", *base),
                       "study ecb", "--submissions as dict", code=2)
    assert_clean_error(cli("ratings", "import", ratings, "--study", "cube", *base), "study cube", "needs --prompt-set",
                       code=2)
    assert_clean_error(cli("import", "ratings", ratings, "--study", "nope", *base), "nope", "cultivate")
    assert not (tmp_path / "x").exists()
