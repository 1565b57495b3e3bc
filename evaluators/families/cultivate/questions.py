"""What the cultivate family asks its judge: descriptor extraction (a JSON answer checked against
:data:`EXTRACTION_SCHEMA`) and VQAScore questions (P("Yes")).

Extraction is generic scene parsing (the paper's MLLM "does not judge culture"): the question names neither the
prompt nor the country, so an image is asked the same question whatever prompt it was made for (and a photograph
shared by two prompts is parsed once). It gives the extractor the same per-dimension guidance as the builder's
proposers (:data:`cultureboard.builder.descriptors.GUIDANCE`, the paper's Tables 22-27) and asks for all five
dimensions in one JSON object -- one answer per image where the paper asks per dimension, so an image is either
parsed or flagged as a whole.
"""

from __future__ import annotations

from cultureboard.builder.descriptors import DIMENSIONS, GUIDANCE

#: Descriptors asked for per dimension (the authors' extractor asks for at most 8).
PER_DIMENSION = 8
EXTRACTION_SCHEMA = {
    "type": "object", "required": list(DIMENSIONS),
    "properties": {d: {"type": "array", "items": {"type": "string"}} for d in DIMENSIONS},
}
#: VQAScore's question (Lin et al. 2024; t2v_metrics' template for CLIP-FlanT5), answered with P("Yes").
VQA_TEMPLATE = 'Does this figure show "{}"? Please answer yes or no.'
#: The text the paper's image-text baselines score against (section 4.2: "image", where prompts say "photo").
PROMPT_DESCRIPTION = "A photorealistic image of {activity} in {country}."


def extraction_question() -> str:
    lines = [("List what this image shows as short visual descriptors (1-4 words each) in five dimensions. Describe "
              "only what is visible; do not guess the country or the culture.")]
    for d in DIMENSIONS:
        title, goal, include, exclude = GUIDANCE[d]
        lines.append(f'- "{d}" ({title}: {goal}). Include: {include}. Exclude: {exclude}.')
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
