"""The held-out prompt split: a keyed, private share of each prompt set that only its custodians score.

Every public prompt can be tuned to; the held-out prompts cannot, since nobody outside the custodians knows
them. A model tuned to the public list scores better on it than on the held-out prompts, and the gap shows it.

The draw. Per (country, concept) stratum of the candidate pool (the refined artifact space), sorted by qid,
``n_held = floor(fraction * min(candidates, target) + 1/2)`` artifacts are held out (at most as many as it has
candidates that are in no other stratum, whose name no other artifact has and that no other artifact's fields
name, since a public row could name those), where ``target`` is the
stratum's curated size (:func:`builder.curation.target_size`): the ``n_held`` candidates with the smallest keyed
rank ``HMAC-SHA256(key, "release/<release>/<qid>/<country>")``. The public sample is then drawn from the other
candidates with ``target - n_held`` (builder/curation.py), so the two sizes add up to the stratum's target. The
builder is public and deterministic, but the rank needs the key: a rebuild without it samples ``target`` from
every candidate, which is not the public sample plus the held-out one, and nothing public tells which of the
candidates the public sample left out were held out. (Where a stratum has no more candidates than its target,
every candidate is used, so its held-out artifacts are the ones the public configs do not name: the split hides
them only among candidates that are left out.)

Every artifact prompt set (CUBE, CuRe, CultDiff) is built again from the held-out artifacts; its rows whose
prompt id or text is also a public row (CuRe's category prompts, CUBE's under-specified ones) stay public only.
The catalogue families (CULTIVate's activities, ECB's grammar) and the native variants are not split: their
prompts come from public files, so a split of them would show by difference with a keyless rebuild.

The fingerprint is ``sha256(salt + "\\n" + lines)``, with ``lines`` the sorted ``prompt_id TAB text`` of every
held-out prompt joined by newlines, and ``salt = HMAC-SHA256(key, "salt/<release>")``: unguessable without the
key, so the fingerprint cannot be matched against guessed subsets, and the same key and release give the same
one. When ``--rotate`` retires a split, its salt and prompts are published (``held-out/retired/release-N.json``
of the public dataset), so anyone can recompute that release's fingerprint and check it is the one scored.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import json
import math
import os
import re
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq

from cultureboard.errors import CultureboardError

from .curation import target_size

KEY_ENV = "CULTUREBOARD_HELD_OUT_KEY"
MAX_FRACTION = 0.5
#: The split's record in the private dataset: release, salt, fingerprint, sizes, the key's check value.
SPLIT_FILE = "held-out.json"
#: Where retired splits are kept: in the private dataset, and (published on rotation) in the public one.
RETIRED_DIR = "held-out/retired"
#: The prompt sets built from artifacts, which a split holds out from (the others come from public catalogues).
SPLIT_SETS = ("cube-awareness", "cube-diversity", "cure-ladder", "cultdiff")


def check_fraction(value) -> float:
    """``value`` as a fraction in (0, MAX_FRACTION], or one clear error."""
    try:
        fraction = float(value)
    except (TypeError, ValueError):
        fraction = math.nan
    if not 0 < fraction <= MAX_FRACTION:
        raise CultureboardError(f"--held-out {value}", f"is not a fraction in (0, {MAX_FRACTION}]",
                                "give the share of each stratum to hold out, e.g. --held-out 0.2")
    return fraction


def load_key(key_file: str | Path | bytes | None = None) -> bytes:
    """The custodians' secret key: the file ``key_file`` (its stripped bytes), else ``$CULTUREBOARD_HELD_OUT_KEY``;
    bytes are the key itself (the demo's, which is public)."""
    if isinstance(key_file, bytes):
        key, where = key_file, "the given key"
    elif key_file is not None:
        try:
            key = Path(key_file).read_bytes().strip()
        except OSError as e:
            raise CultureboardError(key_file, f"cannot be read ({e.strerror})", "give the custodians' key file") from None
        where = str(key_file)
    else:  # the environment
        key = os.environ.get(KEY_ENV, "").strip().encode()
        where = f"${KEY_ENV}"
    if len(key) < 16:
        raise CultureboardError(where, "holds no held-out key of at least 16 characters" if key else "is not set",
                                f"set {KEY_ENV} (or --held-out-key FILE) to the custodians' secret key; make one with "
                                "`python -c 'import secrets; print(secrets.token_hex(32))'`")
    return key


def private_folder(out: str | Path) -> Path:
    """The private dataset's folder beside the public one: ``DIR`` -> ``DIR-held-out``."""
    out = Path(out)
    return out.with_name(f"{out.name}-held-out")


def _mac(key: bytes, message: str) -> str:
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


def key_check(key: bytes) -> str:
    """A value that tells whether a later build uses the same key, and nothing about the key."""
    return _mac(key, "check")[:16]


def salt(key: bytes, release: int) -> str:
    return _mac(key, f"salt/{release}")


def fingerprint(salt_hex: str, prompts: list[tuple[str, str]]) -> str:
    """sha256 of the salt, a newline and the sorted ``prompt_id TAB text`` lines joined by newlines."""
    lines = "\n".join(sorted(f"{pid}\t{text}" for pid, text in prompts))
    return hashlib.sha256(f"{salt_hex}\n{lines}".encode()).hexdigest()


def split_pool(space: list[dict], fraction: float, key: bytes, release: int, sizes: dict | None = None,
               retired: set[tuple[str, str]] = frozenset()) -> tuple[list[dict], list[dict], dict]:
    """``(pool, held, public_sizes)``: the candidates the public sample is drawn from, the held-out artifacts and
    the public sample's target per stratum (``{country: {concept: n}}``, for ``stratified_sample``). Artifacts of
    ``retired`` splits (``(qid, country)`` pairs) are public since their rotation, so they are never held out again."""
    strata: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for a in space:
        strata[(a["country"], a["concept"])].append(a)
    shared = _shared(space)
    pool, held, public_sizes = [], [], defaultdict(dict)
    for (country, concept), rows in sorted(strata.items()):
        target = target_size(country, concept, sizes)
        n_held = math.floor(fraction * min(len(rows), target) + 0.5)
        drawable = [r for r in rows if (r["qid"], country) not in retired and r["qid"] not in shared]
        n_held = min(n_held, len(drawable))
        ranked = sorted(drawable, key=lambda r: (_mac(key, f"release/{release}/{r['qid']}/{country}"), r["qid"]))
        held += ranked[:n_held]
        pool += ranked[n_held:] + [r for r in rows if (r["qid"], country) in retired or r["qid"] in shared]
        public_sizes[country][concept] = target - n_held
    return pool, held, dict(public_sizes)


def _shared(space: list[dict]) -> set[str]:
    """The qids that are never held out, since a public row could name them: those of more than one stratum,
    those whose name another artifact also has, and those another artifact's fields name (a parent class, a root)."""
    strata, names, named = defaultdict(set), defaultdict(set), set()
    for a in space:
        strata[a["qid"]].add((a["country"], a["concept"]))
        names[(a["name"] or "").casefold()].add(a["qid"])
        named.update(v for k, value in a.items() if k != "qid"
                     for v in (value if isinstance(value, (list, tuple)) else [value]) if isinstance(v, str))
    return ({q for q, s in strata.items() if len(s) > 1}
            | {q for qids in names.values() if len(qids) > 1 for q in qids}
            | (named & set(strata)))


def held_out_rows(public_rows: list[dict], rows: list[dict]) -> list[dict]:
    """The rows of a set built from held-out artifacts that are not public: neither their id nor their text is."""
    ids = {r["prompt_id"] for r in public_rows}
    texts = {r["text"] for r in public_rows}
    return [r for r in rows if r["prompt_id"] not in ids and r["text"] not in texts]


def previous_split(private: Path) -> dict | None:
    """The split record of the private dataset ``private`` (None when there is none)."""
    path = private / SPLIT_FILE
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        int(record["release"]), str(record["key_check"])
    except (ValueError, KeyError, TypeError):
        raise CultureboardError(path, "is not a held-out split record", "restore it from the custodians' copy of "
                                "the private dataset") from None
    return record


def next_release(private: Path, key: bytes, rotate: bool) -> tuple[int, dict | None]:
    """``(release, retiring)``: the release to draw, and the previous split when ``rotate`` retires it."""
    previous = previous_split(private)
    if previous is None:
        if rotate:
            raise CultureboardError(private, "holds no held-out split to rotate",
                                    "build once with --held-out FRACTION (no --rotate), or pass the private folder "
                                    "that holds the current split with --held-out-folder")
        return 1, None
    if rotate:
        return int(previous["release"]) + 1, previous
    if previous["key_check"] != key_check(key):
        raise CultureboardError(private / SPLIT_FILE, f"release {previous['release']} was drawn with another key",
                                "use the custodians' key, or draw a new split with --rotate")
    return int(previous["release"]), None


def retired_record(previous: dict, private: Path) -> dict:
    """What a rotation publishes of the split it retires: release, fingerprint, salt and every prompt."""
    prompts = []
    for name in sorted(previous["prompts"]):
        for shard in sorted((private / "data" / name).glob("*.parquet")):
            prompts += [[r["prompt_id"], r["text"]] for r in pq.read_table(shard, columns=["prompt_id", "text"]).to_pylist()]
    artifacts = [[r["qid"], r["country"]] for shard in sorted((private / "data" / "artifacts").glob("*.parquet"))
                 for r in pq.read_table(shard, columns=["qid", "country"]).to_pylist()]
    return {"release": previous["release"], "fingerprint": previous["fingerprint"], "salt": previous["salt"],
            "prompts": sorted(prompts), "artifacts": sorted(artifacts)}


def retired_files(private: Path, retiring: dict | None) -> dict[str, bytes]:
    """Every retired split (the private dataset's, and ``retiring``'s) as ``{relative path: bytes}``."""
    files = {}
    for path in sorted((private / RETIRED_DIR).glob("release-*.json")):
        files[f"{RETIRED_DIR}/{path.name}"] = path.read_bytes()
    if retiring is not None:
        record = retired_record(retiring, private)
        files[f"{RETIRED_DIR}/release-{record['release']}.json"] = (
            json.dumps(record, indent=2, ensure_ascii=False) + "\n").encode()
    return files


def retired_artifacts(files: dict[str, bytes]) -> set[tuple[str, str]]:
    """The ``(qid, country)`` pairs that the retired splits ``files`` (of :func:`retired_files`) published."""
    return {(qid, country) for data in files.values() for qid, country in json.loads(data)["artifacts"]}


def verify_retired(record: dict) -> bool:
    """Whether a published retired split's prompts and salt give its fingerprint (what anyone can check)."""
    return fingerprint(record["salt"], [tuple(p) for p in record["prompts"]]) == record["fingerprint"]


# ------------------------------------------------------------------------------------ the leak scan

def needles(private: Path) -> dict[str, set[str]]:
    """What must never appear in a public file: the private dataset's prompt ids and texts and artifact ids."""
    found = {"prompt id": set(), "prompt text": set(), "artifact id": set()}
    for shard in sorted((private / "data").glob("*/*.parquet")):
        table = pq.read_table(shard)
        names = table.schema.names
        if "prompt_id" in names and "text" in names:
            found["prompt id"].update(table.column("prompt_id").to_pylist())
            found["prompt text"].update(table.column("text").to_pylist())
        if shard.parent.name == "artifacts":
            found["artifact id"].update(table.column("qid").to_pylist())
    return {k: {v for v in vs if v} for k, vs in found.items()}


def _text_of(path: Path) -> str:
    """A file's text as a reader sees it: a parquet shard's rows, an HTML page unescaped, JSON strings decoded."""
    if path.suffix == ".parquet":
        return json.dumps(pq.read_table(path).to_pylist(), ensure_ascii=False, default=str)
    text = path.read_bytes().decode("utf-8", errors="replace")
    if path.suffix in (".html", ".htm", ".xml", ".svg"):
        return html.unescape(text)
    if path.suffix in (".json", ".jsonl"):
        try:
            decoded = [json.loads(line) for line in text.splitlines() if line.strip()] if path.suffix == ".jsonl" \
                else json.loads(text)
        except ValueError:
            return text
        return text + "\n" + "\n".join(_strings(decoded))
    return text


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = [*value, *value.values()]
    return [s for v in value for s in _strings(v)] if isinstance(value, list) else []


def _pattern(values: set[str], kind: str) -> re.Pattern | None:
    """One regex for every value, longest first. An id is a whole word (``Q12`` is not in ``Q123``, nor
    ``cube-awareness/q1/it`` in ``.../it-x``); a text that ends in a letter or digit is not followed by another word
    (``An image of capoeira`` is not in ``An image of capoeira Angola``)."""
    if not values:
        return None
    ordered = sorted(values, key=lambda v: (-len(v), v))
    if kind == "prompt text":
        alternation = "|".join(re.escape(v) + (r"(?!\s?\w)" if v[-1].isalnum() else "") for v in ordered)
        return re.compile(rf"(?<!\w)({alternation})")
    return re.compile(rf"(?<![\w:/-])({'|'.join(map(re.escape, ordered))})(?![\w/-])")


def find_leaks(public: list[str | Path], private: str | Path) -> list[str]:
    """Every public file (under the folders or files ``public``) that holds a held-out prompt id, prompt text or
    artifact id of the private dataset ``private``, one line each. Retired splits are scanned too: a new split
    never holds out an artifact that a retired one published."""
    wanted = needles(Path(private))
    patterns = [(kind, _pattern(wanted[kind], kind)) for kind in wanted]
    leaks = []
    for root in map(Path, public):
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        for path in files:
            text = _text_of(path)
            for kind, pattern in patterns:
                if pattern is not None and (m := pattern.search(text)):
                    leaks.append(f"{path}: holds held-out {kind} {m.group(1)[:80]!r}")
                    break
    return leaks
