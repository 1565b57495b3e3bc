"""What the cultivate family asks its judge: descriptor extraction (JSON answers decoded within
:data:`DIMENSION_SCHEMA` or :data:`EXTRACTION_SCHEMA`) and yes/no questions (P(yes), both spellings).

Extraction is generic scene parsing (the paper's MLLM "does not judge culture"): the question names neither the
prompt nor the country, so an image is asked the same question whatever prompt it was made for (and a photograph
shared by two prompts is parsed once). By default (``extraction="per-dimension"``) each image is asked one question
per dimension, as the paper's Tables 23-27 do, with that dimension's guidance
(:data:`cultureboard.builder.descriptors.GUIDANCE`, shared with the builder's proposers) and a JSON list of
descriptors as the answer; ``extraction="single"`` asks for all five dimensions in one JSON object (one answer per
image: cheaper, but not the paper's prompts).
"""

from __future__ import annotations

from cultureboard.builder.descriptors import DIMENSIONS, GUIDANCE

#: Descriptors asked for per dimension (the authors' extractor asks for at most 8).
PER_DIMENSION = 8
#: One dimension's answer: a list of short descriptors (a descriptor of 1-4 words fits in 60 characters).
DIMENSION_SCHEMA = {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 60},
                    "maxItems": PER_DIMENSION}
EXTRACTION_SCHEMA = {"type": "object", "required": list(DIMENSIONS),
                     "properties": {d: DIMENSION_SCHEMA for d in DIMENSIONS}}
#: The yes/no question of EXAG and the judge_yes baseline (VQAScore's template, Lin et al. 2024), read as P(yes).
VQA_TEMPLATE = 'Does this figure show "{}"? Please answer yes or no.'
#: The text the paper's image-text baselines score against (section 4.2: "image", where prompts say "photo").
PROMPT_DESCRIPTION = "A photorealistic image of {activity} in {country}."


def _guidance(d: str) -> str:
    title, goal, include, exclude = GUIDANCE[d]
    return f'"{d}" ({title}: {goal}). Include: {include}. Exclude: {exclude}.'


def dimension_question(d: str) -> str:
    """The question for one dimension (the paper's Tables 23-27, in our words), answered by a JSON list."""
    return (f"List what this image shows in one dimension, {_guidance(d)} Give short visual descriptors (1-4 words "
            "each) of only what is visible; do not guess the country or the culture. Give at most "
            f'{PER_DIMENSION} and an empty list if nothing fits. Answer with only a JSON list: ["...", "..."]')


def extraction_question() -> str:
    """The single question for all five dimensions (option ``extraction="single"``), answered by a JSON object."""
    lines = [("List what this image shows as short visual descriptors (1-4 words each) in five dimensions. Describe "
              "only what is visible; do not guess the country or the culture.")]
    lines += [f"- {_guidance(d)}" for d in DIMENSIONS]
    example = ", ".join(f'"{d}": ["..."]' for d in DIMENSIONS)
    lines.append(f"Give at most {PER_DIMENSION} descriptors per dimension and an empty list where nothing fits. "
                 f"Answer with only a JSON object: {{{example}}}")
    return "\n".join(lines)


def vqa_question(text: str) -> str:
    return VQA_TEMPLATE.format(text)


def predicted_descriptors(answer: dict) -> dict[str, list[str]]:
    """The descriptors of a validated extraction answer, per dimension: whitespace collapsed, empty ones dropped,
    repeats (case aside) kept once (HAL counts each distinct prediction once, as the released code does)."""
    out = {}
    for d in DIMENSIONS:
        seen, items = set(), []
        for token in answer[d]:
            token = " ".join(token.split())
            if token and token.casefold() not in seen:
                seen.add(token.casefold())
                items.append(token)
        out[d] = items
    return out
