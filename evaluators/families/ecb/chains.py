"""ECB's edit chains: which images form a chain, and the per-step scores of every chain (section 3.3).

A chain is a text-to-image base image (step 0) and the images of its edit steps 1..5, each step editing the
previous one; its id is the base prompt's id for a multi-loop chain (``ecb/kr/food/main-dish/modern``) and
``ecb/<country>/attribute-addition`` for an attribute-addition chain (ids of ``builder/prompts_ecb.py``).

Per step, with CLIP ViT-L/14 (``clip-vit-l-14``), the LAION aesthetic head and DreamSim:

* ``clipscore.instruction``: :func:`.core.clipscore` of the image and the chain's edit instruction (multi-loop:
  the one instruction, also for step 0, as ECB scores the base; attribute addition: that step's instruction,
  from step 1);
* ``clipscore.prompt``: of the image and the base's text-to-image prompt;
* ``aesthetic``: the aesthetic head's score;
* ``dreamsim.base`` / ``dreamsim.prev``: DreamSim distance to step 0 / to the previous step (steps 1..5).

Multi-loop metrics are ``ecb.<name>``, attribute-addition ones ``ecb.attribute.<name>``: the two studies are
never averaged together. Each row is one image, in the unit of its chain, with the slice ``edit_step`` (0 for
the base); the prompt set crosses it with the country (``country_x_edit_step``: "KR x 3") for per-step curves
per country.
"""

from __future__ import annotations

import re
from collections import defaultdict

from cultureboard.builder.prompts_ecb import is_agnostic

from ...engine.context import Context, Image, score_row
from .core import chain_pairs, clipscore

CLIP, DREAMSIM = "clip-vit-l-14", "dreamsim"
AESTHETIC = {"laion": "laion-aesthetic", "ecb-relu": "laion-aesthetic-ecb-relu"}
ATTRIBUTE = "attribute-addition"
_EDIT = re.compile(r"/edit/\d+$")


def chain_id(prompt: dict) -> str:
    """The chain a prompt of the ``ecb`` set belongs to (module docstring)."""
    if prompt["category"] == ATTRIBUTE:
        return "/".join(prompt["prompt_id"].split("/")[:3])
    return _EDIT.sub("", prompt["prompt_id"])


def multiloop_chain(prompt: dict) -> str | None:
    """Unit ``chain``: the multi-loop chain of a prompt (None for attribute addition and for the country-agnostic
    prompts, which start no chain)."""
    return None if is_attribute(prompt) or is_agnostic(prompt) else chain_id(prompt)


def attribute_chain(prompt: dict) -> str | None:
    """Unit ``attribute-chain``: the attribute-addition chain of a prompt (None for the multi-loop chains)."""
    return chain_id(prompt) if is_attribute(prompt) else None


def is_attribute(prompt: dict) -> bool:
    return prompt["category"] == ATTRIBUTE


def is_t2i_study(prompt: dict) -> bool:
    """A prompt of ECB's T2I study (section 4.1): a multi-loop chain's base, or a country-agnostic prompt."""
    return prompt["kind"] == "t2i" and not is_attribute(prompt)


def metric_name(name: str, attribute: bool) -> str:
    return f"ecb.attribute.{name}" if attribute else f"ecb.{name}"


def unit_name(attribute: bool) -> str:
    return "attribute-chain" if attribute else "chain"


def chains(images: list[Image]) -> dict[tuple[str, int], list[Image]]:
    """{(chain id, sample index): its images by step, step 0 first}, the country-agnostic images (no chain) left
    out. A chain whose steps are not 0, 1, ..., n (a submission that skipped the validator) is an error."""
    out: dict[tuple[str, int], dict[int, Image]] = defaultdict(dict)
    for im in images:
        if is_agnostic(im.prompt):
            continue
        out[(chain_id(im.prompt), im.sample_idx)][im.edit_step or 0] = im
    ordered = {}
    for key, steps in sorted(out.items()):
        if sorted(steps) != list(range(len(steps))):
            raise ValueError(f"chain {key[0]} sample {key[1]} has steps {sorted(steps)}, not 0..{len(steps) - 1}")
        ordered[key] = [steps[k] for k in range(len(steps))]
    return ordered


def step_row(metric: str, value: float | None, image: Image, chain: str, step: int, detail: dict | None = None,
             flag: str | None = None) -> dict:
    """A score row about one image of a chain: the image's columns, the chain as its unit, its step as the
    ``edit_step`` slice (0 for the base, whose prompt has none)."""
    return score_row(metric, value, image, unit_id=chain, slices={"edit_step": step},
                     detail={"images": 1, **(detail or {})}, flag=flag)


def score_chains(ctx: Context) -> list[dict]:
    """The per-step rows of every chain in ``ctx`` (module docstring)."""
    groups = chains(ctx.images)
    if not groups:
        return []
    images = [im for members in groups.values() for im in members]
    emb = ctx.image_embeddings(CLIP, images)
    aesthetic = ctx.image_embeddings(AESTHETIC[ctx.options.aesthetic], images)
    texts = {}
    for (chain, _), members in groups.items():
        attribute = is_attribute(members[0].prompt)
        edits = [m.prompt["text"] for m in members[1:]]
        instructions = [None] + edits if attribute else [edits[0] if edits else None] * len(members)
        texts[chain] = (members[0].prompt["text"], instructions)
    txt = ctx.text_embeddings(CLIP, sorted({t for p, ins in texts.values() for t in [p, *ins] if t}))
    pairs, owners = [], []
    for key, members in groups.items():
        to_base, to_prev = chain_pairs(len(members))
        for kind, chosen in (("dreamsim.base", to_base), ("dreamsim.prev", to_prev)):
            pairs += [(members[i], members[j]) for i, j in chosen]
            owners += [(key, kind, j) for _, j in chosen]
    distances = dict(zip(owners, ctx.distances(DREAMSIM, pairs))) if pairs else {}
    rows = []
    for (chain, sample), members in groups.items():
        attribute = is_attribute(members[0].prompt)
        prompt_text, instructions = texts[chain]
        for step, im in enumerate(members):
            values = {"clipscore.prompt": clipscore(emb[im.sha256], txt[prompt_text]),
                      "aesthetic": float(aesthetic[im.sha256][0])}
            if instructions[step] is not None:
                values["clipscore.instruction"] = clipscore(emb[im.sha256], txt[instructions[step]])
            for kind in ("dreamsim.base", "dreamsim.prev"):
                if ((chain, sample), kind, step) in distances:
                    values[kind] = float(distances[((chain, sample), kind, step)])
            rows += [step_row(metric_name(name, attribute), value, im, chain, step) for name, value in values.items()]
    return rows
