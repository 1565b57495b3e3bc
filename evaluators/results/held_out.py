"""``cultureboard evaluate-held-out``: score a submission's open pipeline on the private held-out prompts, and
publish only aggregates.

For a submission whose pipeline is open (a Hub id at a revision), the custodians generate the held-out prompts of
its prompt set with the settings it declares (steps, guidance scale, precision, edit strength: ``cultureboard
generate``), score them with the same scorers, metric versions and options as its public results, and write one
record per submission: per metric of the overall slice, the public value, the held-out value and the gap, each
with its 95% CI. The images, the per-image scores and the prompts are made in a temporary folder that is removed
before the command returns: nothing but the record leaves the machine.

The gap is ``public - held_out``; its CI combines the two independent intervals by the MOVER method (Zou and
Donner 2008): ``low = gap - sqrt((pub - pub_low)^2 + (held_high - held)^2)``, ``high = gap + sqrt((pub_high -
pub)^2 + (held - held_low)^2)``. ``advantage`` is the gap signed so that a positive one means the public prompts
score better (``gap`` where higher is better, ``-gap`` where lower is; none for ``target`` and descriptive cards).
A model is badged "tuned to public prompts" on a metric only where the advantage's CI lower end is above the
card's threshold (:func:`tuned_threshold`).

Closed APIs are not held-out tested (the maintainers make no API calls for a team); the record says so.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Callable

from cultureboard.atomic import atomic_write_text
from cultureboard.errors import CultureboardError

NOT_TESTED = "not held-out tested"
RECORD_VERSION = 1


def tuned_threshold(metric_info: dict, public: dict) -> float:
    """The least advantage a "tuned to public prompts" badge needs: the card's smallest meaningful difference
    (``metric_info["smallest_difference"]``, issue 33) where the card has one; otherwise (fallback) the
    half-width of the public value's own 95% CI, since a gap smaller than the public value's uncertainty means
    nothing."""
    smallest = metric_info.get("smallest_difference")
    if smallest is not None:
        return float(smallest)
    return (public["ci_high"] - public["ci_low"]) / 2


def gap(public: dict, held: dict) -> dict:
    """``public - held`` with its MOVER 95% CI (None where either side has no interval)."""
    value = public["value"] - held["value"]
    if None in (public.get("ci_low"), public.get("ci_high"), held.get("ci_low"), held.get("ci_high")):
        return {"value": value, "ci_low": None, "ci_high": None}
    return {"value": value,
            "ci_low": value - math.hypot(public["value"] - public["ci_low"], held["ci_high"] - held["value"]),
            "ci_high": value + math.hypot(public["ci_high"] - public["value"], held["value"] - held["ci_low"])}


def compare(public_summary: dict, held_summary: dict) -> list[dict]:
    """Per metric of the overall slice in both summaries: public, held-out, gap, advantage and the badge."""
    def overall(summary):
        return {e["metric"]: e for e in summary["metrics"] if e["slice_type"] == "overall" and e["value"] is not None}

    cards = {m["name"]: m for m in public_summary["metrics_info"]}
    held = overall(held_summary)
    rows = []
    for metric, pub in sorted(overall(public_summary).items()):
        if metric not in held:
            continue
        card, h = cards[metric], held[metric]
        g = gap(pub, h)
        sign = {"higher": 1, "lower": -1}.get(card["direction"])
        advantage = None if sign is None else (
            {"value": sign * g["value"], "ci_low": None, "ci_high": None} if g["ci_low"] is None else
            {"value": sign * g["value"], "ci_low": min(sign * g["ci_low"], sign * g["ci_high"]),
             "ci_high": max(sign * g["ci_low"], sign * g["ci_high"])})
        tuned = bool(advantage and advantage["ci_low"] is not None and pub["ci_low"] is not None
                     and advantage["ci_low"] > tuned_threshold(card, pub))
        keep = ("value", "ci_low", "ci_high", "n_prompts", "n_images", "coverage")
        rows.append({"metric": metric, "version": card["version"], "direction": card["direction"],
                     "primary": card.get("primary", False),
                     "public": {k: pub.get(k) for k in keep}, "held_out": {k: h.get(k) for k in keep},
                     "gap": g, "advantage": advantage,
                     "threshold": tuned_threshold(card, pub) if advantage and pub["ci_low"] is not None else None,
                     "tuned_to_public": tuned})
    return rows


def _read_json(path: Path, what: str, fix: str) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CultureboardError(path, f"is missing ({what})", fix) from None
    except ValueError:
        raise CultureboardError(path, f"is not JSON ({what})", fix) from None


def check_split(dataset: Path, private: Path) -> dict:
    """The private dataset's split record, checked against the public dataset's: the same release and fingerprint."""
    from cultureboard.builder.held_out import SPLIT_FILE, previous_split

    record = previous_split(private) if private.is_dir() else None
    if record is None:
        raise CultureboardError(f"--private {private}", "is not a private held-out dataset (no held-out.json)",
                                "download the custodians' private dataset (CULTUREBOARD_HELD_OUT_REPO) into it")
    public = _read_json(dataset / "build.json", "the public dataset's build record",
                        "pass the dataset folder the submission was generated from").get("held_out")
    if public is None:
        raise CultureboardError(dataset, "has no held-out split", "build it with --held-out, or pass the dataset "
                                "folder of the release that has one")
    if (public["release"], public["fingerprint"]) != (record["release"], record["fingerprint"]):
        raise CultureboardError(private / SPLIT_FILE, f"is the split of release {record['release']} (fingerprint "
                                f"{record['fingerprint'][:12]}...), not the dataset's release {public['release']} "
                                f"({public['fingerprint'][:12]}...)", "download the private dataset of the same release")
    return record


def _pipeline(spec: dict, pipeline: str | None) -> str:
    """The pipeline to load: the Hub id at the declared revision, or (for a local pipeline) ``pipeline``, which must
    be the folder the submission's revision fingerprints."""
    from cultureboard.provenance import folder_sha256

    from ..submission.format import get

    model, revision = get(spec, "model.id"), get(spec, "model.revision")
    if revision.startswith("local:"):
        if pipeline is None:
            raise CultureboardError(f"model {model}", "is a local pipeline, not a Hub id at a revision",
                                    "publish the pipeline on the Hub and submit its id and commit, or pass the folder "
                                    "with --pipeline")
        if not Path(pipeline).is_dir() or "local:" + folder_sha256(Path(pipeline)) != revision:
            raise CultureboardError(f"--pipeline {pipeline}", f"is not the pipeline folder {revision[:18]}... the "
                                    "submission was generated with", "pass that folder, unchanged")
        return pipeline
    return f"{model}@{revision}"


def evaluate_held_out(submission: str | Path, dataset: str | Path, private: str | Path, results: str | Path,
                      out: str | Path, *, pipeline: str | None = None, scorers=None, device: str | None = None,
                      cache: str | Path | None = None, work: str | Path | None = None, progress: bool = False,
                      generator: Callable | None = None) -> dict:
    """Score ``submission``'s pipeline on the held-out prompts of its prompt set (from ``private``, the split of
    ``dataset``'s release) and write ``out/<submission id>.json``; ``results`` holds its public results. Returns
    the record. ``generator`` makes the images, called as :func:`~..submission.generate.generate` is (the
    default); the demo passes one that reuses the stand-ins' images made from the same inputs."""
    from ..engine.evaluate import evaluate
    from ..submission.format import SUBMISSION_YAML, get, read_spec, submission_id

    submission, dataset, private, results, out = map(Path, (submission, dataset, private, results, out))
    spec = read_spec(submission / SUBMISSION_YAML)
    sid, prompt_set = submission_id(spec), get(spec, "prompt_set.name")
    record = {"record_version": RECORD_VERSION, "submission": sid, "prompt_set": prompt_set}
    if get(spec, "model.weights") == "closed" or get(spec, "generation.pipeline") == "api":
        return _write(out, sid, record | {"status": NOT_TESTED, "reason": "a closed API: the maintainers make no API "
                                                                           "calls for a team"})
    split = check_split(dataset, private)
    record["split"] = {"release": split["release"], "fingerprint": split["fingerprint"]}
    if not split["prompts"].get(prompt_set):
        return _write(out, sid, record | {"status": NOT_TESTED, "reason": f"{prompt_set} has no held-out prompts"})
    ref = _pipeline(spec, pipeline)
    public = _read_json(results / sid / "summary.json", "the submission's public results",
                        f"score it first: cultureboard evaluate {submission} --dataset {dataset} --out {results}")
    settings = {"steps": get(spec, "generation.steps"), "guidance_scale": get(spec, "generation.guidance_scale"),
                "dtype": get(spec, "generation.precision"), "strength": get(spec, "generation.i2i_strength") or 0.6,
                "i2i_pipeline": (get(spec, "generation.extra") or {}).get("i2i_model")}
    with tempfile.TemporaryDirectory(prefix="cultureboard-held-out-", dir=work) as tmp:
        folder = Path(tmp) / "submissions" / sid
        if generator is None:
            from ..submission.generate import generate as generator
        generator(private, prompt_set, ref, folder, device=device, progress=progress, **settings)
        evaluate(folder, private, Path(tmp) / "results", scorers=scorers, cache=cache, device=device,
                 dtype=settings["dtype"], seed=public["provenance"]["settings"]["seed"],
                 n_boot=public["provenance"]["settings"]["n_boot"], options=public["provenance"]["options"])
        held = json.loads((Path(tmp) / "results" / sid / "summary.json").read_text(encoding="utf-8"))
    for key in ("metrics", "scorers"):
        if held["provenance"][key] != public["provenance"][key]:
            raise CultureboardError(results / sid / "summary.json", f"was scored with other {key} than this run "
                                    f"({sorted(public['provenance'][key])} vs {sorted(held['provenance'][key])})",
                                    "rescore the public prompts with the scorers given here, or pass theirs")
    provenance = {k: held["provenance"][k] for k in ("code", "scorers", "metrics", "options", "device", "dtype",
                                                      "settings")}
    return _write(out, sid, record | {
        "status": "tested", "provenance": provenance | {"generation": settings | {
            "pipeline": ref if pipeline is None else f"{get(spec, 'model.id')}@{get(spec, 'model.revision')}"}},
        "public_results": {"dataset": public["provenance"]["dataset"]},
        "metrics": compare(public, held)})


def _write(out: Path, sid: str, record: dict) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / f"{sid}.json", json.dumps(record, indent=2, sort_keys=True, allow_nan=False) + "\n")
    return record


def read_held_out(folder: str | Path | None) -> dict[str, dict]:
    """The held-out records of ``folder`` (``<submission id>.json`` each), by submission id; none without one."""
    if folder is None or not Path(folder).is_dir():
        return {}
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(Path(folder).glob("*.json"))}
