"""Importers for the released data of CUBE (CUBE-1K) and CuRe (the six CSVs), from a local path or the
official URL. The project never commits these files; each importer returns artifact rows (columns of
``ARTIFACT_SCHEMA``) and the prompt set built from them, with the source's licence and notes that list
what was normalised and the defects detected in the data (with counts).
"""

from __future__ import annotations

import ast
import csv
import http.client
import io
import json
import re
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

from cultureboard.countries import CountryTable, load_countries
from cultureboard.errors import CultureboardError
from cultureboard.http import Deadlines, DeadlinePassed, open_by, read_body
from cultureboard.naming import slug
from cultureboard.text import NAME, PROMPT, check_text
from cultureboard.records import WIKIDATA_PROPERTIES

from .prompt_common import consecutive_seeds, country_fields, make_prompt_id
from .prompt_sets import PromptSet
from .prompts_cube import load_templates
from .prompts_cure import build_ladder, category_phrase

CUBE_1K_COMMIT = "4ec2d350102dcfc03e41aa51ee0f2398d642a1a6"
CUBE_1K_URL = f"https://raw.githubusercontent.com/google-deepmind/cube/{CUBE_1K_COMMIT}/dataset/cube_1k.json"
CURE_COMMIT = "3ec629f9c78fac6ff7ce5e50356df3f31a4734f1"
CURE_URL = (f"https://raw.githubusercontent.com/aniketrege/cure-bench/{CURE_COMMIT}"
            "/prepare_data/cure_dataset_csv/")
CURE_AXES = ("architecture", "art", "celebrations", "fashion", "food", "people")
#: Columns every CuRe CSV must have (read by header name: their order differs between files).
#: ``Time`` is optional: only architecture, art and people have it.
CURE_COLUMNS = ("Category", "Region", "Item", "Continent", "Wikimedia_Category", "Global North/South")
TIMEOUT_S = 30
#: Overall limits on a download (``cultureboard.http.Deadlines``): one file, and every file of one import; the
#: largest file (CUBE-1K's JSON and CuRe's CSVs are a few MB).
FILE_SECONDS, RUN_SECONDS, MAX_FILE_BYTES = 600.0, 1800.0, 1 << 30

_QID = re.compile(r"Q\d+")
_CUBE_DOMAINS = {"cuisine": "cuisine", "landmarks": "landmarks", "landscapes": "landmarks", "art": "art"}
#: CUBE-1K's own templates, for a row whose prompt does not contain its name.
_CUBE_1K_TEMPLATES = {
    ("cuisine", None): "A high resolution image of {name} from {adjective} cuisine, realistic",
    ("landmarks", None): "A panoramic view of {name} in {country}, realistic",
    ("art", "performance"): "An image of {name} performance from {country}, realistic",
    ("art", "clothing"): "An image of {name} from {adjective} clothing, realistic",
    ("art", "painting"): "An image of {name} painting from {country}, realistic",
    ("art", "folk art"): "Image of {name} art from {country}, realistic",
}


def _is_url(source) -> bool:
    return str(source).startswith(("http://", "https://"))


def fetch(source: str | Path, what: str, fix: str = "", deadlines: Deadlines | None = None) -> bytes:
    """The bytes of a local file or an http(s) URL; a clear error (with ``fix``, if given) when it cannot
    be read. A download ends by the deadlines of ``deadlines`` (default: this file's own, :data:`FILE_SECONDS`)."""
    if _is_url(source):
        deadlines = deadlines or Deadlines(FILE_SECONDS, RUN_SECONDS)
        try:
            request = urllib.request.Request(str(source), headers={"User-Agent": "cultureboard"})
            ends = deadlines.next()
            with open_by(urllib.request.urlopen, request, timeout=TIMEOUT_S, deadline=ends) as response:
                data = read_body(response, max_bytes=MAX_FILE_BYTES, deadline=ends)
            if len(data) > MAX_FILE_BYTES:
                raise ValueError(f"larger than {MAX_FILE_BYTES:,} bytes")
            return data
        except DeadlinePassed as exc:
            raise CultureboardError(source, f"sent {what} too slowly ({exc}; {deadlines.limits()})",
                                    "try again later, or download the file and pass its local path") from None
        except (OSError, ValueError, http.client.HTTPException) as exc:  # URLError, HTTPError, timeouts, refused, cut
            raise CultureboardError(
                source, f"could not download {what} ({exc})",
                "check the URL and the network, or download the file and pass its local path",
            ) from None
    path = Path(source)
    if not path.is_file():
        raise CultureboardError(path, f"{what} is missing", fix or f"pass the path of {what} or the official URL")
    return path.read_bytes()


# ---------------------------------------------------------------------------------------------- CUBE-1K


def _qid_list(value: str, where: str, stats: Counter) -> list[str]:
    """A CUBE-1K property value: a Python-repr list of QIDs, an empty form ("[]", "nan", " ", ""), or
    (in some P361 values) a bare QID. Anything else that is not a QID ("LLM") is dropped and counted."""
    text = (value or "").strip()
    if text in ("", "[]", "nan"):
        return []
    if text.startswith("["):
        try:
            items = ast.literal_eval(text)
        except (ValueError, SyntaxError, RecursionError, MemoryError):  # MemoryError: the parser's nesting limit
            raise CultureboardError(where, f"{text[:80]!r} is not a list of Wikidata QIDs",
                                    "pass the unmodified cube_1k.json") from None
        if not isinstance(items, list):
            raise CultureboardError(where, f"{text[:80]!r} is not a list of Wikidata QIDs", "pass the unmodified cube_1k.json")
    else:
        stats["bare_values"] += 1
        items = [text]
    kept = [str(q).strip() for q in items if _QID.fullmatch(str(q).strip())]
    stats["dropped_values"] += len(items) - len(kept)
    return kept


def _cube_art_subtype(name: str, prompt: str) -> str | None:
    """The art sub-type of a CUBE-1K row, from the wording of its prompt."""
    if " performance from " in prompt:
        return "performance"
    if prompt.endswith(" clothing, realistic"):
        return "clothing"
    if re.search(r"\bpainting\b", prompt) or name.strip().casefold().endswith("painting"):
        return "painting"
    if " art from " in prompt:
        return "folk art"
    return None


def _cube_template(prompt: str, name: str, cube_country: str, adjective: str, key) -> str:
    """The template a CUBE-1K prompt was rendered from: the prompt with its (stripped) name, adjective and
    country replaced by placeholders, so that defects such as a missing space stay visible ("{name}in
    {country}") and the template filled with the row's stripped name gives the prompt back; CUBE-1K's
    template for the row's concept when the prompt does not contain the name."""
    for needle in (name.strip(), name):
        start = prompt.find(" of " + needle) if needle else -1  # every CUBE-1K template says "of {name}"
        if start >= 0:
            head, tail = prompt[: start + 4], prompt[start + 4 + len(needle):]
            tail = re.sub(rf"\b{re.escape(adjective)}\b", "{adjective}", tail)
            tail = re.sub(rf"\b{re.escape(cube_country)}\b", "{country}", tail)
            return head + "{name}" + tail
    return _CUBE_1K_TEMPLATES.get(key, "")


#: The fields of a CUBE-1K row: all strings, the first five required and never blank but ``id``.
_CUBE_1K_FIELDS = ("id", "name", "country", "domain", "prompt")


def _cube_1k_row(item, where: str) -> dict:
    """A CUBE-1K row, checked: a JSON object whose fields (and P-properties, when present) are strings."""
    if not isinstance(item, dict):
        raise CultureboardError(where, f"is {_json_type(item)}, not an object of fields", "pass the unmodified cube_1k.json")
    missing = [k for k in _CUBE_1K_FIELDS if k not in item]
    if missing:
        raise CultureboardError(where, f"has no {', '.join(missing)}", "pass the unmodified cube_1k.json")
    for key in (*_CUBE_1K_FIELDS, *WIKIDATA_PROPERTIES):
        if key in item and not isinstance(item[key], str):
            raise CultureboardError(where, f"{key} is {_json_type(item[key])}, not a string",
                                    "pass the unmodified cube_1k.json (every field is a JSON string)")
    blank = [k for k in _CUBE_1K_FIELDS[1:] if not item[k].strip()]
    if blank:
        raise CultureboardError(where, f"has an empty {', '.join(blank)}", "pass the unmodified cube_1k.json")
    for key, rule in (("name", NAME), ("prompt", PROMPT)):
        check_text(item[key].strip(), rule, f"{where}, {key}", "pass the unmodified cube_1k.json")
    return item


def _json_type(value) -> str:
    """How a decoded JSON value reads in a message: 'null', 'a number (5)', 'a list', ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({str(value)[:20]})"
    return {dict: "an object", list: "a list", str: "a string"}.get(type(value), type(value).__name__)


def import_cube_1k(
    source: str | Path = CUBE_1K_URL, countries: CountryTable | None = None, *, images_per_prompt: int = 4
) -> tuple[list[dict], PromptSet]:
    """Import CUBE-1K (``cube_1k.json``): artifact rows (source ``cube-1k``) and the ``cube-awareness`` set.

    Every one of the 1,002 rows becomes a prompt, its text verbatim (the known defects are counted in
    the notes, not fixed, so that scores stay comparable with the paper). Prompt ids are
    ``cube-awareness/{artifact}/{iso2}``, with ``/2``, ``/3`` for the repeats of a row. Artifact ids
    are the row's QID, else ``cube-1k:{iso2}-{name slug}`` (the country keeps apart Rome's Pantheon
    and the Panthéon in Paris). One artifact row per (artifact id, country).
    """
    countries = countries or load_countries()
    try:
        data = json.loads(fetch(source, "cube_1k.json").decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CultureboardError(source, f"is not a UTF-8 JSON file ({exc})", "pass the unmodified cube_1k.json") from None
    except RecursionError:
        raise CultureboardError(source, "nests JSON deeper than the parser goes", "pass the unmodified cube_1k.json") from None
    if not isinstance(data, list):
        raise CultureboardError(source, "does not hold a JSON array of rows", "pass the unmodified cube_1k.json")
    negative = load_templates()["negative_prompt"]
    artifacts: dict[tuple[str, str], dict] = {}
    rows: list[dict] = []
    seen: Counter = Counter()
    stats: Counter = Counter()
    for i, item in enumerate(data):
        where = f"{source} (row {i})"
        item = _cube_1k_row(item, where)
        name, prompt, raw_id = item["name"], item["prompt"], item["id"].strip()
        country = countries.lookup(item["country"])
        if country is None:
            raise CultureboardError(where, f"country {item['country']!r} is not in the country table",
                                    "add it to cultureboard/data/countries.csv")
        concept = _CUBE_DOMAINS.get(item["domain"])
        if concept is None:
            raise CultureboardError(where, f"domain {item['domain']!r} is not one of {sorted(_CUBE_DOMAINS)}",
                                    "pass the unmodified cube_1k.json")
        sub = _cube_art_subtype(name, prompt) if concept == "art" else None
        artifact_id = raw_id if _QID.fullmatch(raw_id) else f"cube-1k:{slug(country.iso2 + ' ' + name)}"
        artifacts.setdefault((artifact_id, country.iso2), {
            "qid": artifact_id, "name": name.strip(), "aliases": [], "country": country.iso2, "concept": concept,
            "category": concept, "subcategory": sub, "source": "cube-1k",
            **{p: _qid_list(item.get(p, ""), f"{where} {p}", stats) for p in WIKIDATA_PROPERTIES},
        })
        seen[(artifact_id, country.iso2)] += 1
        occurrence = seen[(artifact_id, country.iso2)]
        stats["double_space"] += "  " in prompt
        stats["name_not_in_prompt"] += name.strip() not in prompt
        stats["painting_painting"] += "painting painting" in prompt
        stats["llm_added"] += raw_id == "LLM"
        template = _cube_template(prompt, name, item["country"], country.adjective, (concept, sub))
        glued = re.search(r"\{name\}(in|from) ", template)
        if glued:
            stats[f"glued_{glued.group(1)}"] += 1
        rows.append({
            "prompt_id": make_prompt_id("cube-awareness", artifact_id, country.iso2,
                                        occurrence if occurrence > 1 else None),
            "prompt_set": "cube-awareness", "text": prompt, "negative_prompt": negative,
            "artifact_id": artifact_id, "artifact_name": name.strip(), **country_fields(country),
            "category": concept, "subcategory": sub, "era": None, "level": None, "kind": "t2i",
            "template": template,
            "images_per_prompt": images_per_prompt, "seeds": consecutive_seeds(0, images_per_prompt),
            "seed_scheme": "consecutive",
        })
    repeated = {text: n for text, n in Counter(r["text"] for r in rows).items() if n > 1}
    domains = Counter(item["domain"] for item in data)
    notes = [
        f"Imported from CUBE-1K (Kannen et al., 'Beyond Aesthetics: Cultural Competence in Text-to-Image Models', "
        f"NeurIPS 2024 D&B), github.com/google-deepmind/cube at commit {CUBE_1K_COMMIT}, dataset/cube_1k.json. "
        "The dataset is distributed under CC BY-NC-SA 4.0: attribution, non-commercial use only, derivatives under "
        "the same licence.",
        f"{len(rows)} rows, all kept (the paper says 1000); prompts are verbatim, defects included, so scores stay "
        "comparable with the paper. Detected: "
        f"{stats['glued_in']} prompts lack the space before 'in' ('...Meiji Shrinein Japan') and "
        f"{stats['glued_from']} the space before 'from' ('...matefrom Brazilian cuisine'); "
        f"{stats['double_space']} have a double space (names ending in a space); "
        f"{stats['name_not_in_prompt']} do not contain their artifact's name (India landmark rows whose prompt "
        f"names a dish); {stats['painting_painting']} say 'painting painting'; "
        f"{len(repeated)} distinct prompts are repeated ({sum(repeated.values()) - len(repeated)} surplus rows; "
        "ids stay unique: a repeat of a row with the same artifact id and country gets /2, /3).",
        "Negative prompt: CUBE Table 13's (the JSON has none; the paper used it with every prompt). 'template' is the "
        "prompt with its name, adjective and country replaced by placeholders.",
        f"Domains: 'landscapes' ({domains['landscapes']} rows) and 'landmarks' ({domains['landmarks']}, Brazil and "
        "India) are both concept 'landmarks'. Art sub-types are read from the prompt wording: '... performance from' "
        "-> performance, '... clothing, realistic' -> clothing, 'painting' -> painting, '... art from' -> folk art.",
        "Artifact ids: the row's QID when its id is one, else 'cube-1k:{iso2}-{slug of name}' "
        f"({stats['llm_added']} rows were added by GPT-4-Turbo, id 'LLM'; others have a blank or a free-text id). "
        "Artifact names and artifact_name are stripped of trailing spaces.",
        "P31, P279, P495, P17, P2012, P361: parsed from their Python-repr strings; '[]', 'nan', ' ' and '' are empty. "
        f"{stats['bare_values']} values are a bare string (a QID) rather than a list; "
        f"{stats['dropped_values']} values that are not QIDs (SLING frame references such as '{{=#1', and 'LLM') "
        "are dropped.",
        f"{images_per_prompt} images per prompt (seeds 0..{images_per_prompt - 1}): CUBE does not state it.",
    ]
    return list(artifacts.values()), PromptSet(
        name="cube-awareness", version="1.0-cube-1k", family="cube",
        description="CUBE-1K, as released: 1,002 cultural-awareness prompts for 8 countries x 3 concepts (cuisine, "
                    "landmarks, art).",
        rows=rows, license="CC-BY-NC-SA-4.0", notes=notes,
    )


# ---------------------------------------------------------------------------------------------- CuRe


def _cure_rows(source, axis: str, deadlines: Deadlines) -> tuple[str, list[dict]]:
    """(where, rows) of one CuRe CSV, checked for the required columns."""
    if _is_url(source):
        where = str(source).rstrip("/") + f"/{axis}.csv"
    else:
        folder = Path(source)
        if not folder.is_dir():
            raise CultureboardError(folder, "is not a folder",
                                    f"pass the folder holding {', '.join(a + '.csv' for a in CURE_AXES)}, or {CURE_URL}")
        where = str(folder / f"{axis}.csv")
    data = fetch(where, f"the CuRe {axis} CSV", f"the CuRe folder must hold {', '.join(a + '.csv' for a in CURE_AXES)} "
                 f"(prepare_data/cure_dataset_csv/ of aniketrege/cure-bench); or pass {CURE_URL}", deadlines)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise CultureboardError(f"{where} (line {line})", f"is not UTF-8 (byte {data[exc.start]:#04x})",
                                "pass the unmodified CuRe CSV") from None
    if "\0" in text:
        line = text.count("\n", 0, text.index("\0")) + 1
        raise CultureboardError(f"{where} (line {line})", "holds a NUL byte", "pass the unmodified CuRe CSV (plain text)")
    reader = csv.DictReader(io.StringIO(text), strict=True)  # strict: a stray or unterminated quote is an error
    rows = []
    start = 1  # the line the row being read starts on
    try:
        columns = reader.fieldnames or []
        for column in CURE_COLUMNS:
            if column not in columns:
                raise CultureboardError(
                    where, f"has no column {column!r} (its header: {', '.join(columns) or 'none'})",
                    f"restore the {column!r} column: columns are read by header name, in any order",
                )
        start = reader.reader.line_num + 1
        for row in reader:
            if None in row:  # more fields than the header
                raise CultureboardError(f"{where} (line {start})",
                                        f"has {len(columns) + len(row[None])} fields, the header {len(columns)}",
                                        "quote fields that contain commas, or remove the extra fields")
            rows.append(row)
            start = reader.reader.line_num + 1
    except csv.Error as exc:  # an unterminated or stray quote, a field over csv.field_size_limit() (128 KiB)
        raise CultureboardError(f"{where} (line {start})", f"is not valid CSV ({exc})",
                                "pass the unmodified CuRe CSV: quote a field in full (a quote inside it doubled), "
                                "keep fields under 128 KiB") from None
    return where, rows


def _commons(value: str) -> list[str]:
    """The Commons category names of a CuRe Wikimedia_Category: ';'-separated, shell escapes, a 'Category:'
    prefix and underscores removed."""
    return [re.sub(r"\\(.)", r"\1", part).strip().removeprefix("Category:").replace("_", " ")
            for part in value.split(";") if part.strip()]


def import_cure(
    source: str | Path = CURE_URL, countries: CountryTable | None = None, *, images_per_prompt: int = 4,
    category_images: int = 80,
) -> tuple[list[dict], PromptSet]:
    """Import CuRe's six CSVs (a local folder, or the base URL of the folder): artifact rows (source
    ``cure``, concept = category = the axis, subcategory = the CSV category) and the ``cure-ladder`` set.

    Region becomes an ISO code through the country table, whose continent and GN/GS the prompt rows
    carry (the CSV's disagreements are listed in the notes). Time is kept verbatim as ``era`` (blank ->
    null). The Wikimedia Commons categories go into ``commons_category`` (several joined by ``;``, the
    separator :func:`cultureboard.builder.references.commons_categories` splits on) and, as text, into
    ``description``. Artifact ids are
    ``cure:{slug of axis and item}``.
    """
    countries = countries or load_countries()
    artifacts: list[dict] = []
    continent_conflicts: Counter = Counter()
    group_conflicts: Counter = Counter()
    renamed: set[tuple[str, str]] = set()
    deadlines = Deadlines(FILE_SECONDS, RUN_SECONDS)  # the six downloads share the run's limit
    for axis in CURE_AXES:
        where, rows = _cure_rows(source, axis, deadlines)
        for line, row in enumerate(rows, start=2):
            row = {k: (v or "").strip() for k, v in row.items() if k is not None}
            region, item = row["Region"], row["Item"]
            if not region or not item or not row["Category"]:
                raise CultureboardError(f"{where} (line {line})", "has an empty Category, Region or Item",
                                        "fill it in or remove the row")
            country = countries.lookup(region)
            if country is None:
                raise CultureboardError(f"{where} (line {line})", f"Region {region!r} is not in the country table",
                                        "add it (or an alias) to cultureboard/data/countries.csv")
            if region != country.name:
                renamed.add((region, country.name))
            csv_continent = row["Continent"].replace("_", " ")
            if csv_continent.casefold() != country.continent.casefold():
                continent_conflicts[(country.name, csv_continent, country.continent)] += 1
            csv_group = {"global north": "GN", "global south": "GS"}.get(row["Global North/South"].casefold())
            if csv_group != country.region_group:
                group_conflicts[(country.name, row["Global North/South"], country.region_group)] += 1
            categories = _commons(row["Wikimedia_Category"])
            artifacts.append({
                "qid": f"cure:{slug(axis + ' ' + item)}", "name": item, "aliases": [],
                "description": (f"Commons categor{'ies' if len(categories) > 1 else 'y'}: " + "; ".join(categories)
                                if categories else None),
                "commons_category": ";".join(categories) or None, "country": country.iso2,
                "concept": axis, "category": axis, "subcategory": category_phrase(row["Category"]),
                "era": row.get("Time") or None, "source": "cure", "image": None,
            })
    duplicates = [k for k, n in Counter(a["qid"] for a in artifacts).items() if n > 1]
    if duplicates:
        raise CultureboardError(source, f"lists an item twice within an axis ({', '.join(duplicates)})",
                                "remove the repeated rows")
    prompt_set = build_ladder(artifacts, countries, images_per_prompt=images_per_prompt,
                              category_images=category_images)
    categories = {(a["concept"], a["subcategory"]) for a in artifacts}
    notes = [
        "Imported from CuRe (Rege et al., 'CuRe: Cultural Gaps in the Long Tail of Text-to-Image Systems', "
        f"arXiv 2506.08071), github.com/aniketrege/cure-bench at commit {CURE_COMMIT}, "
        "prepare_data/cure_dataset_csv/. MIT licence, Copyright (c) 2025 Aniket Rege: keep this notice.",
        f"{len(artifacts)} artifacts, {len(categories)} categories (the paper says 32; its Table 7 and the CSVs have "
        f"31), {len({a['country'] for a in artifacts})} regions.",
        "Categories: underscores -> spaces, lower case except proper nouns ('Rice_Dish' -> 'rice dish', "
        "'Christmas_food' -> 'Christmas food').",
        "Regions written differently from the country table's name (prompts use the table's name): "
        + (", ".join(f"{a} -> {b}" for a, b in sorted(renamed)) or "none") + ".",
        "Continent and GN/GS come from the country table. CSV continents that differ: "
        + ("; ".join(f"{c}: {csv_c} x{n} (table: {t})" for (c, csv_c, t), n in sorted(continent_conflicts.items()))
           or "none") + ". CSV GN/GS labels that differ: "
        + ("; ".join(f"{c}: {g} x{n} (table: {t})" for (c, g, t), n in sorted(group_conflicts.items())) or "none")
        + ".",
        "era is the CSV's Time string, verbatim ('19th-century', '3rd-century BC' and '3rd-century-BC' both occur; "
        "Onggi's '45th-century BC' looks wrong); blank or absent (celebrations, fashion, food) -> null.",
        "commons_category holds the Wikimedia Commons categories of the ground-truth images, for `fetch-references` "
        "(shell escapes such as '\\(', a 'Category:' prefix and underscores removed; "
        f"{sum(';' in (a['commons_category'] or '') for a in artifacts)} rows name several, joined by ';'), and "
        "description repeats them as text; image is null (CuRe's four hand-picked GT images per artifact are not "
        "released).",
    ]
    if any(a["name"] == "Sinulog" and a["country"] == "ID" for a in artifacts):
        notes.append("Kept as released: Sinulog, a Philippine festival, is listed under Indonesia.")
    prompt_set.license = "MIT"
    prompt_set.version = "1.0-cure"
    prompt_set.description = "CuRe, as released: " + prompt_set.description
    prompt_set.notes = notes + prompt_set.notes
    return artifacts, prompt_set
