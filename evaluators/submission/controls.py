"""Control submissions: what each metric gives to real photographs, to no picture at all, and to two cheats.

* ``reference-photos``: for each prompt about an artifact, the artifact's reference photographs (the dataset's
  ``references`` config, Wikimedia Commons, free licences) in rank order as samples 0, 1, ...: the ceiling of a
  metric, and a check of its sense;
* ``text-only``: the prompt rendered as an image of its own words (black text on white), every sample alike: a
  metric that rates it as high as real generations rewards reading text, not seeing culture;
* ``written-prompt``: one image per prompt (sample 0; the others are declared refusals), the artifact's name in
  large black type on a plain white background (the typographic attack): a metric on which it beats the real
  models reads the answer written in the image. A prompt that names no artifact is a declared refusal;
* ``category-images`` (CuRe's ``cure-ladder``): every prompt of an artifact's ladder, P(n), P(n,c), P(n,r) and
  P(n,c,r), answered with the images of its category prompt P(c) (the generic dish instead of the named one):
  sample k of a ladder prompt is sample k of P(c). The images are those of a real submission (``source``,
  ``--from``), whose P(c) images the control also submits for P(c) itself. A metric on which this cheat beats the
  real models rewards ignoring the artifact's name. (cure.ps compares each P(n) image with every P(c) image, its
  own copy included: with CuRe's 80 P(c) images that self-match is 1/80 of the mean, with the demo's 2 it is half.)
* ``unedited`` (ECB's ``ecb``): every edit step of an I2I chain returns its input unchanged, so each step's image
  is the chain's base image, copied from a real submission (``source``) that also gives the bases: an editor that
  does nothing. A metric on which it beats the real models rewards not editing.
* ``copied-references``: the ``reference-photos`` images handed in as a model's would be, each re-encoded as JPEG
  (quality :data:`COPY_QUALITY`) and saved again as PNG: the copy a team could submit to top every
  similarity-to-reference metric. It exists to be refused: validation finds each image a copy of a reference
  photograph (``image.copies_reference``, :mod:`.rules.copies`), and the demo shows it refused, never scored.

The two copying controls keep the source's pixels and size (``size`` does not apply); each copy is a PNG whose text
chunks say which prompt it stands for and which file of the source it is (one picture serves several prompts, and
the validator refuses one file for prompts whose texts differ). A sample the source declared refused, or lacks, is
a declared refusal of the control with the reason.

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
from collections.abc import Callable
from datetime import date
from pathlib import Path

from cultureboard import __version__
from cultureboard.atomic import MARKER, atomic_dir, check_replaceable
from cultureboard.dataset_folder import local_revision, read_prompt_set, read_references
from cultureboard.errors import CultureboardError
from cultureboard.naming import slug
from cultureboard.provenance import file_sha256

from .format import (CONTROL_KINDS, FORMAT_VERSION, IMAGES, METADATA, SUBMISSION_YAML, get, is_refusal, parse_location,
                     parse_submission_id, read_metadata, read_spec, write_submission)

REFERENCE_PHOTOS, TEXT_ONLY, CATEGORY_IMAGES, UNEDITED, COPIED_REFERENCES, WRITTEN_PROMPT = CONTROL_KINDS
#: The controls that copy a source submission's images (``--from``).
COPYING = (CATEGORY_IMAGES, UNEDITED)

#: What an image maker gives for (prompt, sample): the image's PNG bytes, or why the sample is a declared refusal.
Maker = Callable[[dict, int], "bytes | str"]


def make_control(kind: str, dataset: str | Path, prompt_set: str, out: str | Path, *, size: int | None = None,
                 source: str | Path | None = None) -> dict:
    """Write the control submission ``kind`` for ``prompt_set`` into ``out`` (replaced atomically); returns counts.
    ``size`` (default 512) is the side of a drawn control's square images; ``source`` is the submission a copying
    control (:data:`COPYING`) takes its images from."""
    if kind not in CONTROL_KINDS:
        raise CultureboardError(f"control {kind}", "is not a control", f"choose one of {', '.join(CONTROL_KINDS)}",
                                exit_code=2)
    if (kind in COPYING) != (source is not None):
        raise CultureboardError(f"control {kind}", "copies a submission's images, but no --from was given"
                                if source is None else "draws its own images: --from does not apply",
                                "pass --from SUBMISSION (a local submission of the prompt set)" if source is None
                                else f"pass --from only with {' or '.join(COPYING)}", exit_code=2)
    if kind in COPYING and size is not None:
        raise CultureboardError(f"--size {size}", f"does not apply to {kind}: its images keep the --from submission's "
                                "size", "leave --size out", exit_code=2)
    size = 512 if size is None else size
    if not 64 <= size <= 2048:
        raise CultureboardError(f"--size {size}", "is outside 64..2048", "pass a size such as 512", exit_code=2)
    dataset, out = Path(dataset), Path(out)
    prompts = read_prompt_set(dataset, prompt_set)
    named = parse_submission_id(out.name)
    if not named or (named["organization"], named["model"]) != ("control", kind):
        raise CultureboardError(out, f"is not named control__{kind} or control__{kind}__TAG",
                                f"use --out {out.parent / f'control__{kind}__{slug(prompt_set)}'} (a tag tells the "
                                "controls of several prompt sets apart)", exit_code=2)
    check_replaceable(out, kind="submission")
    if kind in COPYING:
        origin = _Source(Path(source), dataset, prompt_set)
        make = origin.maker(STAND_INS[kind](prompts, prompt_set))
        spec = _spec(kind, dataset, prompt_set, origin.size, named["tag"], origin)
    else:
        make = (_photographs(dataset, size, prompts, prompt_set, copied=kind == COPIED_REFERENCES)
                if kind in (REFERENCE_PHOTOS, COPIED_REFERENCES) else _written_name(size) if kind == WRITTEN_PROMPT
                else lambda p, k: _text_image(p["text"], size))
        spec = _spec(kind, dataset, prompt_set, (size, size), named["tag"])
    rows, written = [], 0
    with atomic_dir(out, kind="submission") as tmp:
        for p in prompts:
            for k in range(p["images_per_prompt"]):
                line = {"prompt_id": p["prompt_id"], "sample_idx": k, "seed": p["seeds"][k],
                        "edit_step": p.get("edit_step")}
                data = make(p, k)
                if isinstance(data, str):
                    rows.append({**line, "refused": True, "reason": data})
                    continue
                rel = _file(p["prompt_id"], k)
                (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                (tmp / rel).write_bytes(data)
                edited = {"source_file": _file(p["source_prompt_id"], k)} if p.get("kind") == "i2i" else {}
                rows.append({"file_name": rel, **line, **edited, "sha256": file_sha256(tmp / rel)})
                written += 1
        write_submission(tmp, spec, rows)
    (out / MARKER).unlink()  # a submission holds no hidden files (the validator refuses them)
    return {"out": str(out), "images": written, "refused": len(rows) - written}


def _file(prompt_id: str, k: int) -> str:
    return f"{IMAGES}/{prompt_id}/{k}.png"


#: The JPEG quality a copied-references image is re-encoded at (the issue's "re-encoded" copy).
COPY_QUALITY = 60


def _photographs(dataset: Path, size: int, prompts: list[dict], prompt_set: str, copied: bool = False) -> Maker:
    """reference-photos: sample k of a prompt is its artifact's photograph of rank k, squared to ``size``; with
    ``copied`` (copied-references) re-encoded as JPEG at :data:`COPY_QUALITY` first, and its text chunks saying
    nothing of where it comes from. A prompt set none of whose artifacts has a photograph is refused (a control of
    nothing but refusals measures nothing)."""
    photos, missing = read_references(dataset)
    if not photos:
        raise CultureboardError(dataset, "has no reference photographs",
                                "run `cultureboard fetch-references --dataset DIR` first")
    if not any(photos.get(p.get("artifact_id") or "") for p in prompts):
        raise CultureboardError(f"prompt set {prompt_set}", "has no reference photograph for any of its artifacts, "
                                "so the control would hold refusals only",
                                "run `cultureboard fetch-references --dataset DIR` for its artifacts, or choose a "
                                "prompt set whose artifacts have photographs", exit_code=2)

    def make(p: dict, k: int) -> bytes | str:
        available = photos.get(p.get("artifact_id") or "", [])
        if k >= len(available):
            return _why_none(p, available, missing)
        if copied:
            return _square(available[k]["data"], size, {"prompt_id": p["prompt_id"]}, jpeg=COPY_QUALITY)
        return _square(available[k]["data"], size, {
            "prompt_id": p["prompt_id"],
            "reference": f"{p['artifact_id']} rank {available[k]['rank']} (the dataset's references config)"})
    return make


def category_prompts(prompts: list[dict], prompt_set: str) -> dict[str, str]:
    """category-images: prompt id -> the id of its category prompt P(c) (the P(c) of the same ``category`` and
    ``subcategory``; P(c)'s own id for P(c))."""
    from cultureboard.builder.prompts_cure import CATEGORY_LEVEL  # here: importing the builder costs a cached rerun 0.1-0.3 s

    by_category = {(p["category"], p["subcategory"]): p["prompt_id"] for p in prompts
                   if p.get("level") == CATEGORY_LEVEL}
    if not by_category:
        raise CultureboardError(f"prompt set {prompt_set}", "has no category prompts P(c)",
                                f"make {CATEGORY_IMAGES} for cure-ladder", exit_code=2)
    return {p["prompt_id"]: by_category[key] for p in prompts
            if (key := (p.get("category"), p.get("subcategory"))) in by_category}


def chain_bases(prompts: list[dict], prompt_set: str) -> dict[str, str]:
    """unedited: prompt id -> the id of its chain's base (text-to-image) prompt; a base prompt's own id. Steps are
    visited in edit-step order, so each finds its source's base already known."""
    if not any(p.get("kind") == "i2i" for p in prompts):
        raise CultureboardError(f"prompt set {prompt_set}", "has no edit steps (image-to-image prompts)",
                                f"make {UNEDITED} for ecb", exit_code=2)
    base: dict[str, str] = {}
    for p in sorted(prompts, key=lambda p: p.get("edit_step") or 0):
        found = base.get(p["source_prompt_id"]) if p.get("kind") == "i2i" else p["prompt_id"]
        if found:
            base[p["prompt_id"]] = found
    return base


#: Copying control -> which prompt's image of the same sample each prompt gets.
STAND_INS = {CATEGORY_IMAGES: category_prompts, UNEDITED: chain_bases}


class _Source:
    """The submission a copying control takes its images from: a local submission of the prompt set, generated from
    this dataset (a ``sha256:`` revision must be the dataset's), every copied file matching its recorded sha256."""

    def __init__(self, folder: Path, dataset: Path, prompt_set: str):
        self.folder, self.id = folder, folder.name
        self.spec = read_spec(folder / SUBMISSION_YAML)
        name, revision = get(self.spec, "prompt_set.name"), get(self.spec, "prompt_set.revision")
        if name != prompt_set:
            raise CultureboardError(folder, f"is a submission of prompt set {name}, not {prompt_set}",
                                    f"pass --from a submission of {prompt_set}", exit_code=2)
        if isinstance(revision, str) and revision.startswith("sha256:") and revision != local_revision(dataset):
            raise CultureboardError(folder, f"was generated from dataset revision {revision}, not {dataset.name}'s",
                                    "pass --dataset the dataset it was generated from", exit_code=2)
        location = parse_location(str(get(self.spec, "images.location", "")))
        if location is None or location.kind != "local":
            raise CultureboardError(folder, "does not hold its images in a local folder",
                                    "download its images into the submission folder first", exit_code=2)
        self.size = (get(self.spec, "generation.width"), get(self.spec, "generation.height"))
        self.lines = {(m.get("prompt_id"), m.get("sample_idx")): m for m in read_metadata(folder / METADATA)}

    def maker(self, stand_in: dict[str, str]) -> Maker:
        """Image k of prompt p is the source's image k of ``stand_in[p]``, re-saved with text chunks naming p."""
        def make(p: dict, k: int) -> bytes | str:
            pid = stand_in.get(p["prompt_id"])
            line = self.lines.get((pid, k))
            if pid is None or line is None:
                return f"{self.id} has no image of {pid or 'a stand-in prompt'} sample {k} to copy"
            if is_refusal(line):
                why = f": {line['reason']}" if line.get("reason") else ""
                return f"{self.id} declared {pid} sample {k} refused{why}"
            return self._copy(line, p["prompt_id"])
        return make

    def _copy(self, line: dict, prompt_id: str) -> bytes:
        from cultureboard.images import open_rgb, require_image

        fix = f"run `cultureboard validate {self.folder}` and pass --from a valid submission"
        if not isinstance(line.get("file_name"), str):
            raise CultureboardError(self.folder / METADATA, f"lists {line['prompt_id']} sample {line['sample_idx']} "
                                    "without a file_name", fix)
        path = self.folder / line["file_name"]
        info = require_image(path, name=str(path), size=self.size)
        if info.sha256 != line.get("sha256"):
            raise CultureboardError(path, f"differs from the sha256 {self.folder / METADATA} records", fix)
        return _png(open_rgb(path), {"prompt_id": prompt_id, "copied_from": f"{self.id} {line['file_name']}"})


def _spec(kind: str, dataset: Path, prompt_set: str, size: tuple[int, int], tag: str | None,
          source: _Source | None = None) -> dict:
    model = get(source.spec, "model", {}) if source else {}
    return {
        "format_version": FORMAT_VERSION, "organization": "control", "contact": "cultureboard", "control": kind,
        **({"tag": tag} if tag else {}),
        "date": date.today().isoformat(),
        "model": {"name": kind, "id": f"cultureboard/control-{kind}", "revision": __version__,
                  "license": model.get("license") or ("see the dataset's references config"
                                                      if kind in (REFERENCE_PHOTOS, COPIED_REFERENCES) else "CC0-1.0"),
                  "weights": model.get("weights") or "open",
                  # the copied images are the source model's: its training data is theirs (entanglement badges)
                  "training_data": model.get("training_data") or "none (a control, not a model)"},
        "generation": {"pipeline": "control", "scheduler": None, "steps": None, "guidance_scale": None,
                       "width": size[0], "height": size[1], "negative_prompt": False, "precision": None,
                       **({"extra": {"images_of": source.id}} if source else {})},
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


def _square(data: bytes, size: int, text: dict[str, str], jpeg: int | None = None) -> bytes:
    """A photograph centre-cropped to a square and resized to ``size`` (EXIF orientation applied), re-encoded as
    JPEG of quality ``jpeg`` when given, as PNG with ``text`` in its text chunks (:func:`_png`)."""
    from PIL import Image, ImageOps

    from cultureboard.images import open_rgb

    square = ImageOps.fit(open_rgb(io.BytesIO(data)), (size, size), method=Image.Resampling.BICUBIC)
    if jpeg is not None:
        buffer = io.BytesIO()
        square.save(buffer, format="JPEG", quality=jpeg)
        square = open_rgb(io.BytesIO(buffer.getvalue()))
    return _png(square, text)


def _png(image, text: dict[str, str]) -> bytes:
    """``image`` as PNG with ``text`` in its text chunks (which prompt it stands for and where the picture comes
    from: one picture serves several prompts, and each file says which, so no two prompts list the same file)."""
    from PIL.PngImagePlugin import PngInfo

    info = PngInfo()
    for key, value in text.items():
        info.add_itxt(key, value)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", pnginfo=info)
    return buffer.getvalue()


def _written_name(size: int) -> Maker:
    """written-prompt: sample 0 of a prompt is its artifact's name drawn large (:func:`_text_image`, starting at a
    quarter of the side); later samples, and prompts without an artifact, are declared refusals."""
    def make(p: dict, k: int) -> bytes | str:
        if not p.get("artifact_name"):
            return "the prompt names no artifact, so there is no name to write"
        if k:
            return "written-prompt draws one image per prompt"
        return _text_image(p["artifact_name"], size, largest=size // 4)
    return make


def _text_image(text: str, size: int, largest: int | None = None) -> bytes:
    """``text`` in black on white with the image library's own font (deterministic), the largest size at which
    the wrapped text fits the square (so two prompts never give the same picture). With ``largest`` (the
    written-prompt control's name) the search starts at that size, words are never split and each line's drawn
    width must fit too, so an OCR reads whole words."""
    from PIL import Image, ImageDraw, ImageFont

    room = size - size // 8
    for points in range(max(12, largest or size // 12), 5, -1):
        lines = textwrap.wrap(text, width=max(8, int(room / (0.6 * points))), break_long_words=largest is None)
        font = ImageFont.load_default(size=points)
        if len(lines) * points * 1.3 <= room and (largest is None or max(font.getlength(x) for x in lines) <= room):
            break
    image = Image.new("RGB", (size, size), "white")
    draw = ImageDraw.Draw(image)
    y = (size - int(len(lines) * points * 1.3)) // 2
    for line in lines:
        draw.text((size // 16, y), line, fill="black", font=font)
        y += int(points * 1.3)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
