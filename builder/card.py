"""The dataset card (README.md of a dataset folder): configs, features, licences, provenance, citations."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .dataset import Config

CITATIONS = {
    "cube": """@inproceedings{kannen2024beyond,
  title = {Beyond Aesthetics: Cultural Competence in Text-to-Image Models},
  author = {Kannen, Nithish and Ahmad, Arif and Andreetto, Marco and Prabhakaran, Vinodkumar and Prabhu, Utsav and Dieng, Adji Bousso and Bhattacharyya, Pushpak and Dave, Shachi},
  booktitle = {NeurIPS Datasets and Benchmarks Track},
  year = {2024}
}""",
    "cure": """@inproceedings{rege2025cure,
  title = {CuRe: Cultural Gaps in the Long Tail of Text-to-Image Systems},
  author = {Rege, Aniket and Nie, Zinnia and Ramesh, Mahesh and Raskar, Unmesh and Yu, Zhuoran and Kusupati, Aditya and Lee, Yong Jae and Korlakai Vinayak, Ramya},
  booktitle = {ICCV},
  year = {2025}
}""",
    "cultdiff": """@inproceedings{bayramli2025diffusion,
  title = {Diffusion Models Through a Global Lens: Are They Culturally Inclusive?},
  author = {Bayramli, Zahra and Suleymanzade, Ayhan and An, Na Min and Ahmad, Huzama and Kim, Eunsu and Park, Junyeong and Thorne, James and Oh, Alice},
  booktitle = {ACL},
  year = {2025}
}""",
    "cultivate": """@inproceedings{malakouti2026culture,
  title = {Culture in Action: Evaluating Text-to-Image Models through Social Activities},
  author = {Malakouti, Sina and Gong, Boqing and Kovashka, Adriana},
  booktitle = {ICLR},
  year = {2026}
}""",
    "ecb": """@inproceedings{seo2026exposing,
  title = {Exposing Blindspots: Cultural Bias Evaluation in Generative Image Models},
  author = {Seo and Choi and Hong and Zhou and Kim and Ismaila and Etori and Agarwal and Liu and Kim and Oh},
  booktitle = {IASEAI},
  year = {2026}
}""",
}

FEATURES = {
    "prompt_id": "stable id, derived from what the prompt means (never its position)",
    "text": "the prompt given to the model", "negative_prompt": "the negative prompt, empty if none",
    "artifact_id": "Wikidata QID or an llm:/manual:/cube-1k:/cure:/activity: slug",
    "country": "ISO 3166-1 alpha-2", "region_group": "GN / GS (UNCTAD developed / developing)",
    "category": "top level: CUBE concept, CuRe axis, CultDiff category, CULTIVate activity category, ECB category",
    "subcategory": "the level below: art sub-type, CuRe category, CULTIVate activity, ECB subcategory",
    "era": "null where it does not apply", "level": "CuRe ladder level, ECB chain stage, CUBE diversity scope",
    "edit_step": "I2I chains: step 1-5, null for text-to-image", "source_prompt_id": "I2I chains: the prompt whose image is edited",
    "images_per_prompt": "images a submission generates per prompt", "seeds": "one seed per image, in order",
    "language": "BCP 47 tag of `text` on the rows of a -native set (`en` for its English rows); null (English) elsewhere",
    "translation_of": "on a translated row: the prompt_id of the English row of the same set it translates",
    "translation_check": "on a translated row: similarity of its back-translation to the English prompt, in [0, 1]",
    "translation_source": "on a translated row: `override` (the translation file) or `llm:<backend>:<model>`",
}


def _table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _absent(configs: list["Config"]) -> list[str]:
    if not configs:
        return []
    names = ", ".join(f"`{c.name}`" for c in configs)
    return [f"\nNot in this build, because it gave them no rows: {names}. A prompt set has no rows when none of the "
            "build's artifacts is in its countries and categories (CultDiff covers ten countries, for example: build "
            "with some of them to get it); `datasets` cannot load a config without rows, so none is written.\n"]


def _languages(provenance: dict) -> list[str]:
    """The languages of the native variants: per language, where its translations came from and how they were
    checked (nothing when the build made no native variant)."""
    t = provenance.get("translations")
    if not t:
        return []
    sources = [f"the translation file `{t['file']}` (sha256 {t['file_sha256']})" if t["file"] else None,
               f"the LLM `{t['llm']}` through the build's response cache (llm/cache.jsonl; every call in "
               "llm-decisions, stage translation)" if t["llm"] else None]
    sources = [s for s in sources if s] or ["none (no translation file and --llm none)"]
    return [
        "\n## Languages\n",
        "The `-native` configs hold prompts in the languages of their countries (cultureboard/data/countries.csv, "
        "BCP 47), each paired with its English row (`translation_of`). Translations came from "
        + " and ".join(sources) + ", the file's entries winning. Each was checked by back-translation into English "
        f"(the file's recorded `back`, or the LLM's): the cosine of {t['embedder']['model']} embeddings of the "
        f"back-translation and the English prompt is `translation_check`; rows below {t['threshold']} are flagged "
        f"for review in build.json (`translations.flagged`: {len(t['flagged'])}) and left out; rows without a "
        f"translation are absent ({t['absent']}). {t['with_wikidata_label']} of {t['requests']} translations had the "
        "artifact's Wikidata label in the language to use.\n",
        _table(["language", "kept (file)", "kept (LLM)", "flagged", "absent"],
               [[f"`{lang}`", c["override"], c["llm"], c["flagged"], c["absent"]]
                for lang, c in t["languages"].items()]),
    ]


def _held_out(provenance: dict) -> list[str]:
    """The held-out split: its size per prompt set and its fingerprint (builder/held_out.py); in the private
    dataset's own card, a warning that it must stay private."""
    h = provenance.get("held_out")
    if not h:
        return []
    private = "salt" in h
    lines = ["\n## Held-out split\n"]
    if private:
        lines.append("**This is the private held-out dataset.** Keep it in the private Hub repository its custodians "
                     "hold; never publish it, its prompts or its artifacts until the split is rotated.\n")
    lines += [
        f"Release {h['release']} of the held-out split holds out {h['fraction']} of the artifacts of every "
        "(country, concept) stratum from the artifact prompt sets, drawn with the custodians' secret key before the "
        "public sample; its prompts are in a private dataset that only the maintainers score, so a model tuned to the "
        "public prompts shows a gap between its public and held-out values. Fingerprint (sha256 over a secret salt "
        f"and the sorted held-out prompt ids and texts): `{h['fingerprint']}`.\n",
        _table(["prompt set", "held-out prompts"], [[f"`{name}`", n] for name, n in sorted(h["prompts"].items())]),
    ]
    if h["retired"]:
        lines.append(f"\nRetired splits, published with their salt and prompts so anyone can check their fingerprint: "
                     + ", ".join(f"`held-out/retired/release-{r}.json`" for r in h["retired"]) + ".")
    return lines


def render_card(configs: list["Config"], provenance: dict, yaml_header: str, absent: list["Config"] = ()) -> str:
    """The card of a dataset folder holding ``configs``; ``absent`` are the configs left out because they
    have no rows (the card says so, since ``datasets`` cannot load an empty config)."""
    families = sorted({c.family for c in configs if c.family})
    parts = [
        f"---\n{yaml_header}---\n",
        "# cultureboard benchmark dataset\n",
        "Prompt sets and artifact spaces for measuring the cultural competence of text-to-image models, built by "
        "cultureboard from a knowledge base, prompt templates and a "
        "recorded LLM stage. Load a config with `datasets.load_dataset(PATH_OR_REPO, CONFIG, revision=...)`; "
        "submissions pin the revision they were generated from.\n",
        "## Configs\n",
        _table(
            ["config", "family", "version", "rows", "licence", "description"],
            [[c.name, c.family or "-", c.version or "-", c.table.num_rows, c.license, c.description] for c in configs],
        ),
        *_absent(absent),
        "\n## Features\n",
        _table(
            ["config", "columns"],
            [[c.name, ", ".join(f"`{f.name}` ({f.type})" for f in c.table.schema)] for c in configs],
        ),
        "\nMeaning of the prompt columns:\n",
        _table(["column", "meaning"], [[f"`{k}`", v] for k, v in FEATURES.items()]),
        "\n## Licences\n",
        "Each config has its own licence (table above). Artifacts extracted from Wikidata are CC0; prompt sets rendered by "
        "cultureboard from them are CC0. Imported CUBE-1K prompts are CC BY-NC-SA 4.0 (Kannen et al.: attribution, "
        "non-commercial use only, share alike); imported CuRe data is MIT (Copyright (c) 2025 Aniket Rege). Reference "
        "images named in `image` are Wikimedia Commons files, each under the licence on its Commons page.\n",
        "## Notes and deviations\n",
    ]
    for c in configs:
        for note in c.notes:
            parts.append(f"- **{c.name}**: {note}")
    parts += _languages(provenance)
    parts += _held_out(provenance)
    from .references import card_section  # the reference images' licences and attribution, when present
    parts += card_section(configs)
    parts += [
        "\n## Build provenance\n",
        "```json",
        json.dumps(provenance, indent=2, ensure_ascii=False, sort_keys=True),
        "```\n",
        "## Citation\n",
        "Cite the paper behind each family you use:\n",
    ]
    for fam in families or sorted(CITATIONS):
        if fam in CITATIONS:
            parts += [f"```bibtex\n{CITATIONS[fam]}\n```"]
    return "\n".join(parts) + "\n"
