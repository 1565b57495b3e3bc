"""``cultureboard build``: knowledge base -> artifact space -> LLM refinement -> curated selection ->
prompt sets -> a dataset folder in Hub layout, with every step's decisions and provenance recorded.

Options come from keyword arguments, which override a YAML config file (``config=``) with the same
keys, which overrides the defaults below. The same inputs, seed and LLM cache give the same dataset,
byte for byte: no timestamps are written and every table is sorted.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import replace
from functools import partial
from importlib import resources
from pathlib import Path

import pyarrow as pa

from cultureboard.atomic import check_replaceable
from cultureboard.countries import load_countries
from cultureboard.errors import CultureboardError
from cultureboard.provenance import code_provenance, file_sha256
from cultureboard.text import NAME, text_problem

from . import artifact_space
from .curation import apply_curation, load_curation, stratified_sample
from .dataset import Config, artifact_config, prompt_config, write_dataset
from .descriptors import descriptor_stage
from . import held_out as ho
from .knowledge import DEFAULT_MAX_FALLBACK, embedder_info, knowledge_stage
from .llm_backends import CachedLLM, backend_from_spec, run_deadlines
from .llm_cache import ResponseCache
from .prompt_sets import NATIVE_VARIANTS, prompt_set_names, registry
from .prompts_native import build_native, translation_requests
from .prompts_cultivate import load_activities
from .prompts_ecb import checked_subset
from .refine import refine
from .translate import DEFAULT_THRESHOLD, load_translations, translation_stage
from .yaml_file import load_yaml

#: The countries of the CUBE paper plus those of CultDiff that the sample dump covers.
DEFAULT_COUNTRIES = ["BR", "FR", "IN", "IT", "JP", "NG", "TR", "US", "CN", "MX", "KR", "ES", "GB"]
DEFAULTS = {
    "dump": None,
    "sparql": None,
    "concepts": ["cuisine", "landmarks", "art"],
    "countries": DEFAULT_COUNTRIES,
    "hops": 4,
    "concepts_file": None,
    "max_malformed": 0.01,
    "llm": "none",
    "llm_cache": None,
    "curation": None,
    "seed": 0,
    "prompt_sets": None,  # None: every registered family
    "knowledge": None,  # ecb culture questions: a country article corpus folder (builder/knowledge.py)
    "max_question_fallback": DEFAULT_MAX_FALLBACK,  # the largest share of ecb prompts with template questions
    "ecb_subset": None,  # ecb: {countries, subcategories, steps}, a slice for demos (None: the whole set)
    "descriptor_proposers": None,  # cultivate descriptors: proposer LLM specs (None: the --llm backend)
    "cure_images": None,  # cure-ladder: [images per artifact prompt, per category prompt] (None: 4, 80)
    "cube_images": None,  # cube: [images per cube-awareness prompt, per cube-diversity prompt] (None: 4, 8)
    "cultivate_activities": None,  # cultivate: an activity catalogue (YAML) in place of the packaged one
    "translations": None,  # native variants: a translation file (builder/translate.py); None: the packaged demo file;
    # "none": no file
    "translation_threshold": DEFAULT_THRESHOLD,  # native variants: the least back-translation similarity kept
    "llm_deadline": None,  # seconds the whole build may wait for LLM servers' answers, every backend together (None:
    # llm_backends.RUN_SECONDS, 30 minutes)
    "held_out": None,  # a fraction in (0, 0.5]: the held-out split's share of each stratum (builder/held_out.py)
    "held_out_folder": None,  # the private dataset's folder (None: beside the public one, DIR-held-out)
}

DECISION_SCHEMA = pa.schema(
    [(n, pa.string()) for n in ("stage", "artifact_id", "name", "country", "concept", "decision", "reason", "backend", "model", "cache_key")]
    + [("cached", pa.bool_()), ("answer", pa.string())]
)


def sample_dump_path() -> Path:
    """The small Wikidata dump shipped with the package (see builder/data/SAMPLE.md)."""
    return Path(str(resources.files("cultureboard.builder").joinpath("data/sample_dump.json")))


def demo_translations_path() -> Path:
    """The translation file shipped with the package: the demo countries' rows (see its header)."""
    return Path(str(resources.files("cultureboard.builder").joinpath("data/translations_demo.yaml")))


def resolve_options(config: str | Path | None, overrides: dict) -> dict:
    """The build's options: ``overrides`` (the CLI's, or a caller's) over the ``config`` file over
    ``DEFAULTS``, each checked; an error names the option, or the config file and its entry."""
    options = dict(DEFAULTS)
    from_config: dict[str, str | Path] = {}  # key -> the config file it came from
    if config:
        loaded = load_yaml(config, "a build config", "write a YAML mapping with keys such as dump, countries, concepts, llm")
        loaded = {} if loaded is None else loaded
        unknown = set(map(str, loaded)) - set(DEFAULTS) if isinstance(loaded, dict) else {"(not a mapping)"}
        if unknown:
            raise CultureboardError(config, f"unknown key(s) {', '.join(sorted(unknown))}", f"use only {', '.join(DEFAULTS)}")
        options.update(loaded)
        from_config = dict.fromkeys(loaded, config)
    for key, value in overrides.items():
        if value is not None:
            options[key] = value
            from_config.pop(key, None)
    for key in ("dump", "sparql", "concepts_file", "llm", "llm_cache", "curation", "knowledge", "translations",
                "held_out_folder"):
        if options[key] is not None and not isinstance(options[key], (str, Path)):
            raise artifact_space.option_error(key, options[key], from_config.get(key), "is not a path or name",
                                              "give a string")
    optional_lists = tuple(k for k in ("prompt_sets", "descriptor_proposers") if options[k] is not None)
    for key in ("concepts", "countries") + optional_lists:
        options[key] = artifact_space.option_list(options[key], key, from_config.get(key))
    options["hops"] = artifact_space.option_int(options["hops"], "hops", 1, from_config.get("hops"))
    options["seed"] = artifact_space.option_int(options["seed"], "seed", 0, from_config.get("seed"))
    options["max_malformed"] = artifact_space.option_fraction(options["max_malformed"], "max_malformed",
                                                              from_config.get("max_malformed"))
    for key, pair in (("cure_images", "images per artifact prompt, images per category prompt"),
                      ("cube_images", "images per cube-awareness prompt, images per cube-diversity prompt")):
        if options[key] is not None:
            sizes, source = options[key], from_config.get(key)
            if not isinstance(sizes, (list, tuple)) or len(sizes) != 2:
                raise artifact_space.option_error(key, sizes, source, "is not two numbers", f"give [{pair}]")
            options[key] = [artifact_space.option_int(v, key, 1, source) for v in sizes]
    options["max_question_fallback"] = artifact_space.option_fraction(
        options["max_question_fallback"], "max_question_fallback", from_config.get("max_question_fallback"))
    options["translation_threshold"] = artifact_space.option_fraction(
        options["translation_threshold"], "translation_threshold", from_config.get("translation_threshold"))
    if options["llm_deadline"] is not None:
        options["llm_deadline"] = artifact_space.option_seconds(options["llm_deadline"], "llm_deadline",
                                                                from_config.get("llm_deadline"))
    if options["translations"] is None:
        options["translations"] = str(demo_translations_path())
    elif str(options["translations"]) == "none":
        options["translations"] = None
    if not options["dump"] and not options["sparql"]:
        options["dump"] = str(sample_dump_path())
    return options


def build(out: str | Path, config: str | Path | None = None, *, held_out_key: str | Path | None = None,
          rotate: bool = False, **overrides) -> dict:
    """Build the dataset folder ``out``; returns its provenance record (also written as build.json), whose
    ``warnings`` (when there are any) are lines for the user: inputs that were given and not used.

    With ``held_out`` (a fraction), a held-out split keyed by ``held_out_key`` (a key file) or
    ``$CULTUREBOARD_HELD_OUT_KEY`` is drawn before the public sample and written to the private dataset folder
    (``held_out_folder``, default ``DIR-held-out``); ``rotate`` draws the next release's split and publishes the
    retired one (builder/held_out.py)."""
    check_replaceable(Path(out), kind="dataset")  # before the work
    o = resolve_options(config, overrides)
    split = _split_inputs(Path(out), o, held_out_key, rotate)  # before the work
    countries = load_countries()
    families = registry()
    if o["cure_images"] is not None:  # smaller ladders (the demo's): images per artifact prompt, per category prompt
        per_prompt, per_category = o["cure_images"]
        families["cure-ladder"] = partial(families["cure-ladder"], images_per_prompt=per_prompt,
                                          category_images=per_category)
    if o["cube_images"] is not None:  # fewer images per prompt (the demo's)
        awareness, diversity = o["cube_images"]
        families["cube-awareness"] = partial(families["cube-awareness"], images_per_prompt=awareness)
        families["cube-diversity"] = partial(families["cube-diversity"], images_per_prompt=diversity)
    if o["cultivate_activities"] is not None:  # another catalogue (the demo's is small): read and checked first
        catalogue = load_activities(str(o["cultivate_activities"]))
        families["cultivate"] = partial(families["cultivate"], activities=catalogue)
    if o["ecb_subset"] is not None:  # a slice of the ecb set (the demo's is small)
        families["ecb"] = partial(families["ecb"], subset=checked_subset(o["ecb_subset"]))
    chosen_sets = o["prompt_sets"] or prompt_set_names()
    unknown = [n for n in chosen_sets if n not in families and n not in NATIVE_VARIANTS]
    if unknown:
        raise CultureboardError(f"--prompt-sets {','.join(chosen_sets)}", f"unknown prompt set(s) {', '.join(unknown)}",
                                f"use some of {', '.join([*families, *NATIVE_VARIANTS])}")
    natives = [n for n in chosen_sets if n in NATIVE_VARIANTS]
    translation_file = load_translations(o["translations"]) if natives and o["translations"] else {}  # before the work
    curation = (load_curation(o["curation"], o["concepts"]) if o["curation"]
                else {"include": [], "exclude": [], "rename": []})
    deadlines = run_deadlines(o["llm_deadline"])  # one for the whole build, every backend together
    backend = backend_from_spec(o["llm"], deadlines=deadlines)

    space, extraction = artifact_space.extract(
        dump=o["dump"], sparql=o["sparql"], concepts=o["concepts"], countries=o["countries"], hops=o["hops"],
        concepts_file=o["concepts_file"], max_malformed=o["max_malformed"], native_labels=bool(natives),
    )
    with tempfile.TemporaryDirectory(prefix="cultureboard-llm-") as scratch:
        cache_path = Path(scratch) / "cache.jsonl"
        if o["llm_cache"] and Path(o["llm_cache"]).is_file():
            shutil.copyfile(o["llm_cache"], cache_path)
        llm = CachedLLM(backend, ResponseCache(cache_path)) if backend else None
        refined = refine(space, llm, countries)
        cache_bytes = cache_path.read_bytes() if cache_path.is_file() else b""
    space = sorted(refined.artifacts, key=lambda r: (r["concept"], r["country"], r["qid"]))
    pool, held, public_sizes = (ho.split_pool(space, split["fraction"], split["key"], split["release"],
                                              retired=ho.retired_artifacts(split["retired"]))
                                if split else (space, [], None))
    selected = stratified_sample(pool, seed=o["seed"], sizes=public_sizes)
    selected, curation_report = apply_curation(selected, space, curation, str(o["curation"]))
    selected.sort(key=lambda r: (r["concept"], r["country"], r["qid"]))
    if split:  # an artifact curation forced into the public set is public; the file's excludes and renames apply
        public_keys = {(r["qid"], r["country"]) for r in selected}
        held, held_report = apply_curation([r for r in held if (r["qid"], r["country"]) not in public_keys], space,
                                           curation | {"include": []}, str(o["curation"]))
        held.sort(key=lambda r: (r["concept"], r["country"], r["qid"]))
        used_on_held = {e["qid"] for kind in ("exclude", "rename") for e in curation[kind]} - set(held_report["unused"])
        curation_report["unused"] = [q for q in curation_report["unused"] if q not in used_on_held]

    built = {name: families[name](selected, countries)
             for name in dict.fromkeys([*(n for n in chosen_sets if n in families), *(NATIVE_VARIANTS[n] for n in natives)])}
    prompt_sets = [built[name] for name in chosen_sets if name in families]
    held_sets = [replace(ps, rows=rows) for name, ps in
                 ((n, families[n](held, countries)) for n in chosen_sets if n in ho.SPLIT_SETS and n in families)
                 if (rows := ho.held_out_rows(built[name].rows, ps.rows))]
    held_texts = {r["text"] for ps in held_sets for r in ps.rows}  # a translation file's entry for one stays unnamed
    translation_file = {k: t for k, t in translation_file.items() if k[1] not in held_texts}
    described, descriptor_decisions, descriptor_report, cache_bytes = descriptor_stage(
        prompt_sets, backend, o["descriptor_proposers"] or [], countries, cache_bytes, deadlines)
    refined.decisions.extend(descriptor_decisions)
    knowledge_configs, knowledge_report, cache_bytes = knowledge_stage(
        prompt_sets, backend, o["knowledge"], o["max_question_fallback"], countries, cache_bytes)
    translation_report, warnings = None, []
    if natives:  # the native variants, from their base sets' rows (builder/prompts_native.py)
        found = extraction["native_labels"]  # a label the dataset may not hold is not used: the English name is
        labels = {q: {t: label for t, label in by.items() if text_problem(label, NAME) is None} for q, by in found.items()}
        requests = [r for n in natives for r in translation_requests(built[NATIVE_VARIANTS[n]], countries, labels)]
        translated, cache_bytes = translation_stage(requests, backend, translation_file, o["translation_threshold"],
                                                    cache_bytes, Path(o["translations"] or "none").name)
        refined.decisions.extend(translated.decisions)
        warnings += translated.warnings
        prompt_sets += [build_native(n, built[NATIVE_VARIANTS[n]], countries, translated.kept, labels, translated.report)
                        for n in natives]
        translation_report = translated.report | {
            "file": Path(o["translations"]).name if o["translations"] else None,
            "file_sha256": file_sha256(o["translations"]) if o["translations"] else None,
            "embedder": embedder_info(),
            "requests": len(requests), "with_wikidata_label": sum(r.label is not None for r in requests),
            "labels_refused": sum(len(by) for by in found.values()) - sum(len(by) for by in labels.values()),
        }
    configs: list[Config] = [
        artifact_config("artifacts", space, "The artifact space (CUBE-CSpace style): every artifact found in the knowledge "
                        "base for the requested concepts and countries, after the LLM stage.", "CC0-1.0") if not split
        else artifact_config("artifacts", selected, "The artifacts of the public prompt sets. With a held-out split the "
                             "whole artifact space is not published: with a rebuild it would tell the held-out artifacts "
                             "by difference.", "CC0-1.0"),
        artifact_config("artifacts-curated", selected, "The curated selection (CUBE-1K style): popularity-weighted stratified "
                        "sample per country x concept, then the curation file.", "CC0-1.0"),
        *(prompt_config(ps) for ps in prompt_sets),
        *described,
        *knowledge_configs,
    ]
    held_keys = {(r["qid"], r["country"]) for r in held}
    decisions = [d for d in refined.decisions if (d["artifact_id"], d["country"]) not in held_keys]
    if decisions:  # with --llm none there are none, and build.json records that the stage was skipped
        configs.append(_decisions_config(decisions))
    source = ({"dump": {"file": Path(o["dump"]).name, "sha256": file_sha256(o["dump"]), "bytes": Path(o["dump"]).stat().st_size}}
              if o["dump"] else {"sparql": o["sparql"]})
    provenance = {
        "code": code_provenance(("pyarrow", "msgspec", "numpy", "pyyaml", "transformers")),
        "source": source,
        "options": {k: o[k] for k in ("concepts", "countries", "hops", "llm", "seed", "max_malformed")}
        | {"concepts_file": Path(o["concepts_file"]).name if o["concepts_file"] else None,
           "curation": Path(o["curation"]).name if o["curation"] else None,
           "curation_sha256": file_sha256(o["curation"]) if o["curation"] else None},
        "extraction": {k: v for k, v in extraction.items() if k not in ("source", "native_labels")}
        | {"dump": _portable(extraction.get("dump"))},
        "llm": refined.report,
        **({"descriptors": descriptor_report} if descriptor_report else {}),
        **({"cultivate_activities": {"file": Path(o["cultivate_activities"]).name,
                                     "sha256": file_sha256(o["cultivate_activities"])}}
           if o["cultivate_activities"] is not None else {}),
        **({"knowledge": knowledge_report} if knowledge_report else {}),
        **({"translations": translation_report} if translation_report else {}),
        "curation": curation_report,
        "prompt_sets": {ps.name: {"version": ps.version, "family": ps.family, "rows": len(ps.rows)} for ps in prompt_sets},
        "rows": {c.name: c.table.num_rows for c in configs},
        **({"warnings": warnings} if warnings else {}),
    }
    extra = {"llm/cache.jsonl": cache_bytes} if cache_bytes else {}
    if split:
        held_decisions = [d for d in refined.decisions if (d["artifact_id"], d["country"]) in held_keys]
        provenance["held_out"] = _write_private(split, held, held_sets, held_decisions, provenance)
        extra |= split["retired"]  # the retired splits, published (builder/held_out.py)
    write_dataset(out, configs, provenance, extra or None)
    return provenance


def _decisions_config(decisions: list[dict]) -> Config:
    return Config("llm-decisions", pa.Table.from_pylist(decisions, schema=DECISION_SCHEMA),
                  "Every decision of the LLM stage: which backend and model kept, dropped or added which artifact.",
                  "CC0-1.0")


def _split_inputs(out: Path, o: dict, key_file, rotate: bool) -> dict | None:
    """The held-out split's inputs, checked before the work: fraction, key, private folder, release, retired
    splits (None when the build has no split)."""
    if o["held_out"] is None:
        if rotate:
            raise CultureboardError("--rotate", "draws a new held-out split, and this build has none",
                                    "add --held-out FRACTION")
        return None
    fraction = ho.check_fraction(o["held_out"])
    key = ho.load_key(key_file)
    private = Path(o["held_out_folder"]) if o["held_out_folder"] else ho.private_folder(out)
    if private.resolve() == out.resolve() or out.resolve() in private.resolve().parents:
        raise CultureboardError(f"--held-out-folder {private}", "is the public dataset folder or inside it",
                                "give a folder outside the public dataset, or leave it out (DIR-held-out)")
    check_replaceable(private, kind="dataset")
    release, retiring = ho.next_release(private, key, rotate)
    return {"fraction": fraction, "key": key, "private": private, "release": release,
            "retired": ho.retired_files(private, retiring)}


def _write_private(split: dict, held: list[dict], held_sets: list, decisions: list[dict], public: dict) -> dict:
    """Write the private dataset (held-out artifacts, prompt sets and LLM decisions, the split record and the
    retired splits); returns what the public card says of the split."""
    salt = ho.salt(split["key"], split["release"])
    prompts = [(r["prompt_id"], r["text"]) for ps in held_sets for r in ps.rows]
    if not prompts:
        raise CultureboardError(f"--held-out {split['fraction']}", "holds out no prompt: every stratum is too small "
                                "for that fraction", "give a larger fraction (at most 0.5), or build with more artifacts")
    summary = {"release": split["release"], "fraction": split["fraction"],
               "fingerprint": ho.fingerprint(salt, prompts),
               "prompts": {ps.name: len(ps.rows) for ps in held_sets},
               "retired": sorted(int(Path(p).stem.split("-")[1]) for p in split["retired"])}
    configs = [artifact_config("artifacts", held, "The held-out artifacts (private).", "CC0-1.0"),
               *(prompt_config(ps) for ps in held_sets)]
    if decisions:
        configs.append(_decisions_config(decisions))
    record = summary | {"salt": salt, "key_check": ho.key_check(split["key"])}
    provenance = {k: public[k] for k in ("code", "source", "options")} | {
        "held_out": record, "prompt_sets": {ps.name: {"version": ps.version, "family": ps.family, "rows": len(ps.rows)}
                                            for ps in held_sets},
        "rows": {c.name: c.table.num_rows for c in configs}}
    files = {ho.SPLIT_FILE: (json.dumps(record, indent=2, sort_keys=True) + "\n").encode(), **split["retired"]}
    write_dataset(split["private"], configs, provenance, files)
    return summary


def _portable(dump_report: dict | None) -> dict | None:
    """The dump report without the machine-specific absolute path."""
    if dump_report is None:
        return None
    return {k: (Path(v).name if k == "path" else v) for k, v in dump_report.items()}


def import_dataset(kind: str, source: str, out: str | Path) -> dict:
    """Write a dataset folder from a paper's official release: ``cube-1k`` or ``cure``."""
    check_replaceable(Path(out), kind="dataset")  # before the work
    from .importers import import_cube_1k, import_cure

    importer = {"cube-1k": import_cube_1k, "cure": import_cure}[kind]
    rows, prompt_set = importer(source)
    configs = [
        artifact_config("artifacts", rows, f"The artifacts of the official {kind} release, normalised.", prompt_set.license),
        prompt_config(prompt_set),
    ]
    local = Path(source)
    provenance = {
        "code": code_provenance(("pyarrow", "pyyaml")),
        "source": {"import": kind, "file": local.name, "sha256": file_sha256(local)} if local.is_file()
        else {"import": kind, "location": local.name if local.is_dir() else source},
        "prompt_sets": {prompt_set.name: {"version": prompt_set.version, "family": prompt_set.family, "rows": len(prompt_set.rows)}},
        "rows": {c.name: c.table.num_rows for c in configs},
    }
    write_dataset(out, configs, provenance)
    return provenance
