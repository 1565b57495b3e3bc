"""The submission format: ``submission.yaml``, ``metadata.jsonl`` and the images.

A submission is a folder ``submissions/<org>__<model>[__<tag>]/`` (see ``submissions/README.md``):

* ``submission.yaml``: who made the images, with which model and settings, from which prompt set and
  dataset revision, and where the images are (:data:`FIELDS` lists every field);
* ``metadata.jsonl``: one line per image (:data:`METADATA_FIELDS`); prompts are never parsed from file
  names and images per prompt are never inferred from file counts;
* the images, in ``images/`` or in a Hub dataset pinned at a revision (``hf://datasets/ORG/REPO@REV``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cultureboard.atomic import atomic_write_text
from cultureboard.errors import CultureboardError
from cultureboard.naming import slug

SUBMISSION_YAML = "submission.yaml"
METADATA = "metadata.jsonl"
IMAGES = "images"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class Field:
    path: str  # dotted path in submission.yaml
    type: type | tuple[type, ...]
    required: bool
    help: str
    choices: tuple[str, ...] = ()
    nullable: bool = False  # required key whose value may be null ("unknown"), e.g. steps of a closed API


FIELDS: tuple[Field, ...] = (
    Field("format_version", int, True, f"submission format version; currently {FORMAT_VERSION}"),
    Field("organization", str, True, "the team or company submitting; first part of the folder name"),
    Field("tag", str, False, "optional variant tag; last part of the folder name (e.g. 'fp16-30steps')"),
    Field("contact", str, True, "a name and e-mail address or a GitHub handle"),
    Field("date", str, True, "when the images were generated, YYYY-MM-DD"),
    Field("model.name", str, True, "short model name; second part of the folder name"),
    Field("model.id", str, True, "Hub model id (open weights) or the API's model name (closed)"),
    Field("model.revision", str, True, "Hub commit hash, or the API version / date for closed models"),
    Field("model.license", str, True, "the model's licence (SPDX id or name)"),
    Field("model.weights", str, True, "whether the weights are public", ("open", "closed")),
    Field("model.links", list, False, "links to the model card, paper or API documentation"),
    Field("model.training_data", str, False, "what the model was trained on (used for scorer-entanglement badges)"),
    Field("generation.pipeline", str, True, "diffusers pipeline class, or 'api' for closed models"),
    Field("generation.scheduler", str, True, "scheduler class", nullable=True),
    Field("generation.steps", int, True, "denoising steps", nullable=True),
    Field("generation.guidance_scale", (int, float), True, "classifier-free guidance scale", nullable=True),
    Field("generation.width", int, True, "image width in pixels"),
    Field("generation.height", int, True, "image height in pixels"),
    Field("generation.negative_prompt", bool, True, "whether the prompt set's negative prompts were used"),
    Field("generation.precision", str, True, "weights dtype, e.g. fp16, bf16, fp32", nullable=True),
    Field("generation.i2i_pipeline", str, False, "pipeline used for image-to-image / edit steps (ecb chains)"),
    Field("generation.i2i_strength", (int, float), False, "img2img strength for edit steps"),
    Field("generation.extra", dict, False, "any other setting, as a mapping"),
    Field("seeds.scheme", str, True, "'prompt-set': image k of a prompt uses the prompt set's seeds[k]", ("prompt-set",)),
    Field("prompt_set.name", str, True, "the prompt set's config name, e.g. cube-awareness"),
    Field("prompt_set.dataset", str, True, "the dataset: a Hub id ORG/NAME, or the local folder's name"),
    Field("prompt_set.revision", str, True, "the dataset revision generated from: Hub commit or sha256: fingerprint"),
    Field("images.location", str, True, "'images' (a folder in the submission) or hf://datasets/ORG/REPO@REVISION"),
)


@dataclass(frozen=True)
class MetaField:
    name: str
    type: type | tuple[type, ...]
    required: bool
    help: str


METADATA_FIELDS: tuple[MetaField, ...] = (
    MetaField("file_name", str, True, "image path relative to the submission folder (or to the Hub repo root)"),
    MetaField("prompt_id", str, True, "the prompt set's prompt_id"),
    MetaField("sample_idx", int, True, "0-based index of the image among the prompt's images_per_prompt"),
    MetaField("seed", int, True, "the seed used: the prompt set's seeds[sample_idx]"),
    MetaField("sha256", str, True, "hex sha256 of the image file"),
    MetaField("edit_step", int, False, "I2I chains: the edit step (1..5); absent or null for text-to-image"),
    MetaField("source_file", str, False, "I2I chains: file_name of the image this step edited"),
)


def get(spec: dict, path: str, default: Any = None) -> Any:
    """The value at a dotted path of a parsed submission.yaml, or ``default``."""
    node: Any = spec
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def submission_id(spec: dict) -> str:
    """``<org>__<model>[__<tag>]``: the folder name a submission must have."""
    parts = [get(spec, "organization"), get(spec, "model.name"), get(spec, "tag")]
    return "__".join(slug(str(p)) for p in parts if p)


_HF = re.compile(r"^hf://datasets/(?P<repo>[\w.-]+/[\w.-]+)@(?P<revision>[\w.-]+)$")


@dataclass(frozen=True)
class ImageLocation:
    kind: str  # "local" or "hub"
    path: str  # local folder (relative to the submission) or Hub repo id
    revision: str | None = None


def parse_location(value: str) -> ImageLocation | None:
    """``images`` (or another relative folder) or ``hf://datasets/ORG/REPO@REVISION``; None if neither."""
    if value.startswith("hf://"):
        m = _HF.match(value)
        return ImageLocation("hub", m["repo"], m["revision"]) if m else None
    p = Path(value)
    if value and not p.is_absolute() and ".." not in p.parts:
        return ImageLocation("local", p.as_posix())
    return None


def fetch_hub_images(location: ImageLocation, files: list[str], cache_dir: str | Path | None = None) -> Path:
    """Download ``files`` from the Hub dataset at the pinned revision; returns the local root."""
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(location.path, repo_type="dataset", revision=location.revision,
                                      allow_patterns=files, cache_dir=cache_dir))
    except Exception as exc:  # offline mode, missing repo or revision, network: the transport's own errors
        raise CultureboardError(
            f"hf://datasets/{location.path}@{location.revision}", f"cannot be fetched ({exc.__class__.__name__}: {exc})",
            "check the repository and revision exist and are public, and that this machine can reach the Hub",
        ) from None


def write_submission(folder: str | Path, spec: dict, rows: list[dict]) -> None:
    """Write ``submission.yaml`` and ``metadata.jsonl`` (each atomically); images are already in place."""
    folder = Path(folder)
    atomic_write_text(folder / SUBMISSION_YAML, yaml.safe_dump(spec, sort_keys=False, allow_unicode=True))
    lines = (json.dumps({k: v for k, v in r.items() if v is not None}, ensure_ascii=False) for r in rows)
    atomic_write_text(folder / METADATA, "".join(line + "\n" for line in lines))
