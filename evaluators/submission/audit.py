"""``cultureboard audit-generation``: check that an open pipeline's images come from the declared seeds and settings.

A team could generate many seeds and keep the best. For a submission of open weights (``model.weights: open``,
``model.id`` a Hub id and ``model.revision`` its commit) the audit regenerates a random sample of its text-to-image
images, seeded by the pull request's number (:func:`sample`: 2% of them and at least :data:`MIN_SAMPLE`, every one
when fewer), with the declared pipeline at that revision, the prompt set's seeds, and the declared scheduler, steps,
guidance scale and precision, through the generator's own code (:mod:`.generate`), one image per call. Each
regenerated image is compared with the submitted one by LPIPS (``lpips-alex``, the pairwise scorer the families
use; a stand-in with ``--scorers``): an image whose distance is above the tolerance (:data:`TOLERANCE`) was not made
by the declared settings.

The tolerance: GPU kernels are not bit-exact, so a regenerated image differs a little from the team's. It is the
largest LPIPS distance between two generations of the same seed and settings measured on repeated runs (batch size
1 against 4, which changes how kernels round), with a margin; images of another seed are far above it. A local
pipeline folder (``--pipeline DIR``, or a submission whose revision is ``local:<sha256>``) must hash to the
declared revision. Closed APIs, controls and edit steps (whose input is another submitted image) are not
regenerated: a closed model's images are "self-reported".

Verdicts: ``generation verified`` (every sampled image within tolerance), ``not verified`` (the images beyond it
are named; the evaluate workflow then stops and publishes nothing), ``self-reported``.
"""

from __future__ import annotations

import hashlib
import io
import math
import random
from pathlib import Path

from cultureboard.dataset_folder import read_prompt_set
from cultureboard.errors import CultureboardError
from cultureboard.provenance import folder_sha256

from .format import METADATA, SUBMISSION_YAML, get, read_metadata, read_spec

VERIFIED, NOT_VERIFIED, SELF_REPORTED = "generation verified", "not verified", "self-reported"
#: The share of images regenerated, and the fewest.
SHARE, MIN_SAMPLE = 0.02, 8
#: The pairwise scorer the images are compared with.
DISTANCE = "lpips-alex"
#: Largest LPIPS distance accepted between a submitted and a regenerated image (module doc). Measured here on the
#: tiny stand-in pipeline and the stand-in LPIPS on the CPU (tests/test_audit.py prints the distances): the same
#: seed regenerated at batch size 1 against 4 gives 0.0 on every image, another seed 0.74. Real pipelines on a GPU
#: were not measured here (no weights offline): the runner measures its own repeated runs and passes --tolerance.
TOLERANCE = 0.01


def sample(lines: list[dict], pr: int) -> list[dict]:
    """The images regenerated: ``max(MIN_SAMPLE, ceil(SHARE x n))`` of the ``n`` text-to-image lines (all when
    fewer), drawn by ``random.Random(pr)`` from the lines in (prompt id, sample) order, returned in that order."""
    ordered = sorted(lines, key=lambda m: (m["prompt_id"], m["sample_idx"]))
    n = min(len(ordered), max(MIN_SAMPLE, math.ceil(SHARE * len(ordered))))
    chosen = set(random.Random(pr).sample(range(len(ordered)), n))
    return [m for i, m in enumerate(ordered) if i in chosen]


def audit_generation(submission: str | Path, dataset: str | Path, pr: int, *, pipeline: str | None = None,
                     scorers=None, device: str | None = None, tolerance: float = TOLERANCE,
                     cache: str | Path | None = None) -> dict:
    """Audit ``submission`` (module doc); returns ``{"verdict", "checked", "beyond": [file names], "distances":
    {file name: distance}, "tolerance", "pipeline", "sample_seed"}``. ``pipeline``: a local copy of the declared
    pipeline (its files must hash to ``model.revision`` when that is ``local:``), else ``model.id@model.revision``
    from the Hub (cache)."""
    submission, dataset = Path(submission), Path(dataset)
    spec = read_spec(submission / SUBMISSION_YAML)
    if get(spec, "model.weights") != "open" or spec.get("control") or get(spec, "generation.pipeline") == "control":
        return {"verdict": SELF_REPORTED, "checked": 0, "beyond": [], "distances": {}, "tolerance": tolerance,
                "pipeline": None, "sample_seed": pr}
    revision = str(get(spec, "model.revision"))
    source = pipeline or f"{get(spec, 'model.id')}@{revision}"
    if revision.startswith("local:"):
        if pipeline is None or not Path(pipeline).is_dir():
            raise CultureboardError(submission / SUBMISSION_YAML, f"declares a local pipeline ({revision}) that only "
                                    "its folder can regenerate", "pass --pipeline DIR, the folder it was generated with")
        if "local:" + folder_sha256(pipeline) != revision:
            raise CultureboardError(pipeline, f"is not the pipeline the submission declares ({revision})",
                                    "pass the folder the images were generated with, unchanged")
    prompts = {r["prompt_id"]: r for r in read_prompt_set(dataset, get(spec, "prompt_set.name"))}
    lines = [m for m in read_metadata(submission / METADATA)
             if m.get("refused") is not True and prompts[m["prompt_id"]].get("kind") != "i2i"]
    chosen = sample(lines, pr)
    pipe = _pipeline(source, spec, device)
    made = {m["file_name"]: _regenerate(pipe, spec, prompts[m["prompt_id"]], m["sample_idx"]) for m in chosen}
    distances = _distances(submission, chosen, made, scorers, device, cache)
    beyond = sorted(name for name, d in distances.items() if d > tolerance)
    return {"verdict": NOT_VERIFIED if beyond else VERIFIED, "checked": len(chosen), "beyond": beyond,
            "distances": distances, "tolerance": tolerance, "pipeline": source, "sample_seed": pr}


def _pipeline(source: str, spec: dict, device: str | None):
    """The declared pipeline, loaded as :func:`.generate.generate` loads it, in the declared precision, with the
    declared scheduler class (from the pipeline's own scheduler config)."""
    import diffusers
    import torch

    from cultureboard.device import choose_device

    from .generate import _load, _resolve

    precision = get(spec, "generation.precision") or "fp32"
    dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}.get(precision)
    if dtype is None:
        raise CultureboardError(SUBMISSION_YAML, f"declares precision {precision!r}, which the audit cannot reproduce",
                                "declare fp32, fp16 or bf16")
    diffusers.utils.logging.set_verbosity_error()
    diffusers.utils.logging.disable_progress_bar()  # the audit prints its verdict, or one line of error
    _, _, folder = _resolve(source)
    pipe = _load(folder, source, dtype, choose_device(device))
    wanted = get(spec, "generation.scheduler")
    if wanted and type(pipe.scheduler).__name__ != wanted:
        scheduler = getattr(diffusers, wanted, None)
        if scheduler is None:
            raise CultureboardError(SUBMISSION_YAML, f"declares scheduler {wanted!r}, which diffusers does not have",
                                    "declare the scheduler class the images were generated with")
        pipe.scheduler = scheduler.from_config(pipe.scheduler.config)
    return pipe


def _regenerate(pipe, spec: dict, prompt: dict, k: int) -> bytes:
    """Image ``k`` of ``prompt`` with the declared steps, guidance and negative prompt, as PNG bytes."""
    from .generate import _run

    image = _run(pipe, [(prompt, k)], Path("."), bool(get(spec, "generation.negative_prompt")),
                 get(spec, "generation.steps"), get(spec, "generation.guidance_scale"), 0.6)[0]
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _distances(submission: Path, chosen: list[dict], made: dict[str, bytes], scorers, device, cache) -> dict:
    import tempfile

    from cultureboard.device import choose_device, choose_dtype

    from ..engine.cache import Cache
    from ..engine.images import ImageSource
    from ..engine.pairwise import compare_pairs
    from ..engine.scorers import Scorers

    device = choose_device(device)
    with tempfile.TemporaryDirectory() as tmp:
        pool = Scorers(scorers, device, choose_dtype(device, None), state=Path(tmp) / "state")
        pairs = [(ImageSource(m["sha256"], path=submission / m["file_name"], label=m["file_name"]),
                  ImageSource(hashlib.sha256(made[m["file_name"]]).hexdigest(), data=made[m["file_name"]],
                              label=f"regenerated {m['file_name']}")) for m in chosen]
        values = compare_pairs(Cache(cache or Path(tmp) / "cache"), pool.identity(DISTANCE),
                               lambda: pool.model(DISTANCE), pairs)
    return {m["file_name"]: round(float(v), 6) for m, v in zip(chosen, values)}
