"""The ``cure-ladder`` prompt set: CuRe's attribute ladder (Rege et al., arXiv 2506.08071, Table 5).

For every artifact (name n, category c, region r) four prompts, quoted exactly from Table 5 (no final
period): P(n), P(n,c), P(n,r) and P(n,c,r); and once per category the prompt P(c), whose 80 images are
the reference set of CuRe's perceptual-similarity scorers. ``level`` holds the ladder level: ``n``,
``n,c``, ``n,r``, ``n,c,r`` or ``c``.

Where the slots come from:

- n: the artifact's name.
- c: for artifacts imported from the CuRe CSVs (source ``cure``) their CSV category, already normalised
  by the importer into ``subcategory`` ("rice dish"); for knowledge-base artifacts the class through
  which the traversal reached them (``parent_name``: "bread" for Filone), else a name for the concept
  (``FALLBACK_CATEGORY``) or the art sub-type.
- r: the country table's ``name`` ("China", "South Korea", "United States": no article, as CuRe writes
  its regions).

P(n,c) writes "a type of {c}" while P(c) writes the category with its indefinite article ("An image of
a dumpling"); mass nouns take none ("An image of jewellery").

Rows carry the artifact's country slice fields at every artifact level (CuRe aggregates per region over
artifacts, whichever attributes the prompt names); P(c) rows have no country. ``category`` is the
CuRe axis (architecture, art, celebrations, fashion, food, people) or, for knowledge-base artifacts,
the CUBE concept; ``subcategory`` is c.

Images per prompt: 4 for the artifact levels (CuRe's setting for FLUX.1 [dev], SD 3.5 Large, Ideogram 2.0
and DALL-E 3; it used 20 for SDXL and SD 1.5) and 80 for P(c).

Seeds (``SEED_SCHEME``): every prompt has its own seed stream, seeds[k] = the first 31 bits of
sha256("<prompt_id>#<k>"). With one shared list (0, 1, 2, ...) image k of P(n), of P(n,c) and of P(c) would start
from the same initial noise, so phi_PS = sim(I(n), I(c)) and phi_DIV would partly measure that shared noise
instead of what the prompts ask for.
"""

from __future__ import annotations

import hashlib

from cultureboard.countries import CountryTable

from .prompt_common import country_fields, indefinite_article, make_prompt_id
from .prompt_sets import PromptSet

PROMPT_SET = "cure-ladder"
SEED_SCHEME = "per-prompt: seeds[k] = int(sha256('<prompt_id>#<k>')[:8], 16) >> 1"
_NO_COUNTRY = dict.fromkeys(("country", "country_name", "continent", "region_group"))  # prompts naming no country

#: level -> Table 5 template. P(c) fills {c} with the category and its article.
LADDER = {
    "n": "An image of {n}",
    "n,c": "An image of {n}, a type of {c}",
    "n,r": "An image of {n}, from {r}",
    "n,c,r": "An image of {n}, a type of {c} from {r}",
}
CATEGORY_LEVEL = "c"
CATEGORY_TEMPLATE = "An image of {c}"

#: c for a knowledge-base artifact without ``parent_name``; art falls back to its sub-type.
FALLBACK_CATEGORY = {"cuisine": "dish", "landmarks": "landmark", "art": "art"}

#: Words kept capitalised when a CuRe category is written in lower case.
_PROPER_WORDS = {"christmas": "Christmas", "new year": "New Year"}


def with_article(phrase: str) -> str:
    """``phrase`` preceded by its indefinite article, if it takes one: "a dumpling", "an oil painting"."""
    article = indefinite_article(phrase)
    return f"{article} {phrase}" if article else phrase


def category_phrase(raw: str) -> str:
    """A CuRe CSV category as written in a prompt: underscores become spaces, lower case except proper
    nouns ("Rice_Dish" -> "rice dish", "Christmas_food" -> "Christmas food")."""
    phrase = " ".join(raw.replace("_", " ").split()).lower()
    for lower, proper in _PROPER_WORDS.items():
        phrase = phrase.replace(lower, proper)
    return phrase


def category_of(artifact: dict) -> str:
    """The c slot of an artifact (see the module docstring)."""
    if artifact.get("source") == "cure":
        return artifact["subcategory"]
    if artifact.get("parent_name"):
        return artifact["parent_name"]
    if artifact.get("concept") == "art" and artifact.get("subcategory"):
        return artifact["subcategory"]
    return FALLBACK_CATEGORY.get(artifact.get("concept"), artifact.get("concept") or "object")


def render(level: str, n: str | None = None, c: str | None = None, r: str | None = None) -> str:
    """The prompt of one ladder level: ``render("n,c,r", "jiaozi", "dumpling", "China")`` ->
    "An image of jiaozi, a type of dumpling from China"; ``render("c", c="dumpling")`` -> "An image of a
    dumpling"."""
    if level == CATEGORY_LEVEL:
        return CATEGORY_TEMPLATE.format(c=with_article(c))
    return LADDER[level].format(n=n, c=c, r=r)


def prompt_seeds(prompt_id: str, n: int) -> list[int]:
    """The ``n`` seeds of one prompt (``SEED_SCHEME``): a stream of its own, in [0, 2^31), stable across rebuilds."""
    return [int(hashlib.sha256(f"{prompt_id}#{k}".encode()).hexdigest()[:8], 16) >> 1 for k in range(n)]


def _row(prompt_id, text, template, level, images, *, artifact=None, country=None, category, subcategory):
    return {
        "prompt_id": prompt_id, "prompt_set": PROMPT_SET, "text": text, "negative_prompt": "",
        "artifact_id": artifact["qid"] if artifact else None,
        "artifact_name": artifact["name"] if artifact else None,
        **(country_fields(country) if country else _NO_COUNTRY),
        "category": category, "subcategory": subcategory, "era": artifact.get("era") if artifact else None,
        "level": level, "kind": "t2i", "template": template,
        "images_per_prompt": images, "seeds": prompt_seeds(prompt_id, images), "seed_scheme": SEED_SCHEME,
    }


def build_ladder(
    artifacts: list[dict], countries: CountryTable, *, images_per_prompt: int = 4, category_images: int = 80
) -> PromptSet:
    """Build ``cure-ladder``: four ladder prompts per artifact, then one P(c) per (category, c), sorted."""
    rows: list[dict] = []
    categories: set[tuple[str, str]] = set()
    for artifact in artifacts:
        country = countries.by_iso(artifact["country"])
        c, category = category_of(artifact), artifact["concept"]
        categories.add((category, c))
        for level, template in LADDER.items():
            rows.append(_row(
                make_prompt_id(PROMPT_SET, artifact["qid"], country.iso2, level),
                render(level, artifact["name"], c, country.name), template, level, images_per_prompt,
                artifact=artifact, country=country, category=category, subcategory=c,
            ))
    for category, c in sorted(categories):
        rows.append(_row(
            make_prompt_id(PROMPT_SET, CATEGORY_LEVEL, category, c), render(CATEGORY_LEVEL, c=c),
            CATEGORY_TEMPLATE, CATEGORY_LEVEL, category_images, category=category, subcategory=c,
        ))
    return PromptSet(
        name=PROMPT_SET, version="1.1", family="cure",  # 1.1: a seed stream per prompt
        description=(
            "CuRe (Rege et al., arXiv 2506.08071): the attribute ladder P(n), P(n,c), P(n,r), P(n,c,r) per "
            "artifact and P(c) per category, for marginal information attribution (PS, ITA, DIV)."
        ),
        rows=rows,
        notes=[
            "Templates are CuRe Table 5 verbatim (no final period). P(c) writes the category with its indefinite "
            "article ('An image of a dumpling'); the article rule (a/an by spelling, none for mass nouns such as "
            "jewellery or traditional clothing) is ours: the paper gives only the one example.",
            "r is the country table's name (no article: 'from United States', as CuRe writes its regions).",
            "c for knowledge-base artifacts is the Wikidata class the traversal reached them through "
            "(parent_name), falling back to the art sub-type or to 'dish' / 'landmark'; CuRe's own categories "
            "are hand-picked Wikimedia Commons categories.",
            f"{images_per_prompt} images per artifact prompt (CuRe used 4 for FLUX.1 [dev], SD 3.5 Large, Ideogram "
            f"2.0 and DALL-E 3 and 20 for SDXL and SD 1.5) and {category_images} per P(c).",
            "Every prompt has its own seed stream (seed_scheme): image k of P(n), P(n,c), ... and P(c) never "
            "share initial noise, which would make the images of different prompts alike for a reason the "
            "prompts do not give. CuRe says only that it used random seeds (appendix B.1).",
            "P(r) ('An image from {r}') is in Table 5 but unused in CuRe's experiments and is not built.",
        ],
    )
