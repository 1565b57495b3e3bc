"""Results are bit-identical whatever the cache held before: every family, through the real ``evaluate``.

For each family: a run on an empty cache, and a run on a cache warmed by a partial earlier run (one shard of the
submission, so some images, reference photographs and texts are cached and the rest are computed in batches of
another composition). ``scores.parquet`` and ``summary.json`` must be the same bytes, whole: the two runs have the
same code, inputs, options and seed, so no provenance field differs (nothing in them is a timestamp). Model outputs
are computed in fixed-shape batches wherever the scorers' probes allow it (the default).

A third run, in a fresh process on the filled cache, must write the same bytes without importing torch (nor
transformers, open_clip, torchvision): a fully cached rerun of every family needs only numpy, pandas and pyarrow.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cultureboard.builder import build
from cultureboard.builder.dataset import prompt_config, write_dataset
from cultureboard.builder.prompts_cure import build_ladder
from cultureboard.countries import load_countries
from cultureboard.evaluators import evaluate
from cultureboard.evaluators.engine.batching import FIXED


def _cube(root: Path, tiny_scorers: Path, prompt_set: str) -> dict:
    from test_evaluate import make_submission

    dataset = root / "dataset"
    build(dataset, countries=["IT", "FR", "JP"], prompt_sets=[prompt_set])
    # cube-diversity maps images to artifacts by mSigLIP retrieval here: its judge's choice, asked alone, is some
    # thousand passes of the stand-in VLM (the judge's own test covers it; ECB's P(yes) below goes through evaluate)
    options = {"repetitions": 5, **({"mapping": "retrieval"} if prompt_set == "cube-diversity" else {})}
    return {"dataset": dataset, "submission": make_submission(root / "subs", dataset, prompt_set),
            "scorers": tiny_scorers, "options": options}


def _cure(root: Path, tiny_scorers: Path) -> dict:
    from test_cure_family import ARTIFACTS, CATEGORY_IMAGES, SEEDS, make_submission, write_references

    ladder = build_ladder(ARTIFACTS, load_countries(), images_per_prompt=SEEDS, category_images=CATEGORY_IMAGES)
    dataset = write_dataset(root / "dataset", [prompt_config(ladder)], {})
    write_references(dataset)
    return {"dataset": dataset, "submission": make_submission(root / "subs", dataset, "complete", same_bridge=False),
            "scorers": tiny_scorers, "options": None}


def _cultdiff(root: Path, tiny_scorers: Path) -> dict:
    from test_cultdiff import make_inputs

    world = make_inputs(root, tiny_scorers, copy_reference=False)
    return {"dataset": world["dataset"], "submission": world["submission"], "scorers": world["config"],
            "options": None}


def _cultivate(root: Path, tiny_scorers: Path) -> dict:
    from test_cultivate_family import CALIBRATION_MINIMUM, make_world

    world = make_world(root)  # tau calibrated on the photographs' descriptors: MiniLM's text embeddings decide it
    return {**world, "options": {"extractor": "scripted", "vqa": "scripted",
                                 "tau_min_similarities": CALIBRATION_MINIMUM},
            "imports": ["test_cultivate_family"]}  # registers the scripted judge's backend


def _ecb(root: Path, tiny_scorers: Path) -> dict:
    from site_worlds import scorer_config
    from test_ecb_family import OPTIONS, make_ecb_dataset, make_ecb_submission

    dataset = make_ecb_dataset(root / "dataset")
    scorers = yaml.safe_load(scorer_config(tiny_scorers, root).read_text())
    scorers["qwen2.5-vl-7b"]["settings"] = {"max_new_tokens": 16}  # the default: one question per pass
    return {"dataset": dataset, "submission": make_ecb_submission(root / "subs", dataset), "scorers": scorers,
            "options": OPTIONS}


WORLDS = {
    "cube-awareness": lambda root, scorers: _cube(root, scorers, "cube-awareness"),
    "cube-diversity": lambda root, scorers: _cube(root, scorers, "cube-diversity"),
    "cure": _cure, "cultdiff": _cultdiff, "cultivate": _cultivate, "ecb": _ecb,
}


@pytest.mark.parametrize("family", sorted(WORLDS))
def test_results_do_not_depend_on_what_the_cache_held(family, tiny_scorers, tmp_path):
    world = WORLDS[family](tmp_path, tiny_scorers)

    def run(out: str, cache: str, shard=None) -> Path:
        return evaluate(world["submission"], world["dataset"], tmp_path / out, scorers=world["scorers"], device="cpu",
                        cache=tmp_path / cache, n_boot=50, options=world["options"], shard=shard)

    fresh = run("fresh", "empty-cache")
    run("partial", "warm-cache", shard=(1, 3))  # an earlier run that scored a third of the prompts
    warm = run("warm", "warm-cache")
    assert any((tmp_path / "warm-cache").rglob("shard-*.npz")), "the partial run cached nothing"
    for name in ("scores.parquet", "summary.json"):
        assert (fresh / name).read_bytes() == (warm / name).read_bytes(), f"{name} depends on the cache's contents"
    modes = {m for s in _summary(fresh)["provenance"]["scorers"] for m in (s["forward_passes"] or {}).values()}
    # cultivate's one embedder is a text model that pads to the longest batch-mate: its probe chose one text a pass
    assert (FIXED in modes) == (family != "cultivate"), modes
    rerun = _cached_rerun(world, tmp_path / "empty-cache", tmp_path / "rerun")
    for name in ("scores.parquet", "summary.json"):
        assert (fresh / name).read_bytes() == (rerun / name).read_bytes(), f"the cached rerun changed {name}"


def _summary(folder: Path) -> dict:
    import json

    return json.loads((folder / "summary.json").read_text(encoding="utf-8"))


def _cached_rerun(world: dict, cache: Path, out: Path) -> Path:
    """``evaluate`` in a fresh process on a cache that holds every output it needs; asserts it imports no torch."""
    script = (f"import sys\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
              + "".join(f"import {module}\n" for module in world.get("imports", []))
              + "from cultureboard.evaluators import evaluate\n"
              f"print(evaluate({str(world['submission'])!r}, {str(world['dataset'])!r}, {str(out)!r}, "
              f"scorers={world['scorers'] if isinstance(world['scorers'], dict) else str(world['scorers'])!r}, "
              f"device='cpu', cache={str(cache)!r}, n_boot=50, options={world['options']!r}))\n"
              "print('HEAVY', sorted(m for m in ('torch', 'transformers', 'open_clip', 'torchvision') "
              "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "HEAVY []" in done.stdout, f"a fully cached rerun imported {done.stdout.splitlines()[-1]}"
    return Path(done.stdout.splitlines()[-2])

