"""Rules on coverage (they need the dataset): the prompt set exists (else the closest names), the revision is the
dataset folder's (a Hub commit: the commit the folder was downloaded at, when it records one), every prompt x
sample is present exactly once with the prompt set's seed, no unknown prompt ids (the closest ids are offered; an
id of another prompt set, and sample indices counted from 1, are named as such), complete I2I chains with the
right edit steps and source files. :func:`check_rows` and :func:`check_missing` take any source of rows, so
``package`` applies them to its mapping before it writes anything.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from cultureboard.dataset_folder import DidYouMean, configs, hub_commit, local_revision, prompt_sets, read_prompt_set
from cultureboard.errors import CultureboardError

from ..format import METADATA, is_refusal
from .report import Run, remake, show

CODES: dict[str, str] = {
    "coverage.skipped": "no dataset was given, so coverage, seeds and chains were not checked (warning; not validated)",
    "schema.unknown_prompt_set": "the dataset has no such prompt set",
    "schema.wrong_revision": "prompt_set.revision is not the dataset folder's revision",
    "schema.revision_unchecked": "a Hub commit cannot be compared with a dataset folder that is not a Hub download (warning)",
    "coverage.unknown_prompt": "a prompt_id that the prompt set does not have",
    "coverage.missing_image": "a text-to-image prompt without all its images",
    "coverage.broken_chain": "an I2I chain (base prompt, sample) missing edit steps",
    "coverage.wrong_edit_step": "edit_step differs from the prompt's (or is set on a text-to-image prompt)",
    "coverage.wrong_source_file": "source_file is not the image of the source prompt's same sample",
    "coverage.edits_refused": "an I2I step with an image whose source sample was declared refused",
}
#: What validate without a dataset leaves unchecked (a report with it is never "valid").
UNCHECKED = "coverage, seeds and I2I chains: no --dataset was given"
_MISSING_FIX = ("add a mapping row for each (or a declared refusal: refused true, an empty file and the API's reason)"
                "; then make the folder again: `cultureboard package` into a new --out (`cultureboard generate` "
                "resumes)")


def check(run: Run) -> None:
    """Load the prompt set into ``run.prompts`` and check the rows' coverage of it."""
    run.prompts = load_prompts(run)
    if run.prompts is not None and run.rows:  # without usable lines, "everything is missing" says nothing new
        present = check_rows(run, run.rows, METADATA)
        check_sources(run, present)
        check_missing(run, present, METADATA)


def load_prompts(run: Run) -> dict[str, dict] | None:
    """The prompt set's rows by prompt_id, or None when coverage cannot be checked (reported)."""
    if run.dataset is None:
        run.warn("coverage.skipped", METADATA, "prompt coverage, seeds and I2I chains were not checked, so the "
                 "submission is not validated", "pass --dataset DIR, the dataset folder at the submission's revision")
        run.unchecked.append(UNCHECKED)
        return None
    spec = run.spec
    name = spec.prompt_set.name if spec is not None else None
    if name is None:
        return None  # reported with the fields
    dataset, revision = run.dataset, spec.prompt_set.revision
    run.prompt_set = name
    if name not in configs(dataset):
        sets = prompt_sets(dataset)
        run.error("schema.unknown_prompt_set", run.at("prompt_set.name"), f"prompt set {show(name)} is not in "
                  f"dataset {dataset.name}{DidYouMean(sets)(name)}",
                  remake(f"use one of its prompt sets ({', '.join(sets)}) as package's --prompt-set"))
        return None
    try:
        rows = prompt_rows(dataset, name)
    except CultureboardError as exc:
        run.error("schema.unknown_prompt_set", run.at("prompt_set.name"), f"{exc.source}: {exc.problem}", exc.fix)
        return None
    if revision is not None and revision.startswith("sha256:"):
        actual = local_revision(dataset)
        if revision != actual:
            run.error("schema.wrong_revision", run.at("prompt_set.revision"), f"the images were generated from "
                      f"dataset revision {revision}, but {dataset.name} is {actual}; coverage was not checked",
                      "pass --dataset with the dataset at the submission's revision, or regenerate from this one")
            return None
    elif revision is not None and re.fullmatch(r"[0-9a-f]{40}", revision):
        downloaded = hub_commit(dataset)
        if downloaded is None:
            run.warn("schema.revision_unchecked", run.at("prompt_set.revision"), f"Hub commit {revision} cannot be "
                     f"compared with {dataset.name}, which is not an unchanged Hub download",
                     "make sure --dataset is a download of that commit (hf download ... --local-dir DIR)")
        elif downloaded != revision:
            run.error("schema.wrong_revision", run.at("prompt_set.revision"), f"the images were generated from "
                      f"Hub commit {revision}, but {dataset.name} is a download of commit {downloaded}; coverage "
                      "was not checked", "pass --dataset with a download of the submission's commit "
                      f"(hf download {spec.prompt_set.dataset} --repo-type dataset --revision {revision} "
                      "--local-dir DIR), or regenerate from this one")
            return None
    run.other_sets = [s for s in prompt_sets(dataset) if s != name]
    return {r["prompt_id"]: r for r in rows}


def check_rows(run: Run, rows: list[tuple[int, dict]], source: str) -> dict[tuple[str, int], tuple[int, dict]]:
    """Each row (line, row) of ``source`` names a prompt of ``run.prompts`` (else the closest ids, or the other
    prompt set it is from), a sample in range (counted from 0), the prompt's seed and edit step; returns the rows
    that do, by (prompt_id, sample_idx)."""
    prompts = run.prompts or {}
    present: dict[tuple[str, int], tuple[int, dict]] = {}
    guess = DidYouMean(prompts, prefix=run.prompt_set)
    slots = {(r.get("prompt_id"), r.get("sample_idx")) for _, r in rows}
    for n, row in rows:
        where, pid, k = f"{source}:{n}", row.get("prompt_id"), row.get("sample_idx")
        if pid is None:
            continue
        prompt = prompts.get(pid)
        if prompt is None:
            _unknown_prompt(run, where, pid, guess)
            continue
        if k is None:
            continue
        count, seeds = prompt["images_per_prompt"] or 0, prompt["seeds"] or []
        if k >= count:
            one_based = k == count and (pid, 0) not in slots
            hint = "; sample_idx counts from 0, and these look counted from 1" if one_based else ""
            run.error("metadata.sample_out_of_range", where, f"sample_idx {k} is out of range: prompt {show(pid)} "
                      f"has {count} images (0..{count - 1}){hint}",
                      remake(f"number each prompt's images 0..{count - 1} in the mapping" +
                             (" (sample_idx - 1)" if one_based else "")))
            continue
        if "seed" in row and k < len(seeds) and row["seed"] != seeds[k]:
            run.error("metadata.wrong_seed", where, f"seed {row['seed']} is not seeds[{k}] = {seeds[k]} of prompt "
                      f"{show(pid)}", remake("generate image k of each prompt with the prompt set's seeds[k] (the seed "
                                             "column of `cultureboard export-prompts`)"))
        if row.get("edit_step") != prompt["edit_step"]:
            has = f"edit step {prompt['edit_step']}" if prompt["kind"] == "i2i" else "no edit step (text-to-image)"
            run.error("coverage.wrong_edit_step", where, f"edit_step is {show(row.get('edit_step'))} but prompt "
                      f"{show(pid)} has {has}", remake("leave edit_step empty in the mapping: package takes it from "
                                                       "the prompt set"))
        present[(pid, k)] = (n, row)
    return present


def _unknown_prompt(run: Run, where: str, pid: str, guess: DidYouMean) -> None:
    other = next((s for s in run.other_sets if pid.startswith(s + "/")), None)
    if other is not None:
        run.error("coverage.unknown_prompt", where, f"prompt_id {show(pid)} is from prompt set {other}, not "
                  f"{run.prompt_set}", remake(f"package these images as a submission of {other} (--prompt-set {other}), "
                                              f"or map the images made for {run.prompt_set}"))
        return
    run.error("coverage.unknown_prompt", where, f"prompt_id {show(pid)} is not in prompt set {run.prompt_set}{guess(pid)}",
              remake("use the prompt set's prompt ids, whole and case-sensitive (never parse them from file names), in "
                     "the mapping"))


def check_sources(run: Run, present: dict[tuple[str, int], tuple[int, dict]]) -> None:
    """Every I2I step edits the image of its source prompt's same sample (declared refused: refused too)."""
    prompts = run.prompts or {}
    for (pid, k), (n, row) in present.items():
        prompt = prompts[pid]
        source = present.get((prompt["source_prompt_id"], k)) if prompt["kind"] == "i2i" else None
        if source and is_refusal(source[1]) and not is_refusal(row):
            run.error("coverage.edits_refused", f"{METADATA}:{n}", f"edits {prompt['source_prompt_id']} sample {k}, "
                      f"which line {source[0]} declares refused", remake("declare this step refused too: nothing was "
                                                                        "there to edit"))
        elif source and not is_refusal(row) and row.get("source_file") != source[1].get("file_name"):
            run.error("coverage.wrong_source_file", f"{METADATA}:{n}", f"source_file is {show(row.get('source_file'))}, "
                      f"but this step edits {show(source[1].get('file_name'))} (line {source[0]})",
                      remake("leave source_file empty in the mapping: package finds the image the step edited"))


def check_missing(run: Run, present: dict, source: str) -> None:
    """Text-to-image prompts lacking images; I2I chains (base prompt x sample) lacking steps, once per chain."""
    prompts = run.prompts or {}
    chains: dict[str, list[dict]] = {}
    for pid, prompt in prompts.items():
        count = prompt["images_per_prompt"] or 0
        if prompt["kind"] == "i2i":
            chains.setdefault(_chain_root(pid, prompts), []).append(prompt)
            continue
        missing = [k for k in range(count) if (pid, k) not in present]
        if missing:
            run.error("coverage.missing_image", source, f"prompt {show(pid)} has no image for sample "
                      f"{', '.join(map(str, missing))} of {count}", _MISSING_FIX)
    for root, steps in chains.items():
        steps.sort(key=lambda p: p["edit_step"] or 0)
        for k in range(max(p["images_per_prompt"] or 0 for p in steps)):
            gaps = [p for p in steps if k < (p["images_per_prompt"] or 0) and (p["prompt_id"], k) not in present]
            if gaps:
                which = ", ".join(f"{p['edit_step']} ({p['prompt_id']})" for p in gaps)
                run.error("coverage.broken_chain", source, f"the I2I chain from {show(root)}, sample {k}, is "
                          f"missing step {which}", "generate every edit step (each edits the previous step's image) "
                          "and " + _MISSING_FIX.removeprefix("add "))


def _chain_root(pid: str, prompts: dict[str, dict]) -> str:
    """The text-to-image prompt an I2I chain starts from (the last id reached, if the chain is broken or cyclic)."""
    seen = set()
    while pid in prompts and prompts[pid]["kind"] == "i2i" and pid not in seen:
        seen.add(pid)
        pid = prompts[pid]["source_prompt_id"]
    return pid


#: The rows of the prompt sets read lately (:func:`prompt_rows`), at most _PROMPT_SETS_KEPT.
_PROMPT_SETS: dict[tuple, list[dict]] = {}
_PROMPT_SETS_KEPT = 8


def prompt_rows(dataset: Path, name: str) -> list[dict]:
    """:func:`~cultureboard.dataset_folder.read_prompt_set`, read once for the folders validated against one
    dataset (a site build validates hundreds). Remembered under the dataset folder's real path, ``name`` and the
    entries of ``data/<name>/`` (name, type, size, times, inode and link count of each): read_prompt_set reads
    the parquet files there, so any change to what it reads changes the key. An error is never remembered. The
    rows are shared by the validations that use them, which only read them."""
    try:
        with os.scandir(dataset / "data" / name) as it:
            files = sorted((e.name, _signature(e.stat(follow_symlinks=False))) for e in it)
        key = (os.path.realpath(dataset), name, tuple(files))
    except OSError:
        return read_prompt_set(dataset, name)  # it says what is wrong
    if key not in _PROMPT_SETS:
        rows = read_prompt_set(dataset, name)
        if len(_PROMPT_SETS) >= _PROMPT_SETS_KEPT:
            _PROMPT_SETS.clear()
        _PROMPT_SETS[key] = rows
    return _PROMPT_SETS[key]


def _signature(st: os.stat_result) -> tuple[int, ...]:
    return st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_nlink
