"""``cultureboard demo``: the whole pipeline, offline, on the embedded defaults.

build the dataset from the shipped sample dump, with a held-out split (drawn with the demo's public key; its
private dataset in ``dataset-held-out/`` beside the public one) -> generate one submission per prompt set of every
family with tiny local stand-in generators, the reference-photos controls of cure-ladder and cultdiff, the text-only
controls, the two cheats copied from the stand-ins' images (category-images of cure-ladder, unedited of ecb) and the
written-prompt cheat of cube-awareness -> validate them, and show validation refusing the copied-references control
(cultdiff's photographs handed in as generations) -> evaluate them with tiny stand-in scorers, read every image's
text with the OCR's real weights (when the ``ocr`` extra is installed), and score one stand-in on the held-out
prompts (``results-held-out/``) -> write synthetic ratings in the layout of each study they can stand in for and
import them (:mod:`cultureboard.demo_ratings`: noisy functions of the automatic scores, labelled synthetic;
``ratings/``) -> render the site (with the held-out column, the gap and held-out.html, and the trust view of those
ratings).

The stand-ins are the real library classes (diffusers, transformers, open_clip) with random weights, saved
and loaded through the real loading code (:mod:`cultureboard.standins`): their scores measure nothing. They
are made once under ``$CULTUREBOARD_CACHE/standins`` (default ``~/.cache/cultureboard``). The demo's
dataset and the submissions the stand-ins generate (their held-out images too) are kept in
``$CULTUREBOARD_CACHE/demo``, each keyed by
the sha256 of everything that makes it (options, input files, the dataset's revision, the pipeline's
files, settings, device, the code and library versions), and the embeddings in the engine's cache: a rerun,
also into a new folder, builds and generates nothing and loads no model, and gives the same bytes.
``scorers="default"`` uses the registry's real checkpoints and ``pipelines`` real diffusers pipelines: the
same steps on a machine with network access and a GPU (real pipelines are not cached here; ``generate``
resumes an interrupted run by itself).

The output folder holds ``dataset/``, ``dataset-held-out/``, ``submissions/``, ``results/``, ``results-held-out/``,
``ratings/`` and ``site/``, so any single step
can be rerun by hand on it. ``benchmarks/demo_speed.py`` times a first run and a rerun.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import shutil
import sys
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from .atomic import atomic_write_text, claim_folder
from .errors import CultureboardError
from .standins import DEFAULT, TINY, cache_root, code_fingerprint, fingerprint, make_once, standins_root

#: A small slice of the sample dump: one Global North and two Global South countries on three continents
#: (27 artifacts); Spain and Mexico are CultDiff countries, so the cultdiff set has prompts.
DEMO_COUNTRIES = ["ES", "MX", "NG"]
#: The stand-in models (their weights' seeds: their order), and the prompt sets each generates: one submission of
#: every family's prompt set; cube-awareness and cultdiff (the two smallest sets: 27 and 10 images) by all three, so
#: that the leaderboards rank several models and agreement.html has the shared models a Kendall tau needs; and the
#: native-language variants (language parity, README "Native-language variants") of each by two.
STANDIN_MODELS = {"tiny-a": ("cube-awareness", "cube-diversity", "cultivate", "ecb", "cultdiff", "cube-awareness-native"),
                  "tiny-b": ("cube-awareness", "cultdiff", "cure-ladder", "cube-awareness-native", "cultdiff-native"),
                  "tiny-c": ("cube-awareness", "cultdiff", "cultdiff-native")}
#: The prompt sets that get a reference-photos control (their families compare images with the artifacts'
#: photographs): made from the dataset's synthetic references on every run (a few ms), scored and shown on the
#: site as control rows, never ranked.
CONTROL_SETS = ("cure-ladder", "cultdiff", "cultivate")
#: The cheats made from a stand-in's submission of a prompt set (prompt set -> control kind): CuRe's ladders answered
#: with their category's images, ECB's edits returning their input. Scored and shown like the reference-photos
#: controls; the site says where each lands among the models, and badges a metric a cheat tops "gameable".
CHEAT_SETS = {"cure-ladder": "category-images", "ecb": "unedited"}
#: The prompt sets whose scorers read text (CUBE's SigLIP, CuRe's image-text attribution, CULTIVate's VLM judge):
#: each gets the text-only control (the prompt's words drawn as the image), a cheat that a metric rewarding text
#: in the image would rank; a metric it tops is not ranked on that board.
TEXT_ONLY_SETS = ("cube-awareness", "cure-ladder", "cultivate")
#: The prompt set whose reference photographs the demo hands in as generations (copied-references): validation
#: must refuse every image as a copy of a reference photograph; the folder stays in submissions/, shown refused on
#: the site's submissions page, and is never scored.
COPIED_SET = "cultdiff"
#: The prompt sets that get a written-prompt control (the artifact's name in large type, at :data:`WRITTEN_SIZE` px
#: so the OCR can read it): read by the real OCR (RapidOCR's PP-OCRv4 weights), scored and shown like the cheats.
WRITTEN_SETS = ("cube-awareness",)
WRITTEN_SIZE = 256
#: The prompt sets a real pipeline given with ``--pipeline`` generates.
PIPELINE_SETS = ("cube-awareness", "cube-diversity")
#: Build options that keep every prompt set small (the full sets hold thousands of images).
BUILD_OPTIONS = {
    # 1 image per cube-awareness prompt, 2 per cube-diversity prompt: its pools of 5 rephrasings x 2 images
    # still fill CUBE's groups of 8
    "cube_images": [1, 2],
    # cure-ladder with 1 image per artifact prompt and 2 per category prompt (CuRe: 4 and 80); cure.div_delta
    # needs two images of P(n), so the demo shows it flagged
    "cure_images": [1, 2],
    # 6 main-dish chains of 2 edits and 2 attribute-addition chains (24 images); without an LLM the culture
    # questions are ECB's template ones (the dataset records the 100% fallback)
    "ecb_subset": {"countries": ["KR", "NG"], "subcategories": ["main_dish"], "steps": 2},
    "max_question_fallback": 1.0,
}
#: Packaged data files of the build options: the cultivate set from a small activity catalogue (6 prompts of
#: the 576, covered by the seed reference descriptors), and ECB's knowledge corpus (two short CC0 notes).
BUILD_FILES = {"cultivate_activities": "data/cultivate_demo_activities.yaml", "knowledge": "data/ecb_demo_knowledge"}
#: Generation settings of the stand-ins: 64 px images (the smallest the validator accepts, the stand-ins'
#: size), 2 denoising steps (an edit step at strength 0.6 needs at least 2), large batches.
STANDIN_GENERATION = {"steps": 2, "batch_size": 64}
#: The demo's held-out split: its share of each stratum, and its key. The key is public (a demo hides nothing): a
#: real split's key is the custodians' secret (builder/held_out.py).
HELD_OUT = {"held_out": 0.2, "held_out_key": b"cultureboard-demo-held-out-key (public)"}
#: The stand-in submission the demo scores on the held-out prompts.
HELD_OUT_SUBMISSION = ("tiny-a", "cube-awareness")
#: Family options with the stand-in scorers. Their judge's answers are random (always valid JSON: decoding is
#: constrained to the schema): cube maps images by retrieval (faster, and no less meaningful here), and cultivate
#: asks for short answers once (a real judge gets the defaults: 512 tokens, 2 retries).
STANDIN_OPTIONS = {"cube-diversity": {"mapping": "retrieval"}, "cultivate": {"max_new_tokens": 16, "retries": 0}}
#: Release dates the stand-ins declare (they were never released: the dates are illustrative), so that the boards'
#: date filter has values to act on; their sizes are their real parameter counts (:func:`parameter_count`).
STANDIN_RELEASES = {"tiny-a": "2024-03-01", "tiny-b": "2024-09-15", "tiny-c": "2025-04-30"}
STEPS = 5


def demo(out: str | Path = "cultureboard-demo", *, scorers: str = TINY, pipelines: dict[str, str] | None = None,
         countries: list[str] | None = None, echo: Callable[[str], None] = print, bars: bool = False) -> dict:
    """Run every step into ``out``; ``echo`` gets a line per step (the first before anything heavy is
    imported), ``bars`` shows a progress bar over each generation's images. Returns what it wrote and how long
    each step took: ``{"out", "dataset", "submissions", "results", "held_out", "ratings", "site", "cached",
    "seconds": {step: s}}`` (``ratings``: the synthetic ratings folders, :mod:`cultureboard.demo_ratings`)."""
    started = time.perf_counter()
    out = Path(out)
    standin = pipelines is None
    echo(f"cultureboard demo -> {out}: build, generate, validate, evaluate, site"
         + (" with tiny random stand-in models" if standin else ""))
    if out.exists() and not out.is_dir():
        raise CultureboardError(out, "is a file", "choose a folder for --out")
    claim_folder(out, kind="demo")
    _quiet_libraries()
    import torch

    threads = torch.get_num_threads()
    if standin and scorers == TINY:
        # the stand-ins' tensors are tiny: threads cost more than they save (2-3x on a busy 2-core machine)
        torch.set_num_threads(1)
    try:
        return _run(out, scorers, pipelines, countries or DEMO_COUNTRIES, echo, bars, started)
    finally:
        torch.set_num_threads(threads)


def _run(out: Path, scorers: str, pipelines: dict[str, str] | None, countries: list[str],
         echo: Callable[[str], None], bars: bool, started: float) -> dict:
    from .builder.held_out import private_folder
    from .demo_ratings import SEED as RATINGS_SEED
    from .demo_ratings import write_synthetic_ratings
    from .evaluators.engine.evaluate import evaluate
    from .evaluators.results.held_out import evaluate_held_out
    from .evaluators.submission.validate import validate
    from .site.render import build_site
    from .standins import resolve_scorers

    dataset, submissions, results, site = (out / name for name in ("dataset", "submissions", "results", "site"))
    seconds: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(step: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        seconds[step] = round(now - clock, 2)
        clock = now

    seconds["start"] = round(clock - started, 2)
    echo(f"[1/{STEPS}] build: the dataset of {', '.join(countries)} from the shipped sample dump -> {dataset}")
    hit = _build(dataset, countries)
    echo(("      reused from the cache (built from the same inputs); " if hit else "      ")
         + "synthetic images stand in for reference photographs (`cultureboard fetch-references` fetches real ones "
         "from Wikimedia Commons)")
    cached = ["dataset"] if hit else []
    lap("build")

    standin = pipelines is None
    jobs = [(name, ps) for name in (STANDIN_MODELS if standin else pipelines)
            for ps in (STANDIN_MODELS[name] if standin else PIPELINE_SETS)]
    echo(f"[2/{STEPS}] generate: {len(jobs)} submissions with "
         + (f"{len(STANDIN_MODELS)} stand-in models (made once in {standins_root()})" if standin
            else ", ".join(pipelines)) + f", and controls: {len(CONTROL_SETS)} reference-photos, {len(TEXT_ONLY_SETS)} text-only and the cheats "
         + ", ".join([*CHEAT_SETS.values(), "written-prompt"]))
    models = _standin_pipelines() if standin else pipelines
    written = []
    for k, (name, prompt_set) in enumerate(jobs, start=1):
        folder = submissions / f"demo__{name}__{prompt_set}"
        hit = _generate(dataset, prompt_set, name, models[name], folder, standin, bars)
        if standin:
            _declare(folder, STANDIN_RELEASES[name], parameter_count(models[name]))
        echo(f"      {k}/{len(jobs)} {folder.name}: " + ("reused from the cache" if hit else "generated"))
        written.append(folder)
        if hit:
            cached.append(folder.name)
    written += _controls(dataset, submissions, written, echo)
    lap("generate")

    for folder in written:
        report = validate(folder, dataset)
        if not report.valid:
            raise CultureboardError(folder, "was generated but does not validate", report.to_text().splitlines()[0])
    echo(f"[3/{STEPS}] validate: {len(written)} submissions valid")
    _refused_copies(dataset, submissions, echo)
    lap("validate")

    echo(f"[4/{STEPS}] evaluate: {'tiny stand-in scorers' if scorers == TINY else scorers} -> {results}")
    scorer_config = resolve_scorers(scorers)
    for k, folder in enumerate(written, start=1):
        echo(f"      {k}/{len(written)} {folder.name}")
        prompt_set = folder.name.split("__")[-1]
        evaluate(folder, dataset, results, scorers=scorer_config, cache=cache_root() / "embeddings",
                 options=STANDIN_OPTIONS.get(prompt_set) if scorers == TINY else None)
    for line in _written_lines(results, written):
        echo(line)
    held_out = out / "results-held-out"
    name, prompt_set = HELD_OUT_SUBMISSION if standin else (next(iter(pipelines)), HELD_OUT_SUBMISSION[1])
    folder = submissions / f"demo__{name}__{prompt_set}"
    if folder in written:
        echo(f"      held-out: {folder.name} on the private prompts of {dataset.name}-held-out -> {held_out}")
        local = Path(models[name]).is_dir()
        reused = []

        def generator(*args, **settings) -> None:  # a stand-in's held-out images: from the cache when made before
            reused.append(_cached_generate(*args, **settings))

        evaluate_held_out(folder, dataset, private_folder(dataset), results, held_out,
                          pipeline=models[name] if local else None, scorers=scorer_config,
                          cache=cache_root() / "embeddings", generator=generator if standin else None)
        if any(reused):
            echo("      held-out images reused from the cache (generated from the same inputs)")
            cached.append("held-out")
    lap("evaluate")

    ratings = out / "ratings"
    rated = {prompt_set: folder.name for folder in reversed(written)
             if folder.name.startswith("demo__") and (prompt_set := folder.name.split("__")[-1])}
    folders = write_synthetic_ratings(dataset, submissions, results, ratings, rated) if standin else []
    if folders:
        echo(f"      synthetic ratings (noisy functions of the automatic scores, seed {RATINGS_SEED}; not human "
             f"judgements) of {', '.join(f.name for f in folders)} -> {ratings}")
    lap("ratings")

    echo(f"[5/{STEPS}] site: {site}")
    build_site(results, dataset, submissions, site, held_out=held_out, ratings=folders)
    lap("site")

    total = round(time.perf_counter() - started, 2)
    note = ("These demo scores come from random-weight stand-in models (tiny diffusers and scorer models built "
            "locally): they exercise every step but measure nothing.") if scorers == TINY else (
            "Scores come from the scorer checkpoints named in " + ("the registry." if scorers == DEFAULT else scorers))
    echo(f"\nDone in {total:.0f} s (" + ", ".join(f"{step} {s:.0f} s" for step, s in seconds.items()) + ")."
         f"\nOpen the leaderboard: {(site / 'index.html').resolve()}\n{note}")
    return {"out": str(out), "dataset": str(dataset), "submissions": [str(f) for f in written],
            "results": str(results), "held_out": str(held_out), "ratings": [str(f) for f in folders], "site": str(site), "cached": cached, "seconds": {**seconds, "total": total}}


def _quiet_libraries() -> None:
    """No progress bars or advice from transformers, diffusers and the Hub client: the demo prints its own
    lines. Libraries not imported yet read it from the environment (so that a rerun never pays for importing
    one it does not use); diffusers' loading bar is switched off where it is imported (:func:`_generate`)."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("DIFFUSERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    for library in ("transformers", "diffusers"):
        if library in sys.modules:
            logging = importlib.import_module(f"{library}.utils.logging")
            logging.set_verbosity_error()
            logging.disable_progress_bar()


def _build(dataset: Path, countries: list[str]) -> bool:
    """Build the dataset folder with synthetic reference images; a copy from the cache when one was built from
    the same inputs (True), else built and stored there."""
    from .builder import build
    from .builder.build import sample_dump_path
    from .builder.held_out import private_folder
    from .builder.references import synthetic_references
    from .provenance import code_provenance, folder_sha256

    packaged = resources.files("cultureboard.builder")
    files = {key: str(packaged.joinpath(path)) for key, path in BUILD_FILES.items()}
    key = fingerprint({
        "countries": countries, "options": BUILD_OPTIONS, "held_out": HELD_OUT,
        "files": {key: folder_sha256(path) for key, path in {**files, "dump": sample_dump_path()}.items()},
        "code": code_provenance(("pyarrow", "msgspec", "numpy", "pyyaml", "transformers", "sentence-transformers")),
        "builder": code_fingerprint(("cultureboard.builder", "cultureboard.countries", "cultureboard.records",
                                     "cultureboard.dataset_folder", "cultureboard.atomic"), ()),
        "countries_table": folder_sha256(str(resources.files("cultureboard").joinpath("data/countries.csv"))),
    })
    entry = cache_root() / "demo" / "datasets" / key
    private = private_folder(dataset)
    if entry.is_dir():
        _copy_into(entry / "dataset", dataset)
        _copy_into(entry / private.name, private)
        return True
    build(dataset, countries=countries, **BUILD_OPTIONS, **HELD_OUT, **files)
    synthetic_references(dataset)
    synthetic_references(private)

    def store(tmp: Path) -> None:
        shutil.copytree(dataset, tmp / "dataset")
        shutil.copytree(private, tmp / private.name)

    make_once(entry, store)
    return False


def _controls(dataset: Path, submissions: Path, generated: list[Path], echo: Callable[[str], None]) -> list[Path]:
    """The reference-photos control of each of :data:`CONTROL_SETS` and the text-only control of each of
    :data:`TEXT_ONLY_SETS` (64 px, as the stand-ins' images), and the cheat
    of :data:`CHEAT_SETS` for each prompt set a ``generated`` submission (its source) answers, in
    ``submissions/control__<kind>__<prompt set>``, replacing an earlier run's (a finished submission folder has no
    output marker, so :func:`make_control` would refuse to overwrite it)."""
    from .evaluators.submission.controls import REFERENCE_PHOTOS, TEXT_ONLY, WRITTEN_PROMPT, make_control

    sources = {folder.name.split("__")[-1]: folder for folder in reversed(generated)}  # the first of a prompt set
    made = [(REFERENCE_PHOTOS, prompt_set, None) for prompt_set in CONTROL_SETS]
    made += [(TEXT_ONLY, prompt_set, None) for prompt_set in TEXT_ONLY_SETS]
    made += [(kind, prompt_set, sources[prompt_set]) for prompt_set, kind in CHEAT_SETS.items()
             if prompt_set in sources]
    made += [(WRITTEN_PROMPT, prompt_set, None) for prompt_set in WRITTEN_SETS]
    folders = []
    for kind, prompt_set, source in made:
        folder = submissions / f"control__{kind}__{prompt_set}"
        shutil.rmtree(folder, ignore_errors=True)
        if kind == WRITTEN_PROMPT:
            result = make_control(kind, dataset, prompt_set, folder, size=WRITTEN_SIZE)
            what = f"{result['images']} written names"
        elif source is None:
            result = make_control(kind, dataset, prompt_set, folder, size=64)
            what = f"{result['images']} " + ("photographs" if kind == REFERENCE_PHOTOS else "images of the prompt's text")
        else:
            result = make_control(kind, dataset, prompt_set, folder, source=source)
            what = f"{result['images']} images copied from {source.name}"
        echo(f"      control {folder.name}: {what}, {result['refused']} declared refusals")
        folders.append(folder)
    return folders


def _refused_copies(dataset: Path, submissions: Path, echo: Callable[[str], None]) -> Path:
    """Make ``control__copied-references__<COPIED_SET>`` (replacing an earlier run's) and check that validation
    refuses each of its images as a copy of a reference photograph (else the demo stops: the copy check is broken)."""
    from .evaluators.submission.controls import COPIED_REFERENCES, make_control
    from .evaluators.submission.validate import validate

    folder = submissions / f"control__{COPIED_REFERENCES}__{COPIED_SET}"
    shutil.rmtree(folder, ignore_errors=True)
    made = make_control(COPIED_REFERENCES, dataset, COPIED_SET, folder, size=64)
    report = validate(folder, dataset)
    copies = sum(p.code == "image.copies_reference" for p in report.errors)
    if copies != made["images"] or not copies:
        raise CultureboardError(folder, f"holds {made['images']} copies of reference photographs, but validation "
                                f"found {copies}", "the copy check (evaluators/submission/rules/copies.py) is broken")
    echo(f"      {folder.name}: refused, as it must be: {copies} of {made['images']} images are copies of reference "
         "photographs (image.copies_reference); not scored")
    return folder


def _written_lines(results: Path, folders: list[Path]) -> list[str]:
    """What the OCR (real weights, unlike the stand-ins) found: per submission, the images that spell their prompt
    among those it could check; the first number of the demo that measures something."""
    lines = []
    for folder in folders:
        block = json.loads((results / folder.name / "summary.json").read_text(encoding="utf-8"))["written"]
        if block["ocr"] is None:
            return ["      written answers not checked: OCR is not installed (pip install 'cultureboard[ocr]')"]
        if block["checked"]:
            lines.append(f"      {folder.name}: {block['counts']['spells']} of {block['checked']} images spell "
                         "their prompt")
    ocr = block["ocr"]
    return [f"      OCR ({ocr['package']} {ocr['version']}, PP-OCRv4 with its real weights: the first number in this "
            "demo that measures something):", *lines]
def parameter_count(pipeline: str | Path) -> int:
    """The number of weights in a pipeline folder: the sum over its ``*.safetensors`` files of each tensor's element
    count, read from the files' headers (an 8-byte little-endian length, then JSON {name: {"shape": [...]}})."""
    total = 0
    for file in sorted(Path(pipeline).rglob("*.safetensors")):
        with open(file, "rb") as fh:
            header = json.loads(fh.read(int.from_bytes(fh.read(8), "little")))
        total += sum(math.prod(t["shape"]) for name, t in header.items() if name != "__metadata__")
    return total


def _declare(folder: Path, release_date: str, parameters: int) -> None:
    """Add ``model.release_date`` and ``model.parameters`` to a stand-in submission's submission.yaml."""
    import yaml

    from .evaluators.submission.format import SUBMISSION_YAML, read_spec

    spec = read_spec(folder / SUBMISSION_YAML)
    spec["model"].update(release_date=release_date, parameters=parameters)
    atomic_write_text(folder / SUBMISSION_YAML, yaml.safe_dump(spec, sort_keys=False, allow_unicode=True))


def _copy_into(source: Path, target: Path) -> None:
    """Replace ``target`` (a folder of the claimed demo folder) with a copy of ``source``."""
    tmp = target.parent / f".{target.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(source, tmp)
    if target.exists():
        shutil.rmtree(target)
    os.rename(tmp, target)


def _standin_pipelines() -> dict[str, str]:
    from .standins import standin_pipeline

    return {name: str(standin_pipeline(name, seed)) for seed, name in enumerate(STANDIN_MODELS)}


def _generate(dataset: Path, prompt_set: str, name: str, pipeline: str, folder: Path, standin: bool,
              bars: bool) -> bool:
    """Generate ``folder``; a stand-in's submission is taken from the cache when one was made from the same
    inputs (True, :func:`_cached_generate`)."""
    settings = {"organization": "demo", "model_name": name, "tag": prompt_set, "contact": "cultureboard demo"}
    if standin:
        return _cached_generate(dataset, prompt_set, pipeline, folder, progress=bars, **settings, **STANDIN_GENERATION)
    _generate_now(dataset, prompt_set, pipeline, folder, progress=bars, **settings)
    return False


def _cached_generate(dataset: Path, prompt_set: str, pipeline: str, folder: Path, *, progress: bool = False,
                     **settings) -> bool:
    """``generate(dataset, prompt_set, pipeline, folder, **settings)`` of a stand-in pipeline: a copy from
    ``$CULTUREBOARD_CACHE/demo/submissions`` when one was made from the same inputs (:func:`_generation_key`; True),
    else generated and stored there (False). The public submissions and the held-out images both come here."""
    entry = cache_root() / "demo" / "submissions" / _generation_key(dataset, prompt_set, pipeline, settings)
    if entry.is_dir():
        _copy_into(entry / folder.name, folder)
        return True
    _generate_now(dataset, prompt_set, pipeline, folder, progress=progress, **settings)
    make_once(entry, lambda tmp: shutil.copytree(folder, tmp / folder.name))
    return False


def _generate_now(dataset: Path, prompt_set: str, pipeline: str, folder: Path, **settings) -> None:
    from diffusers.utils import logging

    from .evaluators.submission.generate import generate

    logging.disable_progress_bar()  # "Loading pipeline components": the demo prints a line per submission
    generate(dataset, prompt_set, pipeline, folder, **settings)


def _generation_key(dataset: Path, prompt_set: str, pipeline: str, settings: dict) -> str:
    """sha256 of everything that makes a stand-in submission: the dataset's revision (its prompt sets), the
    prompt set, the pipeline's files, the settings, the device and thread count, the code that generates (its
    files, the git commit) and the library versions."""
    import torch

    from .dataset_folder import local_revision
    from .device import choose_device
    from .provenance import code_provenance, folder_sha256

    return fingerprint({
        "dataset": local_revision(dataset), "prompt_set": prompt_set, "pipeline": folder_sha256(pipeline),
        "settings": settings, "device": choose_device(None), "threads": torch.get_num_threads(),
        "code": code_provenance(("diffusers", "transformers", "torch")),
        "generate": code_fingerprint(("cultureboard.evaluators.submission",), ()),
    })
