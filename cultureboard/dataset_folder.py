"""Read a dataset folder written by ``cultureboard build`` (or downloaded from the Hub): its configs,
a prompt set's rows, and the dataset and revision that submissions pin (:func:`pin`)."""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path

import pyarrow.parquet as pq

from .errors import CultureboardError
from .hub import DOWNLOAD_COMMAND, OFFICIAL_DATASET
from .provenance import folder_sha256
from .text import NAME, OPTIONAL_PROMPT, PROMPT, printable, text_problem

#: The configs of real reference photographs (``cultureboard references``) and of the artifacts without one.
#: They are evaluation data, fingerprinted by :func:`references_revision`, and left out of the revision
#: that submissions pin, so adding or refreshing references does not invalidate a submission.
REFERENCE_CONFIGS = ("references", "references-missing")


def configs(folder: str | Path) -> list[str]:
    data = Path(folder) / "data"
    return sorted(p.name for p in data.iterdir() if p.is_dir()) if data.is_dir() else []


def prompt_sets(folder: str | Path) -> list[str]:
    """The configs that are prompt sets (their rows have ``prompt_id``, ``images_per_prompt`` and ``seeds``),
    not artifact tables, references or ratings; only each config's first shard's schema is read."""
    data = Path(folder) / "data"
    found = []
    for name in configs(folder):
        shard = next(iter(sorted((data / name).glob("*.parquet"))), None)
        if shard is not None and {"prompt_id", "images_per_prompt", "seeds"} <= set(pq.read_schema(shard).names):
            found.append(name)
    return found


class DidYouMean:
    """Guesses which of ``choices`` a wrong name meant: ``guess(name)`` is `` (did you mean X?)`` (up to three
    names, best first) or ``""``. Tried in order: the same name but for case, then ``prefix/name`` (a prompt
    id written without its prompt set), then the closest spellings (:func:`difflib.get_close_matches`, case
    ignored, similarity at least 0.8, so ``tiny/jp/ramen`` is not "corrected" to ``tiny/jp/sushi``). The first
    two are lookups; the spelling search, slow over large sets, runs for the first ``max_searches`` names only
    (a report shows the first problems, not thousands)."""

    def __init__(self, choices, *, prefix: str | None = None, max_searches: int = 50):
        self.by_lower: dict[str, list[str]] = {}
        for choice in choices:
            self.by_lower.setdefault(choice.lower(), []).append(choice)
        self.prefix, self.searches_left = prefix, max_searches

    def names(self, name: str) -> list[str]:
        key = name.lower()
        for candidate in (key, f"{self.prefix}/{key}".lower() if self.prefix else None):
            if candidate in self.by_lower:
                return self.by_lower[candidate][:3]
        if self.searches_left <= 0:
            return []
        self.searches_left -= 1
        return [self.by_lower[c][0] for c in difflib.get_close_matches(key, list(self.by_lower), n=3, cutoff=0.8)]

    def __call__(self, name: str) -> str:
        names = self.names(name)
        return f" (did you mean {' or '.join(names)}?)" if names else ""


_HUB_COMMIT = re.compile(r"[0-9a-f]{40}")


def hub_commit(folder: str | Path) -> str | None:
    """The Hub commit a folder was downloaded at, or None when it is not an unchanged Hub download.

    ``hf download REPO --repo-type dataset --revision REV --local-dir DIR`` (and ``snapshot_download`` with
    ``local_dir``) records, for each file, ``DIR/.cache/huggingface/download/<path>.metadata``: the commit,
    the file's etag and the time of the download. The folder counts as downloaded at commit C when every
    parquet file outside the reference configs (those :func:`local_revision` covers) has such a record naming
    C and was not modified after it (the Hub client's own test: mtime at most 1 s after the record)."""
    folder = Path(folder)
    records = folder / ".cache" / "huggingface" / "download"
    commits = set()
    files = [p for p in sorted((folder / "data").glob("*/*.parquet")) if p.parent.name not in REFERENCE_CONFIGS]
    for path in files:
        record = records / path.relative_to(folder).parent / f"{path.name}.metadata"
        try:
            commit, _etag, stamp = record.read_text(encoding="utf-8").splitlines()[:3]
            if not _HUB_COMMIT.fullmatch(commit) or path.stat().st_mtime - 1 > float(stamp):
                return None
        except (OSError, ValueError, UnicodeDecodeError):  # no record, a short or unreadable one
            return None
        commits.add(commit)
    return commits.pop() if len(commits) == 1 else None


def pin(folder: str | Path) -> dict:
    """What a submission made from ``folder`` records as ``prompt_set.dataset`` and ``prompt_set.revision``,
    with ``hub`` saying whether that is the Hub: for a Hub download (:func:`hub_commit`), the official Hub
    dataset :data:`~cultureboard.hub.OFFICIAL_DATASET` and the commit (the Hub client records the commit,
    not the repository; the leaderboard accepts only the official one); for any other folder, its name and
    its :func:`local_revision`."""
    commit = hub_commit(folder)
    if commit is not None:
        return {"dataset": OFFICIAL_DATASET, "revision": commit, "hub": True}
    return {"dataset": Path(folder).resolve().name, "revision": local_revision(folder), "hub": False}


def local_pin_note(folder: str | Path) -> str:
    """One line for ``package`` and ``generate`` to print when ``folder`` is not a Hub download."""
    return (f"note: {folder} is a local dataset folder, not a download of the official dataset {OFFICIAL_DATASET}, "
            f"so the submission pins the folder's name and fingerprint; the leaderboard evaluates submissions that "
            f"pin {OFFICIAL_DATASET} at a commit: download it ({DOWNLOAD_COMMAND}), delete this output and run the "
            "command again with --dataset dataset")


def local_revision(folder: str | Path) -> str:
    """``sha256:<hex>`` over every parquet data file (path and content) outside the reference configs: the
    same files give the same revision, so a folder downloaded from the Hub and the folder that was uploaded
    agree."""
    return "sha256:" + folder_sha256(Path(folder) / "data", {".parquet"}, exclude=frozenset(REFERENCE_CONFIGS))


def references_revision(folder: str | Path) -> str | None:
    """``sha256:<hex>`` over the parquet files of the reference configs alone (None when there are none):
    the fingerprint a result that used reference images records."""
    present = set(configs(folder))
    if not present & set(REFERENCE_CONFIGS):
        return None
    return "sha256:" + folder_sha256(Path(folder) / "data", {".parquet"}, exclude=frozenset(present - set(REFERENCE_CONFIGS)))


def _built_empty(folder: Path, name: str) -> bool:
    """Whether the folder's build.json records config ``name`` with no rows (so it was not written)."""
    try:
        rows = json.loads((folder / "build.json").read_text(encoding="utf-8")).get("rows", {})
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(rows, dict) and rows.get(name) == 0


#: The text fields of a prompt row, each with the rule of :mod:`cultureboard.text` it passes (a null one, but the
#: prompt itself, is absent).
PROMPT_TEXTS = (("text", PROMPT), ("negative_prompt", OPTIONAL_PROMPT), ("artifact_name", NAME))


def prompt_text_problem(row: dict) -> str | None:
    """Why a prompt row's texts may not be in a dataset (:data:`PROMPT_TEXTS`), or None: the check the builder makes
    before writing a row and every reader makes again."""
    for field, rule in PROMPT_TEXTS:
        value = row.get(field)
        if (value is not None or field == "text") and (problem := text_problem(value, rule)) is not None:
            return f"its {field} {problem}"
    return None


def read_prompt_set(folder: str | Path, name: str) -> list[dict]:
    """The rows of prompt set ``name`` (columns of ``cultureboard.records.PROMPT_SCHEMA``), each of whose texts
    passes :func:`prompt_text_problem`."""
    folder = Path(folder)
    if not (folder / "data").is_dir():
        raise CultureboardError(folder, "is not a cultureboard dataset folder (no data/ folder)",
                                "pass the --out folder of `cultureboard build`, or a download of the Hub dataset")
    shards = sorted((folder / "data" / name).glob("*.parquet"))
    if not shards:
        why = " (the build gave it no rows: see the card's Configs section)" if _built_empty(folder, name) else ""
        names = prompt_sets(folder)
        raise CultureboardError(folder, f"has no prompt set {name!r}{why}{DidYouMean(names)(name)}",
                                f"use one of its prompt sets: {', '.join(names) or '(none)'}")
    rows: list[dict] = []
    for shard in shards:
        rows.extend(pq.read_table(shard).to_pylist())
    if rows and "prompt_id" not in rows[0]:
        raise CultureboardError(folder / "data" / name, "is not a prompt set (no prompt_id column)",
                                f"name one of the dataset's prompt sets: {', '.join(prompt_sets(folder)) or '(none)'}")
    for row in rows:
        if problem := prompt_text_problem(row):
            raise CultureboardError(folder / "data" / name, f"prompt {printable(str(row['prompt_id']), 80)}: {problem}",
                                    "rebuild the dataset with `cultureboard build dataset` (the builder writes no such "
                                    "text), or download the official one again")
    return rows


def read_references(folder: str | Path) -> tuple[dict[str, list[dict]], dict[str, str]]:
    """The dataset's reference photographs: ({artifact id: [{rank, sha256, data}, ...] best-ranked first},
    {artifact id: why it has none}); both empty without a references config. Each photograph's bytes are
    checked against its recorded sha256 (the key scorers cache it by)."""
    import hashlib

    folder = Path(folder)
    images: dict[str, list[dict]] = {}
    for shard in sorted((folder / "data" / REFERENCE_CONFIGS[0]).glob("*.parquet")):
        for batch in pq.ParquetFile(shard).iter_batches(batch_size=64, columns=["qid", "rank", "sha256", "image"]):
            for row in batch.to_pylist():
                data = (row["image"] or {}).get("bytes") or b""
                if hashlib.sha256(data).hexdigest() != row["sha256"]:
                    raise CultureboardError(shard, f"holds a reference photograph of {row['qid']} whose bytes do not "
                                            "match its sha256", "rebuild it: cultureboard fetch-references --dataset DIR")
                images.setdefault(row["qid"], []).append({"rank": row["rank"], "sha256": row["sha256"], "data": data})
    missing = {r["qid"]: r["reason"] for shard in sorted((folder / "data" / REFERENCE_CONFIGS[1]).glob("*.parquet"))
               for r in pq.read_table(shard, columns=["qid", "reason"]).to_pylist()}
    return {q: sorted(v, key=lambda r: r["rank"]) for q, v in images.items()}, missing
