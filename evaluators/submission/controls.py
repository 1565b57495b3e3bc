"""Control submissions: what each metric gives to real photographs and to no picture at all.

* ``reference-photos``: for each prompt about an artifact, the artifact's reference photographs (the dataset's
  ``references`` config, Wikimedia Commons, free licences) in rank order as samples 0, 1, ...: the ceiling of a
  metric, and a check of its sense;
* ``text-only``: the prompt rendered as an image of its own words (black text on white), every sample alike: a
  metric that rates it as high as real generations rewards reading text, not seeing culture.

A control is a normal submission (it validates and evaluates like any other) whose ``submission.yaml`` says
``control: <kind>``, in a folder named ``control__<kind>[__<tag>]`` (the tag, e.g. the prompt set, tells the
controls of several prompt sets apart); the site shows it marked, beside the leaderboard, never ranked. Sample k of a
``reference-photos`` prompt is the artifact's photograph of index k, so a metric that compares an image with
the artifact's photographs leaves that one out for it (leave-one-out, ``Context.references_of``): the ceiling
is the similarity of a real photograph to the *other* photographs, never to itself. Photographs are centre-cropped
and resized to a square of ``size`` pixels (every image of a submission shares one size). A prompt that names no
artifact, or whose artifact has fewer photographs than the prompt's images, gets declared refusals for the samples
it lacks, with the reason, so coverage says what is missing and why.
"""

from __future__ import annotations

import io
import textwrap
from datetime import date
from pathlib import Path

from cultureboard import __version__
from cultureboard.atomic import MARKER, atomic_dir, check_replaceable
from cultureboard.dataset_folder import local_revision, read_prompt_set, read_references
from cultureboard.errors import CultureboardError
from cultureboard.naming import slug
from cultureboard.provenance import file_sha256

from .format import FORMAT_VERSION, IMAGES, parse_submission_id, write_submission

REFERENCE_PHOTOS = "reference-photos"
CONTROLS = (REFERENCE_PHOTOS, "text-only")


def make_control(kind: str, dataset: str | Path, prompt_set: str, out: str | Path, *, size: int = 512) -> dict:
    """Write the control submission ``kind`` for ``prompt_set`` into ``out`` (replaced atomically); returns counts."""
    if kind not in CONTROLS:
        raise CultureboardError(f"control {kind}", "is not a control", f"choose one of {', '.join(CONTROLS)}", exit_code=2)
    if not 64 <= size <= 2048:
        raise CultureboardError(f"--size {size}", "is outside 64..2048", "pass a size such as 512", exit_code=2)
    dataset, out = Path(dataset), Path(out)
    prompts = read_prompt_set(dataset, prompt_set)
    named = parse_submission_id(out.name)
    if not named or (named["organization"], named["model"]) != ("control", kind):
        raise CultureboardError(out, f"is not named control__{kind} or control__{kind}__TAG",
                                f"use --out {out.parent / f'control__{kind}__{slug(prompt_set)}'} (a tag tells the "
                                "controls of several prompt sets apart)", exit_code=2)
    spec = _spec(kind, dataset, prompt_set, size, named["tag"])
    check_replaceable(out, kind="submission")
    photos, missing = read_references(dataset) if kind == REFERENCE_PHOTOS else ({}, {})
    if kind == REFERENCE_PHOTOS and not photos:
        raise CultureboardError(dataset, "has no reference photographs", "run `cultureboard fetch-references --dataset DIR` first")
    rows, written = [], 0
    with atomic_dir(out, kind="submission") as tmp:
        for p in prompts:
            for k in range(p["images_per_prompt"]):
                line = {"prompt_id": p["prompt_id"], "sample_idx": k, "seed": p["seeds"][k]}
                if kind == "text-only":
                    data = _text_image(p["text"], size)
                else:
                    available = photos.get(p.get("artifact_id") or "", [])
                    if k >= len(available):
                        rows.append({**line, "refused": True, "reason": _why_none(p, available, missing)})
                        continue
                    data = _square(available[k]["data"], size, {
                        "prompt_id": p["prompt_id"],
                        "reference": f"{p['artifact_id']} rank {available[k]['rank']} (the dataset's references config)"})
                rel = f"{IMAGES}/{p['prompt_id']}/{k}.png"
                (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                (tmp / rel).write_bytes(data)
                rows.append({"file_name": rel, **line, "sha256": file_sha256(tmp / rel)})
                written += 1
        write_submission(tmp, spec, rows)
    (out / MARKER).unlink()  # a submission holds no hidden files (the validator refuses them)
    return {"out": str(out), "images": written, "refused": len(rows) - written}


def _spec(kind: str, dataset: Path, prompt_set: str, size: int, tag: str | None) -> dict:
    return {
        "format_version": FORMAT_VERSION, "organization": "control", "contact": "cultureboard", "control": kind,
        **({"tag": tag} if tag else {}),
        "date": date.today().isoformat(),
        "model": {"name": kind, "id": f"cultureboard/control-{kind}", "revision": __version__,
                  "license": "see the dataset's references config" if kind == REFERENCE_PHOTOS else "CC0-1.0",
                  "weights": "open", "training_data": "none (a control, not a model)"},
        "generation": {"pipeline": "control", "scheduler": None, "steps": None, "guidance_scale": None, "width": size,
                       "height": size, "negative_prompt": False, "precision": None},
        "seeds": {"scheme": "prompt-set"},
        "prompt_set": {"name": prompt_set, "dataset": dataset.name, "revision": local_revision(dataset)},
        "images": {"location": IMAGES},
    }


def _why_none(prompt: dict, available: list, missing: dict) -> str:
    artifact = prompt.get("artifact_id")
    if not artifact:
        return "the prompt names no artifact, so there is no reference photograph"
    if available:
        return f"only {len(available)} reference photograph(s) of {artifact}"
    return f"no reference photograph of {artifact}" + (f": {missing[artifact]}" if artifact in missing else "")


def _square(data: bytes, size: int, text: dict[str, str]) -> bytes:
    """A photograph centre-cropped to a square and resized to ``size`` (EXIF orientation applied), as PNG with
    ``text`` in its text chunks (which prompt it stands for and which photograph it is: one photograph serves
    several prompts of a ladder, and each file says which, so no two prompts list the same file)."""
    from PIL import Image, ImageOps
    from PIL.PngImagePlugin import PngInfo

    from cultureboard.images import open_rgb

    image = ImageOps.fit(open_rgb(io.BytesIO(data)), (size, size), method=Image.Resampling.BICUBIC)
    info = PngInfo()
    for key, value in text.items():
        info.add_itxt(key, value)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", pnginfo=info)
    return buffer.getvalue()


def _text_image(text: str, size: int) -> bytes:
    """``text`` in black on white with the image library's own font (deterministic), the largest size at which
    the wrapped text fits the square (so two prompts never give the same picture)."""
    from PIL import Image, ImageDraw, ImageFont

    for points in range(max(12, size // 12), 5, -1):
        lines = textwrap.wrap(text, width=max(8, int((size - size // 8) / (0.6 * points))))
        if len(lines) * points * 1.3 <= size - size // 8:
            break
    font = ImageFont.load_default(size=points)
    image = Image.new("RGB", (size, size), "white")
    draw = ImageDraw.Draw(image)
    y = (size - int(len(lines) * points * 1.3)) // 2
    for line in lines:
        draw.text((size // 16, y), line, fill="black", font=font)
        y += int(points * 1.3)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
