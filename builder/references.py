"""``cultureboard fetch-references``: real photographs of each artifact, with their licences, as the dataset's
``references`` config.

For every artifact of the dataset's ``artifacts`` config (rows sharing a QID are one artifact) the
candidates are, in this order, its Wikidata image (P18, column ``image``) and the first files of its
Commons category (P373, column ``commons_category``; several categories, as CuRe lists, are joined by ``;``
and their files taken in turn, one from each, so the images span them). Commons describes each candidate
(:mod:`cultureboard.builder.commons`); a candidate is kept when

1. its licence allows redistribution (:func:`~cultureboard.builder.commons.license_problem`),
2. it is a JPEG, PNG or WebP file,
3. it downloads: the original when it fits ``max_side`` px a side and ``max_bytes``, else the thumbnail
   Commons renders to fit ``max_side`` x ``max_side``,
4. the bytes pass :func:`cultureboard.images.inspect_image` (format sniffed, sides and pixel count from
   the header before any decoding, structure, every pixel decoded) and, for an original, their SHA-1 is
   the one Commons lists,

until ``per_artifact`` images are kept; ``rank`` numbers them from 1 in candidate order. An artifact
with none is a row of ``references-missing`` with the reasons, one line.

Downloads run on ``connections`` threads (a politeness limit: at most 4), the API is queried one request at a time,
every read is bounded in time overall (an API answer, a file, the run's downloads: a server sending a byte a second
cannot hold the run), an API answer of another shape than the MediaWiki API gives stops the run before anything is
written (as an unreachable API does), and every request names the project and the operator's contact in its
User-Agent, as Wikimedia's policy asks. Verified downloads are kept in ``DATASET/.references-download/`` (one file
per (URL, Commons SHA-1)) until the dataset is rewritten; a run first unpacks the images already in the
``references`` config there (where their sha256 holds), so an interrupted or repeated run downloads only what it
lacks. Images stay on disk, not in memory: the config is written shard by shard from there.

The dataset folder is rewritten as a whole (unchanged files are hard links): the two configs, the card
(its YAML ``configs`` and a "Reference images" section with the licences and the attribution of every
image) and ``build.json`` (a ``references`` record). The prompt-set revision
(:func:`cultureboard.dataset_folder.local_revision`) leaves these configs out, so submissions stay valid.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from cultureboard import __version__
from cultureboard.atomic import MARKER, atomic_dir, atomic_write_bytes, check_replaceable, output_lock
from cultureboard.dataset_folder import REFERENCE_CONFIGS
from cultureboard.errors import CultureboardError
from cultureboard.images import SUFFIX_OF_FORMAT, ImageLimits, inspect_image
from cultureboard.naming import slug
from cultureboard.provenance import code_provenance, folder_sha256

from .commons import COMMONS_API, IMAGE_MIMES, CommonsAPI, CommonsFile, Rejected, download, file_title, license_problem

if TYPE_CHECKING:
    from .dataset import Config

CONFIG, MISSING_CONFIG = REFERENCE_CONFIGS
SPLIT = "test"
STAGING = ".references-download"
MAX_CONNECTIONS = 4
#: Category files listed per wanted image: spares for the ones that are not images or not free.
CATEGORY_FILES_PER_IMAGE = 5
#: Image bytes per parquet shard.
SHARD_BYTES = 256 * 2**20
#: Overall limit, in seconds, on the downloads of one run: a file still downloading then is left out with the reason.
RUN_SECONDS = 6 * 3600.0
#: Reasons listed per artifact in ``references-missing`` before "and N more".
REASONS_SHOWN = 5
_START, _END = "<!-- cultureboard:references -->", "<!-- /cultureboard:references -->"

_str, _int, _strs = pa.string(), pa.int64(), pa.list_(pa.string())
IMAGE_TYPE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])  # the datasets Image feature's storage
REFERENCE_SCHEMA = pa.schema(
    [
        ("qid", _str),  # the artifact's id, as in the artifacts config
        ("image", IMAGE_TYPE),
        ("name", _str),
        ("countries", _strs),  # every country the artifact is listed under (ISO 3166-1 alpha-2)
        ("concepts", _strs),
        ("rank", _int),  # 1..per_artifact, in candidate order
        ("source", _str),  # p18 | category
        ("file", _str),  # Commons title, "File:..."
        ("url", _str),  # what was downloaded
        ("file_page", _str),
        ("variant", _str),  # original | thumbnail (Commons' rendering within the size limit)
        ("license", _str),  # short name, e.g. "CC BY-SA 4.0"
        ("license_url", _str),
        ("author", _str),
        ("credit", _str),
        ("attribution", _str),  # the credit line to show with the image
        ("width", _int),  # as displayed (EXIF orientation applied)
        ("height", _int),
        ("format", _str),  # JPEG | PNG | WEBP
        ("sha256", _str),  # of the stored bytes
        ("commons_sha1", _str),  # of the Commons file version (the original)
        ("revision", _str),  # upload time of that version
    ],
    metadata={"huggingface": json.dumps({"info": {"features": {"image": {"_type": "Image"}}}})},
)
MISSING_SCHEMA = pa.schema(
    [("qid", _str), ("name", _str), ("countries", _strs), ("concepts", _strs),
     ("candidates", _int),  # candidate files considered
     ("reason", _str)]
)


@dataclass
class Artifact:
    qid: str
    name: str
    countries: list[str]
    concepts: list[str]
    image: str | None
    category: str | None


@dataclass(frozen=True)
class Plan:
    """How one candidate is fetched and checked."""

    source: str
    file: CommonsFile
    url: str
    variant: str
    sha1: str | None  # expected SHA-1 of the bytes (originals only)


@dataclass
class Outcome:
    kept: list[tuple[Plan, object]] = field(default_factory=list)  # (plan, its ImageInfo)
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (candidate, reason)


# --- reading the dataset


def _read_artifacts(folder: Path) -> tuple[list[Artifact], bool]:
    """The artifacts (one per id) and whether the table has a ``commons_category`` column."""
    shards = sorted((folder / "data" / "artifacts").glob("*.parquet"))
    if not (folder / "README.md").is_file() or not shards:
        raise CultureboardError(folder, "is not a dataset folder with an artifacts config (README.md, data/artifacts/)",
                                "pass the --out folder of `cultureboard build` or `cultureboard import`")
    rows: list[dict] = []
    has_category = True
    for shard in shards:
        table = pq.read_table(shard)
        has_category &= "commons_category" in table.column_names
        rows += table.to_pylist()
    by_id: dict[str, Artifact] = {}
    for r in rows:
        a = by_id.setdefault(r["qid"], Artifact(r["qid"], r.get("name") or r["qid"], [], [], r.get("image"),
                                                r.get("commons_category")))
        a.countries.append(r.get("country"))
        a.concepts.append(r.get("concept"))
        a.image = a.image or r.get("image")
        a.category = a.category or r.get("commons_category")
    _add_activities(folder, by_id)
    for a in by_id.values():
        a.countries = sorted({c for c in a.countries if c})
        a.concepts = sorted({c for c in a.concepts if c})
    return sorted(by_id.values(), key=lambda a: a.qid), has_category


def _add_activities(folder: Path, by_id: dict[str, Artifact]) -> None:
    """The social activities of the ``cultivate`` prompt set (ids ``activity:...``, in no artifacts config) join the
    artifacts to illustrate: CULTIVate's EXAG and tau compare images with real photographs of the activity."""
    from cultureboard.dataset_folder import prompt_sets, read_prompt_set

    if "cultivate" not in prompt_sets(folder):
        return
    for row in read_prompt_set(folder, "cultivate"):
        qid = row.get("artifact_id")
        if isinstance(qid, str) and qid.startswith("activity:") and qid not in by_id:
            by_id[qid] = Artifact(qid, row.get("artifact_name") or qid.removeprefix("activity:"), [], [], None, None)
        if isinstance(qid, str) and qid.startswith("activity:"):
            by_id[qid].countries.append(row.get("country"))
            by_id[qid].concepts.append(row.get("category"))


def _unpack_previous(folder: Path, staging: Path) -> None:
    """Write the images of the existing references config into ``staging``, where their sha256 holds
    (they are checked again like downloads before use)."""
    for shard in sorted((folder / "data" / CONFIG).glob("*.parquet")):
        try:
            batches = pq.ParquetFile(shard).iter_batches(batch_size=64, columns=["url", "commons_sha1", "sha256", "image"])
            for batch in batches:
                for r in batch.to_pylist():
                    data, target = (r["image"] or {}).get("bytes"), staging / _key(r["url"], r["commons_sha1"])
                    if data and hashlib.sha256(data).hexdigest() == r["sha256"] and not target.exists():
                        atomic_write_bytes(target, data)
        except (OSError, pa.ArrowException, KeyError, TypeError):
            continue  # an unreadable or foreign table: its images are downloaded again


def _key(url: str, sha1: str) -> str:
    """The staging file name of a download: one per URL and Commons file version."""
    return hashlib.sha256(f"{url}\0{sha1}".encode()).hexdigest()[:40]


# --- choosing and fetching


def commons_categories(value: str | None) -> list[str]:
    """The Commons categories of a ``commons_category`` cell: one name, or several joined by ``;``."""
    return [name.strip() for name in (value or "").split(";") if name.strip()]


def _plan(source: str, f: CommonsFile, max_side: int, max_bytes: int) -> Plan:
    """The download of ``f``, or :class:`Rejected` when its licence, type or size rules it out."""
    if problem := license_problem(f):
        raise Rejected(problem)
    if f.mime not in IMAGE_MIMES:
        raise Rejected(f"not a JPEG, PNG or WebP image ({f.mime or 'no type given'})")
    if max(f.width, f.height) <= max_side and f.size <= max_bytes:
        return Plan(source, f, f.url, "original", f.sha1)
    if f.thumb_url and f.thumb_width and f.thumb_height and max(f.thumb_width, f.thumb_height) <= max_side:
        return Plan(source, f, f.thumb_url, "thumbnail", None)
    raise Rejected(f"too large ({f.width}x{f.height} px, {f.size:,} bytes) and Commons offers no thumbnail within "
                   f"{max_side} px")


class _Fetcher:
    """A plan's image, verified, in the staging folder: found there or downloaded."""

    def __init__(self, staging: Path, limits: ImageLimits, get: Callable[[str], object]):
        self.staging, self.limits, self.get = staging, limits, get
        self.downloaded = self.reused = 0
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    def check(self, plan: Plan, data: bytes, content_type: str = ""):
        """The inspection of ``data``, or :class:`Rejected` with the reason."""
        info = inspect_image(data, limits=self.limits, full_decode=True)
        if info.problems:
            first = info.problems[0]
            mime = content_type.split(";")[0].strip()
            if first.code == "file.not_an_image" and mime and not mime.startswith("image/"):
                raise Rejected(f"not an image (the server sent {mime})")
            raise Rejected(f"downloaded file {first.message}")
        if plan.sha1 and hashlib.sha1(data).hexdigest() != plan.sha1:
            raise Rejected("its SHA-1 differs from the one Commons lists (a damaged or changed download)")
        return info

    def fetch(self, plan: Plan):
        """The inspection of ``plan``'s image, now staged, or :class:`Rejected`."""
        path = self.staging / _key(plan.url, plan.file.sha1)
        with self._guard:
            lock = self._locks.setdefault(path.name, threading.Lock())
        with lock:  # one download per file, whichever artifacts share it
            try:
                info = self.check(plan, path.read_bytes())
                with self._guard:
                    self.reused += 1
                return info
            except (OSError, Rejected):  # not staged, or not usable: download it
                pass
            got = self.get(plan.url)
            with self._guard:
                self.downloaded += 1
            info = self.check(plan, got.data, got.content_type)
            atomic_write_bytes(path, got.data)
            return info


def _collect(candidates: list[tuple[str, str, CommonsFile | str]], fetcher: _Fetcher, per_artifact: int,
             max_side: int, max_bytes: int) -> Outcome:
    """Candidates (label, source, Commons' description or the reason it has none) taken in order until
    ``per_artifact`` are kept; a file listed twice (P18 and category) counts once."""
    out = Outcome()
    seen: set[str] = set()
    for label, source, described in candidates:
        if len(out.kept) >= per_artifact:
            break
        title = described.title if isinstance(described, CommonsFile) else label
        if title in seen:
            continue
        seen.add(title)
        try:
            if isinstance(described, str):
                raise Rejected(described)
            plan = _plan(source, described, max_side, max_bytes)
            info = fetcher.fetch(plan)
        except Rejected as exc:
            out.rejected.append((label, str(exc)))
            continue
        out.kept.append((plan, info))
    return out


def _reason(outcome: Outcome, notes: list[tuple[str, str]]) -> str:
    """One line: why an artifact has no usable image (``notes``: what was found before any candidate)."""
    items = notes + outcome.rejected
    if not items:
        return "no Wikidata image (P18) and no Commons category (P373)"
    shown = "; ".join(f"{what}: {why}" for what, why in items[:REASONS_SHOWN])
    more = f"; and {len(items) - REASONS_SHOWN} more" if len(items) > REASONS_SHOWN else ""
    return shown + more if len(items) == 1 else f"{len(items)} candidates, none usable: {shown}{more}"


def attribution_line(author: str | None, attribution: str | None, license: str | None, license_url: str | None) -> str:
    """The credit line shown with an image, in the form Commons suggests for reuse:
    ``AUTHOR, LICENCE <LICENCE_URL>, via Wikimedia Commons`` (the licensor's own Attribution text first)."""
    who = attribution or author or "Unknown author"
    terms = f"{license} <{license_url}>" if license and license_url else license or "licence on the file page"
    return f"{who}, {terms}, via Wikimedia Commons"


def _row(artifact: Artifact, rank: int, plan: Plan, info) -> dict:
    """A references row; its ``image`` names the staging file (``staged``) until the config is written."""
    f = plan.file
    suffix = SUFFIX_OF_FORMAT[info.format]
    return {
        "qid": artifact.qid, "image": {"staged": _key(plan.url, f.sha1), "path": f"{slug(artifact.qid)}-{rank}{suffix}"},
        "name": artifact.name, "countries": artifact.countries, "concepts": artifact.concepts, "rank": rank,
        "source": plan.source, "file": f.title, "url": plan.url, "file_page": f.file_page, "variant": plan.variant,
        "license": f.license or f.license_code, "license_url": f.license_url, "author": f.author, "credit": f.credit,
        "attribution": attribution_line(f.author, f.attribution, f.license or f.license_code, f.license_url),
        "width": info.width, "height": info.height, "format": info.format, "sha256": info.sha256,
        "commons_sha1": f.sha1, "revision": f.timestamp,
    }


# --- the command


def references(dataset: str | Path, *, contact: str, per_artifact: int = 4, commons_api: str = COMMONS_API,
               connections: int = 3, max_side: int = 1024, max_bytes: int = 20 * 2**20, timeout: float = 30.0,
               retries: int = 3, backoff: float = 1.0, echo: Callable[[str], None] = lambda _: None) -> dict:
    """Add the ``references`` and ``references-missing`` configs to the dataset folder ``dataset``; returns a
    report (counts, downloads, reuse, every rejected candidate)."""
    folder = Path(dataset)
    if not contact or not contact.strip():
        raise CultureboardError("--contact", "is empty", "give a URL or e-mail address where Wikimedia can reach you "
                                "(their User-Agent policy asks for one), or set CULTUREBOARD_CONTACT", exit_code=2)
    if per_artifact < 1 or not 1 <= connections <= MAX_CONNECTIONS or max_side < 64 or max_bytes < 1:
        raise CultureboardError("--per-artifact/--connections/--max-side", "out of range",
                                f"use --per-artifact >= 1, --connections 1..{MAX_CONNECTIONS}, --max-side >= 64",
                                exit_code=2)
    artifacts, has_category = _read_artifacts(folder)
    try:
        check_replaceable(folder, kind="dataset")  # before any download: the folder will be rewritten
    except CultureboardError as exc:
        raise CultureboardError(folder, exc.problem, "run it on a dataset folder written by `cultureboard build` or "
                                "`import` (a folder downloaded from the Hub is not one: rebuild it)") from None
    with output_lock(folder):  # one run at a time: they would share the staging folder
        return _run(folder, artifacts, has_category, contact=contact.strip(), per_artifact=per_artifact,
                    commons_api=commons_api, connections=connections, max_side=max_side, max_bytes=max_bytes,
                    timeout=timeout, retries=retries, backoff=backoff, echo=echo)


def _run(folder: Path, artifacts: list[Artifact], has_category: bool, *, contact: str, per_artifact: int, commons_api: str,
         connections: int, max_side: int, max_bytes: int, timeout: float, retries: int, backoff: float,
         echo: Callable[[str], None]) -> dict:
    user_agent = (f"cultureboard/{__version__} (reference images of the cultureboard benchmark; {contact}) "
                  f"Python-urllib/{sys.version_info.major}.{sys.version_info.minor}")
    api = CommonsAPI(commons_api, user_agent=user_agent, timeout=timeout, retries=retries, backoff=backoff)

    notes: dict[str, list[tuple[str, str]]] = {a.qid: [] for a in artifacts}
    listed: dict[str, list[tuple[str, str, str]]] = {}  # qid -> (label, source, title)
    for i, a in enumerate(artifacts):
        listed[a.qid] = [(f"{file_title(a.image)} (P18)", "p18", file_title(a.image))] if a.image else []
        per_category = []
        for category in commons_categories(a.category):
            titles = api.category_files(category, per_artifact * CATEGORY_FILES_PER_IMAGE)
            if not titles:
                notes[a.qid].append((f"Category:{category}", "has no files on Commons"))
            per_category.append(titles)
        listed[a.qid] += [(t, "category", t) for turn in itertools.zip_longest(*per_category) for t in turn if t]
        if (i + 1) % 100 == 0:
            echo(f"listed the candidates of {i + 1} of {len(artifacts)} artifacts")
    described = api.files([t for items in listed.values() for _, _, t in items], max_side)
    echo(f"{len(described)} candidate files described by Commons in {api.queries} queries")

    staging = folder / STAGING
    try:
        staging.mkdir(exist_ok=True)
    except OSError as exc:
        raise CultureboardError(staging, f"cannot be created ({exc.strerror})", "run on a dataset folder you can write to") from None
    _unpack_previous(folder, staging)
    limits = ImageLimits(max_file_bytes=max_bytes, max_side=max_side, max_pixels=max_side * max_side)
    run_ends = time.monotonic() + RUN_SECONDS
    fetcher = _Fetcher(staging, limits,
                       lambda url: download(url, user_agent=user_agent, max_bytes=max_bytes, timeout=timeout,
                                            retries=retries, backoff=backoff, deadline=run_ends))

    def work(a: Artifact) -> Outcome:
        return _collect([(label, source, described[t]) for label, source, t in listed[a.qid]], fetcher,
                        per_artifact, max_side, max_bytes)

    with ThreadPoolExecutor(max_workers=connections, thread_name_prefix="references") as pool:
        outcomes = dict(zip((a.qid for a in artifacts), pool.map(work, artifacts)))

    rows, missing, rejected = [], [], []
    for a in artifacts:
        o = outcomes[a.qid]
        rejected += [{"qid": a.qid, "candidate": c, "reason": r} for c, r in o.rejected]
        rows += [_row(a, rank, plan, info) for rank, (plan, info) in enumerate(o.kept, 1)]
        if not o.kept:
            missing.append({"qid": a.qid, "name": a.name, "countries": a.countries, "concepts": a.concepts,
                            "candidates": len(listed[a.qid]), "reason": _reason(o, notes[a.qid])})
    record = {
        "commons_api": commons_api, "per_artifact": per_artifact, "max_side": max_side, "max_bytes": max_bytes,
        "artifacts": len(artifacts), "with_images": len(artifacts) - len(missing), "images": len(rows),
        "missing": len(missing), "licences": dict(sorted(Counter(r["license"] for r in rows).items())),
        "commons_category_column": has_category,
        "code": code_provenance(("pyarrow", "pillow")),
    }
    _write(folder, rows, pa.Table.from_pylist(missing, schema=MISSING_SCHEMA), record)
    return {**record, "downloaded": fetcher.downloaded, "reused": fetcher.reused, "api_queries": api.queries,
            "rejected": rejected, "missing_artifacts": missing}


# --- synthetic references (demos and tests)


def synthetic_references(dataset: str | Path, *, per_artifact: int = 3, size: int = 64, seed: int = 0,
                         qids: list[str] | None = None) -> dict:
    """Add a ``references`` config of synthetic images (coloured patterns, not photographs) to the dataset folder
    ``dataset``, through the writer of :func:`references`, so that it loads exactly like a real one: for demos
    and tests, where Commons cannot be reached. Nothing computed against these images measures anything.

    Every artifact (or those of ``qids``) gets ``per_artifact`` PNG images of ``size`` px: a background and an
    ellipse in two colours drawn from the artifact's id (so the images of one artifact look alike and those of
    two artifacts differ), shifted and noised per rank. The same arguments give the same bytes. Rows have
    ``source`` "synthetic", licence CC0 1.0 and no Commons fields; the card section says they are synthetic.
    Returns a report like :func:`references`' (counts)."""
    import io

    import numpy as np
    from PIL import Image

    folder = Path(dataset)
    if per_artifact < 1 or size < 16:
        raise CultureboardError("synthetic references", "need per_artifact >= 1 and size >= 16",
                                "pass per_artifact=3, size=64 (the defaults)")
    artifacts, _ = _read_artifacts(folder)
    if qids is not None:
        unknown = sorted(set(qids) - {a.qid for a in artifacts})
        if unknown:
            raise CultureboardError(folder, f"has no artifacts {', '.join(unknown[:5])}",
                                    "pass ids of its artifacts config")
        artifacts = [a for a in artifacts if a.qid in set(qids)]
    check_replaceable(folder, kind="dataset")
    with output_lock(folder):
        staging = folder / STAGING
        staging.mkdir(exist_ok=True)
        rows = []
        for a in artifacts:
            base = int.from_bytes(hashlib.sha256(f"{seed}:{a.qid}".encode()).digest()[:8], "big")
            palette = np.random.default_rng(base)
            background, shape = palette.integers(0, 256, (2, 3))
            box = palette.uniform(0.15, 0.45, 4) * size
            yy, xx = np.mgrid[0:size, 0:size]
            for rank in range(1, per_artifact + 1):
                rng = np.random.default_rng([base, rank])
                cy, cx = size / 2 + rng.uniform(-0.08, 0.08, 2) * size
                inside = ((yy - cy) / box[0]) ** 2 + ((xx - cx) / box[1]) ** 2 <= 1
                pixels = np.where(inside[..., None], shape, background) + rng.normal(0, 12, (size, size, 3))
                buffer = io.BytesIO()
                Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(buffer, format="PNG")
                data = buffer.getvalue()
                digest = hashlib.sha256(data).hexdigest()
                name = f"synthetic/{slug(a.qid)}-{rank}.png"
                atomic_write_bytes(staging / _key(name, digest), data)
                rows.append({
                    "qid": a.qid, "image": {"staged": _key(name, digest), "path": f"{slug(a.qid)}-{rank}.png"},
                    "name": a.name, "countries": a.countries, "concepts": a.concepts, "rank": rank,
                    "source": "synthetic", "file": name, "url": None, "file_page": None, "variant": "original",
                    "license": "CC0 1.0", "license_url": "https://creativecommons.org/publicdomain/zero/1.0/",
                    "author": "cultureboard", "credit": None,
                    "attribution": "Synthetic image made by cultureboard (not a photograph), CC0 1.0",
                    "width": size, "height": size, "format": "PNG", "sha256": digest, "commons_sha1": None,
                    "revision": None,
                })
        record = {"synthetic": True, "per_artifact": per_artifact, "size": size, "seed": seed,
                  "artifacts": len(artifacts), "with_images": len(artifacts), "images": len(rows), "missing": 0,
                  "licences": {"CC0 1.0": len(rows)} if rows else {}, "code": code_provenance(("pyarrow", "pillow"))}
        section = "\n".join([
            _START, "## Reference images\n",
            f"`{CONFIG}` holds {len(rows)} **synthetic** images of {len(artifacts)} artifacts ({per_artifact} each, "
            f"{size} px coloured patterns made by cultureboard, CC0 1.0), not photographs: they stand in for real "
            "reference photographs in demos and tests, and no metric computed against them measures anything.",
            _END])
        _write(folder, rows, pa.Table.from_pylist([], schema=MISSING_SCHEMA), record, section)
    return record


# --- writing the folder


def _shards(sizes: list[int]) -> list[tuple[int, int]]:
    """(start, stop) of consecutive runs of rows whose image bytes add up to at most ``SHARD_BYTES``
    (a larger image alone); at least one run when there are rows."""
    cuts, total = [0], 0
    for i, n in enumerate(sizes):
        if total and total + n > SHARD_BYTES:
            cuts.append(i)
            total = 0
        total += n
    cuts.append(len(sizes))
    return list(itertools.pairwise(cuts))


def _link_tree(src: Path, dst: Path, skip: set[str]) -> None:
    """Recreate ``src`` in ``dst`` with hard links (copies where a link is refused), leaving out the
    relative paths in ``skip`` and everything under them."""
    for root, dirs, files in os.walk(src):
        rel_root = Path(root).relative_to(src)
        dirs[:] = [d for d in dirs if (rel_root / d).as_posix() not in skip]
        for d in dirs:
            (dst / rel_root / d).mkdir(exist_ok=True)
        for name in files:
            rel = rel_root / name
            if rel.as_posix() in skip:
                continue
            source, target = src / rel, dst / rel
            if source.is_symlink():
                os.symlink(os.readlink(source), target)
                continue
            try:
                os.link(source, target)
            except OSError:
                shutil.copy2(source, target)


def _write(folder: Path, rows: list[dict], missing: pa.Table, record: dict, section: str | None = None) -> None:
    """Rewrite ``folder`` with the two configs (images read from the staging folder), card and build.json.
    A config without rows is not written (``datasets`` cannot load one), nor listed in the card's YAML.
    ``section``: the card's "Reference images" section (default: :func:`card_text` of the rows)."""
    written = [name for name, n in ((CONFIG, len(rows)), (MISSING_CONFIG, missing.num_rows)) if n]
    card = (folder / "README.md").read_text(encoding="utf-8")
    build_json = folder / "build.json"
    build = json.loads(build_json.read_text(encoding="utf-8")) if build_json.is_file() else {}
    build["references"] = record
    skip = {MARKER, STAGING, "README.md", "build.json", f"data/{CONFIG}", f"data/{MISSING_CONFIG}"}
    with atomic_dir(folder, kind="dataset") as tmp:
        _link_tree(folder, tmp, skip)
        staging = folder / STAGING
        runs = _shards([(staging / r["image"]["staged"]).stat().st_size for r in rows]) if rows else []
        for name in written:
            (tmp / "data" / name).mkdir(parents=True)
        for i, (start, stop) in enumerate(runs):
            part = [r | {"image": {"bytes": (staging / r["image"]["staged"]).read_bytes(), "path": r["image"]["path"]}}
                    for r in rows[start:stop]]
            pq.write_table(pa.Table.from_pylist(part, schema=REFERENCE_SCHEMA), tmp / "data" / CONFIG /
                           f"{SPLIT}-{i:05d}-of-{len(runs):05d}.parquet", compression="zstd", row_group_size=100)
        if missing.num_rows:
            pq.write_table(missing, tmp / "data" / MISSING_CONFIG / f"{SPLIT}-00000-of-00001.parquet", compression="zstd")
        # each config's data fingerprint in its card entry keeps its `datasets` cache entry apart from other builds'
        fingerprints = {name: folder_sha256(tmp / "data" / name, {".parquet"}) for name in written}
        card = update_card(card, folder / "README.md", section or card_text(rows, missing.num_rows), written,
                           fingerprints)
        (tmp / "README.md").write_text(card, encoding="utf-8")
        (tmp / "build.json").write_text(json.dumps(build, indent=2, ensure_ascii=False, sort_keys=True) + "\n",
                                        encoding="utf-8")


_DESCRIPTIONS = {CONFIG: "Reference photographs per artifact, with licences and attribution",
                 MISSING_CONFIG: "Artifacts without a usable reference photograph, with the reason"}


def update_card(card: str, where: Path, section: str, written: list[str],
                fingerprints: dict[str, str] | None = None) -> str:
    """``card`` with the ``written`` reference configs (and no other) in its YAML ``configs``, a licence header
    that says the licences are mixed, and ``section`` in place of an earlier one (else before "## Build
    provenance", else at the end)."""
    if not card.startswith("---\n") or card.count("---\n") < 2:
        raise CultureboardError(where, "has no YAML header (--- ... ---)", "rebuild the dataset with `cultureboard build`")
    _, header, body = card.split("---\n", 2)
    meta = yaml.safe_load(header) or {}
    configs = [c for c in meta.get("configs") or [] if c.get("config_name") not in REFERENCE_CONFIGS]
    fingerprints = fingerprints or {}
    meta["configs"] = configs + [{"config_name": n, "data_files": [{"split": SPLIT, "path": f"data/{n}/*.parquet"}]}
                                 | ({"description": f"{_DESCRIPTIONS[n]} (data sha256:{fingerprints[n]})"}
                                    if n in fingerprints else {}) for n in written]
    if meta.get("license") != "other":
        meta.update({"license": "other", "license_name": "mixed",
                     "license_details": "Each config carries its own licence, and each reference image its own: "
                                        "see the Licences and Reference images sections."})
    if _START in body and _END in body:
        before, rest = body.split(_START, 1)
        body = before + section + rest.split(_END, 1)[1]
    elif "\n## Build provenance" in body:
        before, after = body.split("\n## Build provenance", 1)
        body = f"{before}\n{section}\n\n## Build provenance{after}"
    else:
        body = f"{body.rstrip()}\n\n{section}\n"
    return f"---\n{yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)}---\n{body}"


def _cell(text) -> str:
    return " ".join(str(text if text is not None else "").split()).replace("|", "\\|")


#: The columns the card's section is made from.
CARD_COLUMNS = ["qid", "name", "file", "file_page", "license", "license_url", "attribution"]


def card_text(rows: list[dict], n_missing: int) -> str:
    """The card's "Reference images" section from the references rows (``CARD_COLUMNS`` are enough): what
    the configs hold, the licences with their image counts, and the attribution of every image."""
    licences = Counter((r["license"], r["license_url"]) for r in rows)
    missing = (f"`{MISSING_CONFIG}` lists the {n_missing} artifacts without a usable image, with the reason."
               if n_missing else "Every artifact has at least one image.")
    about = (
        f"`{CONFIG}` holds {len(rows)} real photographs of {len({r['qid'] for r in rows})} artifacts from Wikimedia "
        "Commons, for the metrics that compare generated images with real ones: for each artifact its Wikidata image "
        "(P18) first, then files of its Commons category (P373). Only free licences were kept (CC0, public domain, "
        "CC BY, CC BY-SA, GFDL, Free Art Licence, ...; never NC, ND or fair use). Each image keeps its own licence, "
        "author and Commons page in its row (`license`, `license_url`, `author`, `attribution`, `file_page`); reuse "
        "it under that licence, crediting it as `attribution` says. Where the original was larger than the size "
        f"limit, the image is Commons' own thumbnail (`variant`). {missing}\n"
    )
    lines = [
        _START, "## Reference images\n", about,
        "| licence | images |", "|---|---|",
    ]
    for (name, url), n in sorted(licences.items(), key=lambda kv: (-kv[1], str(kv[0]))):
        lines.append(f"| {f'[{_cell(name)}]({url})' if url else _cell(name)} | {n} |")
    lines += ["", "<details><summary>Attribution of every image</summary>\n", "| artifact | file | credit |",
              "|---|---|---|"]
    lines += [f"| {_cell(r['name'])} ({_cell(r['qid'])}) | [{_cell(r['file'])}]({r['file_page']}) | "
              f"{_cell(r['attribution'])} |" for r in rows]
    lines += ["", "</details>", _END]
    return "\n".join(lines)


def card_section(configs: list[Config]) -> list[str]:
    """The "Reference images" section for :func:`cultureboard.builder.card.render_card`, when ``configs``
    hold the references config (and its missing list); else nothing."""
    by_name = {c.name: c for c in configs}
    if CONFIG not in by_name:
        return []
    n_missing = by_name[MISSING_CONFIG].table.num_rows if MISSING_CONFIG in by_name else 0
    return [card_text(by_name[CONFIG].table.select(CARD_COLUMNS).to_pylist(), n_missing)]
