"""``cultureboard demo``: the whole pipeline, offline, on the embedded defaults.

build the dataset from the shipped sample dump -> generate submissions with tiny local stand-in
generators -> validate them -> evaluate them with tiny stand-in scorers -> render the site.

The stand-ins are the real library classes (diffusers, transformers, open_clip) with random weights,
saved and loaded through the real loading code; they are cached (``$CULTUREBOARD_CACHE/standins``, by
default ``~/.cache/cultureboard``) together with the embeddings, so a second run is quick. Their scores
measure nothing. ``scorers="default"`` uses the registry's real checkpoints and ``pipelines`` real
diffusers pipelines: the same steps on a machine with network access and a GPU.

The output folder holds ``dataset/``, ``submissions/``, ``results/`` and ``site/``, so any single step
can be rerun by hand on it.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Callable

from .atomic import claim_folder
from .errors import CultureboardError

#: A small slice of the sample (two Global North countries, one Global South) keeps the demo quick; Spain and
#: Mexico give the cultdiff set prompts (it keeps CultDiff's ten countries only).
DEMO_COUNTRIES = ["IT", "JP", "NG", "ES", "MX"]
#: The stand-in models, and the prompt sets (those the evaluator scores today) each generates.
STANDIN_MODELS = {"tiny-a": ("cube-awareness", "cube-diversity", "cultivate"), "tiny-b": ("cube-awareness", "cultdiff", "cure-ladder")}
#: The cultivate prompt set from a small activity catalogue (6 prompts of the 576; seed reference descriptors).
CULTIVATE_ACTIVITIES = "data/cultivate_demo_activities.yaml"
#: cure-ladder with 1 image per artifact prompt and 2 per category prompt (CuRe: 4 and 80), so that its images and
#: LPIPS pairs stay few; cure.div_delta needs two images of P(n), so the demo shows it flagged.
CURE_IMAGES = [1, 2]
#: Family options for the stand-in scorers: the tiny judge writes random tokens, so a short answer fails cultivate's
#: JSON check as surely as a long one (a real judge gets the defaults).
STANDIN_OPTIONS = {"cultivate": {"max_new_tokens": 16}}


def cache_root() -> Path:
    return Path(os.environ.get("CULTUREBOARD_CACHE", Path.home() / ".cache" / "cultureboard"))


def _standin_pipelines(root: Path) -> dict[str, str]:
    from .evaluators.submission.tiny_pipelines import save_tiny_text2image

    out = {}
    for seed, name in enumerate(STANDIN_MODELS):
        folder = root / name
        if not (folder / "model_index.json").is_file():
            save_tiny_text2image(folder, seed=seed)
        out[name] = str(folder)
    return out


def _standin_scorers(root: Path) -> Path:
    from .evaluators.engine.tiny_scorers import TINY_CONFIG, save_tiny_scorers

    config = root / TINY_CONFIG
    if not config.is_file():
        save_tiny_scorers(root)
    return config


def demo(out: str | Path = "cultureboard-demo", *, scorers: str = "tiny", pipelines: dict[str, str] | None = None,
         countries: list[str] | None = None, echo: Callable[[str], None] = print) -> dict:
    """Run every step into ``out``; returns the paths of what it wrote."""
    from diffusers.utils import logging as diffusers_logging
    from transformers.utils import logging as transformers_logging

    from .builder import build
    from .builder.references import synthetic_references
    from .evaluators.engine.evaluate import evaluate
    from .evaluators.submission.generate import generate
    from .evaluators.submission.validate import validate
    from .site.render import build_site

    diffusers_logging.set_verbosity_error()
    transformers_logging.set_verbosity_error()
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise CultureboardError(out, "is a file", "choose a folder for --out")
    claim_folder(out, kind="demo")
    standins = cache_root() / "standins"
    dataset, submissions, results, site = (out / name for name in ("dataset", "submissions", "results", "site"))

    echo(f"[1/5] build: the dataset from the shipped sample dump -> {dataset}")
    build(dataset, countries=countries or DEMO_COUNTRIES,
          cultivate_activities=str(resources.files("cultureboard.builder").joinpath(CULTIVATE_ACTIVITIES)),
          cure_images=CURE_IMAGES)

    synthetic_references(dataset)
    echo("      references: synthetic images stand in for reference photographs (`cultureboard references` fetches "
         "real ones from Wikimedia Commons)")

    models = pipelines or _standin_pipelines(standins / "generators")
    scorer_config = None if scorers == "default" else (_standin_scorers(standins / "scorers") if scorers == "tiny" else scorers)
    written, options = [], {}
    for name, pipeline in models.items():
        for prompt_set in STANDIN_MODELS.get(name, ("cube-awareness", "cube-diversity")):
            folder = submissions / f"demo__{name}__{prompt_set}"
            echo(f"[2/5] generate: {prompt_set} with {name} -> {folder}")
            generate(dataset, prompt_set, pipeline, folder, organization="demo", model_name=name, tag=prompt_set,
                     contact="cultureboard demo", steps=2, batch_size=16, progress=False)
            written.append(folder)
            options[folder] = STANDIN_OPTIONS.get(prompt_set) if scorers == "tiny" else None

    for folder in written:
        report = validate(folder, dataset)
        echo(f"[3/5] validate: {folder.name}: {'valid' if report.valid else 'INVALID'} "
             f"({len(report.errors)} errors, {len(report.warnings)} warnings)")
        if not report.valid:
            raise CultureboardError(folder, "was generated but does not validate", report.to_text().splitlines()[0])

    for folder in written:
        echo(f"[4/5] evaluate: {folder.name} -> {results / folder.name}")
        evaluate(folder, dataset, results, scorers=scorer_config, cache=cache_root() / "embeddings",
                 options=options[folder])

    echo(f"[5/5] site: {site}")
    build_site(results, dataset, submissions, site)
    note = ("These demo scores come from random-weight stand-in models (tiny diffusers and scorer models built "
            "locally): they exercise every step but measure nothing.") if scorers == "tiny" else (
            "Scores come from the scorer checkpoints named in " + ("the registry." if scorers == "default" else scorers))
    echo(f"\nOpen the leaderboard: {(site / 'index.html').resolve()}\n{note}")
    return {"dataset": dataset, "submissions": written, "results": results, "site": site}
