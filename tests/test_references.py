"""``cultureboard references`` against a Commons stand-in on 127.0.0.1 (tests/commons_server.py): kept images
and their licence rows, every hostile file rejected in one line, retries, resumption, the card, the
revision, and loading the config with ``datasets``."""

from __future__ import annotations

import hashlib
import io
import json
import random
import struct
import zlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from commons_server import CommonsServer, FakeFile
from cultureboard.builder import references as refmod
from cultureboard.builder.card import render_card
from cultureboard.builder.commons import CommonsFile, license_problem, plain_text
from cultureboard.builder.dataset import Config, artifact_config, card_yaml, write_dataset
from cultureboard.builder.references import MISSING_SCHEMA, card_section, references
from PIL import Image

from cultureboard.cli import main
from cultureboard.dataset_folder import local_revision, references_revision
from cultureboard.errors import CultureboardError

CONTACT = "https://example.org/cultureboard-tests"
FAST = {"contact": CONTACT, "timeout": 0.5, "retries": 2, "backoff": 0.0, "connections": 2, "max_side": 256,
        "max_bytes": 60_000, "per_artifact": 3}


def jpeg(color, size=(96, 80)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def png(color, size=(96, 80)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, "PNG")
    return buf.getvalue()


def noise_png(size=(200, 200)) -> bytes:
    """Incompressible: about 3 bytes a pixel."""
    buf = io.BytesIO()
    Image.frombytes("RGB", size, random.Random(0).randbytes(size[0] * size[1] * 3)).save(buf, "PNG")
    return buf.getvalue()


def bomb_png(width=30000, height=30000) -> bytes:
    """A PNG whose header promises width x height pixels (2.7 GB of RGB) in a few hundred bytes."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\0" * 4096)) + chunk(b"IEND", b""))


GOOD = jpeg("red")
FILES = [
    FakeFile("Filone bread.jpg", GOOD, attribution="Photo: Ann &amp; Bo / <i>Bakery Museum</i>"),
    FakeFile("Filone map.svg", b"<svg xmlns='http://www.w3.org/2000/svg'/>", mime="image/svg+xml"),
    FakeFile("Filone 2.png", png("green"), mime="image/png", license="CC0", license_code="cc0",
             license_url="https://creativecommons.org/publicdomain/zero/1.0/deed.en", artist=None, credit=None),
    FakeFile("Filone 3.jpg", jpeg("blue"), behaviour="redirect-same", license="Public domain", license_code="pd",
             license_url=None, artist="Unknown photographer"),
    FakeFile("Filone 4.jpg", jpeg("yellow")),
    FakeFile("Busy.jpg", jpeg("orange"), behaviour="503-once"),
    FakeFile("Slow.jpg", jpeg("purple"), behaviour="slow-once"),
    FakeFile("Big photo.jpg", jpeg("gray", (300, 200)), size=(4000, 3000), nbytes=5_000_000,
             thumb=jpeg("gray", (256, 192))),
    # hostile or unusable
    FakeFile("Portal.jpg", GOOD, behaviour="html"),
    FakeFile("Bomb.png", bomb_png(), mime="image/png", size=(96, 80)),
    FakeFile("Gone.jpg", GOOD, behaviour="404"),
    FakeFile("Moved.jpg", GOOD, behaviour="redirect-offsite"),
    FakeFile("NC.jpg", GOOD, license="CC BY-NC-SA 4.0", license_code="cc-by-nc-sa-4.0",
             license_url="https://creativecommons.org/licenses/by-nc-sa/4.0"),
    FakeFile("Marked.jpg", GOOD, license="Fair use", license_code=None, license_url=None, non_free=True),
    FakeFile("Custom.jpg", GOOD, license="Ask the museum", license_code=None, license_url=None),
    FakeFile("Half.jpg", GOOD[: len(GOOD) // 2], size=(96, 80)),
    FakeFile("Swapped.jpg", GOOD, sha1="0" * 40),
    FakeFile("Scan.tif", b"II*\x00", mime="image/tiff"),
    FakeFile("Heavy.png", noise_png(), mime="image/png", size=(200, 200), nbytes=5_000),
    FakeFile("Huge.jpg", GOOD, size=(9000, 9000), nbytes=40_000_000),
]
CATEGORIES = {
    "Filone": ["Filone bread.jpg", "Filone map.svg", "Filone 2.png", "Filone 3.jpg", "Filone 4.jpg"],
    "Empty things": [],
}
# qid -> (P18 file, P373 category, the words its reason must contain; None: it keeps images)
ARTIFACTS = {
    "Q1": ("Filone_bread.jpg", "Filone", None),
    "Q2": ("Busy.jpg", None, None),
    "Q3": ("Slow.jpg", None, None),
    "Q4": ("Big photo.jpg", None, None),
    "Q10": ("Portal.jpg", None, "not an image (the server sent text/html)"),
    "Q11": ("Bomb.png", None, "downloaded file is 30000x30000 pixels"),
    "Q12": ("Gone.jpg", None, "download failed (HTTP 404)"),
    "Q13": ("Moved.jpg", None, "redirect to another site refused: http://elsewhere.invalid/"),
    "Q14": ("NC.jpg", None, "non-free licence (CC BY-NC-SA 4.0)"),
    "Q15": ("Marked.jpg", None, "non-free (Commons marks it NonFree"),
    "Q16": ("Custom.jpg", None, "licence not known to be free (Ask the museum)"),
    "Q17": ("Half.jpg", None, "truncated"),
    "Q18": ("Swapped.jpg", None, "SHA-1 differs from the one Commons lists"),
    "Q19": ("Scan.tif", None, "not a JPEG, PNG or WebP image (image/tiff)"),
    "Q20": ("Heavy.png", None, "too large ("),
    "Q21": ("Huge.jpg", None, "too large (9000x9000 px, 40,000,000 bytes) and Commons offers no thumbnail"),
    "Q22": ("Not there.jpg", None, "File:Not there.jpg (P18): not on Commons (no such file)"),
    "Q23": (None, "Empty things", "Category:Empty things: has no files on Commons"),
    "Q24": (None, None, "no Wikidata image (P18) and no Commons category (P373)"),
}


def artifact_rows(artifacts=ARTIFACTS) -> list[dict]:
    rows = []
    for qid, (image, category, _) in artifacts.items():
        for country in (["IT", "JP"] if qid == "Q1" else ["IT"]):
            rows.append({"qid": qid, "name": f"Artifact {qid}", "country": country, "concept": "cuisine",
                         "image": image, "commons_category": category, "source": "wikidata"})
    return rows


def make_dataset(path: Path, rows: list[dict]) -> Path:
    return write_dataset(path, [artifact_config("artifacts", rows, "test artifacts", "CC0-1.0")], {"test": True})


def read(folder: Path, config: str) -> list[dict]:
    return pq.read_table(sorted((folder / "data" / config).glob("*.parquet"))).to_pylist()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    with CommonsServer(FILES, CATEGORIES, slow_seconds=1.5) as server:
        folder = make_dataset(tmp_path_factory.mktemp("refs") / "dataset", artifact_rows())
        revision = local_revision(folder)
        report = references(folder, commons_api=server.api, **FAST)
        yield {"server": server, "folder": folder, "report": report, "revision_before": revision,
               "requests": list(server.requests)}


def test_kept_images_and_their_licence_rows(world):
    rows = read(world["folder"], "references")
    by_qid = {}
    for r in rows:
        by_qid.setdefault(r["qid"], []).append(r)
    assert sorted(by_qid) == ["Q1", "Q2", "Q3", "Q4"]
    q1 = by_qid["Q1"]
    assert [(r["rank"], r["source"], r["file"]) for r in q1] == [
        (1, "p18", "File:Filone bread.jpg"), (2, "category", "File:Filone 2.png"), (3, "category", "File:Filone 3.jpg")]
    first = q1[0]
    assert first["countries"] == ["IT", "JP"] and first["concepts"] == ["cuisine"] and first["name"] == "Artifact Q1"
    assert (first["license"], first["license_url"]) == ("CC BY-SA 4.0", "https://creativecommons.org/licenses/by-sa/4.0")
    assert (first["author"], first["credit"]) == ("Ann & Bo", "Own work")  # HTML stripped, entities decoded
    assert first["attribution"] == ("Photo: Ann & Bo / Bakery Museum, CC BY-SA 4.0 "
                                    "<https://creativecommons.org/licenses/by-sa/4.0>, via Wikimedia Commons")
    assert first["file_page"] == "https://commons.wikimedia.org/wiki/File:Filone%20bread.jpg"
    assert (first["width"], first["height"], first["format"], first["variant"]) == (96, 80, "JPEG", "original")
    assert first["image"]["bytes"] == GOOD and first["image"]["path"] == "q1-1.jpg"
    assert first["sha256"] == hashlib.sha256(GOOD).hexdigest() and first["commons_sha1"] == hashlib.sha1(GOOD).hexdigest()
    assert first["revision"] == "2021-05-04T10:20:30Z"
    assert (q1[1]["license"], q1[1]["author"], q1[1]["format"], q1[1]["image"]["path"]) == ("CC0", None, "PNG", "q1-2.png")
    assert q1[2]["attribution"] == "Unknown photographer, Public domain, via Wikimedia Commons"
    big = by_qid["Q4"][0]  # 4000x3000 on Commons: its 256 px thumbnail is kept, not the original
    assert (big["variant"], big["width"], big["height"]) == ("thumbnail", 256, 192) and big["url"].endswith("/thumb/Big%20photo.jpg")


def test_file_requests_stop_at_k_follow_same_site_redirects_and_retry(world):
    server = world["server"]
    requested = [p for p in world["requests"] if p.startswith(("/files", "/thumb"))]
    assert not [p for p in requested if "Filone%204" in p or "map.svg" in p]  # K reached / not an image: never fetched
    assert requested.count("/files/Filone%20bread.jpg") == 1  # the P18 file is also the category's first: once
    assert "/files/moved/Filone%203.jpg" in requested
    assert requested.count("/files/Busy.jpg") == 2 and requested.count("/files/Slow.jpg") == 2  # failed once, retried
    assert "/files/Big%20photo.jpg" not in requested
    agents = set(server.user_agents)
    assert all(a.startswith("cultureboard/") and CONTACT in a for a in agents)


def test_every_unusable_artifact_has_a_one_line_reason(world):
    missing = {r["qid"]: r for r in read(world["folder"], "references-missing")}
    expected = {qid: words for qid, (_, _, words) in ARTIFACTS.items() if words}
    assert sorted(missing) == sorted(expected)
    for qid, words in expected.items():
        reason = missing[qid]["reason"]
        assert words in reason and "\n" not in reason, (qid, reason)
    assert missing["Q24"]["candidates"] == 0 and missing["Q12"]["candidates"] == 1
    report = world["report"]
    assert (report["images"], report["with_images"], report["missing"], report["artifacts"]) == (6, 4, len(expected), 4 + len(expected))
    assert {"qid": "Q1", "candidate": "File:Filone map.svg", "reason": "not a JPEG, PNG or WebP image (image/svg+xml)"} in report["rejected"]


def test_config_loads_with_datasets_as_pil_images(world, tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    ds = datasets.load_dataset(str(world["folder"]), "references", split="test", cache_dir=str(tmp_path / "hf-cache"))
    assert ds.num_rows == 6 and isinstance(ds.features["image"], datasets.Image)
    image = ds[0]["image"]
    assert isinstance(image, Image.Image) and image.size == (ds[0]["width"], ds[0]["height"])
    missing = datasets.load_dataset(str(world["folder"]), "references-missing", split="test", cache_dir=str(tmp_path / "hf-cache"))
    assert missing.num_rows == world["report"]["missing"] and "reason" in missing.column_names
    artifacts = datasets.load_dataset(str(world["folder"]), "artifacts", split="test", cache_dir=str(tmp_path / "hf-cache"))
    assert artifacts.num_rows == len(artifact_rows())  # the other configs are untouched


def test_card_lists_licences_and_attribution(world):
    folder = world["folder"]
    card = (folder / "README.md").read_text(encoding="utf-8")
    header = yaml.safe_load(card.split("---\n")[1])
    assert [c["config_name"] for c in header["configs"]] == ["artifacts", "references", "references-missing"]
    assert header["configs"][1]["data_files"] == [{"split": "test", "path": "data/references/*.parquet"}]
    # the data's fingerprint keeps the config's `datasets` cache entry apart from another build's
    from cultureboard.provenance import folder_sha256

    for entry in header["configs"][1:]:
        shard = folder_sha256(folder / "data" / entry["config_name"], {".parquet"})
        assert entry["description"].endswith(f"(data sha256:{shard})")
    assert (header["license"], header["license_name"]) == ("other", "mixed")
    assert "## Reference images" in card and card.index("## Reference images") < card.index("## Build provenance")
    assert "| [CC BY-SA 4.0](https://creativecommons.org/licenses/by-sa/4.0) | 4 |" in card
    assert "| [CC0](https://creativecommons.org/publicdomain/zero/1.0/deed.en) | 1 |" in card
    assert "| Public domain | 1 |" in card
    for r in read(folder, "references"):
        assert f"[{r['file']}]({r['file_page']}) | {r['attribution']} |" in card
    record = json.loads((folder / "build.json").read_text())["references"]
    assert record["images"] == 6 and record["licences"] == {"CC BY-SA 4.0": 4, "CC0": 1, "Public domain": 1}
    assert record["commons_api"] == world["server"].api and record["commons_category_column"] is True
    assert json.loads((folder / "build.json").read_text())["test"] is True  # the build's own record is kept
    assert not (folder / refmod.STAGING).exists()


def test_references_stay_out_of_the_prompt_set_revision(world):
    folder = world["folder"]
    assert local_revision(folder) == world["revision_before"]
    assert references_revision(folder).startswith("sha256:") and references_revision(folder) != local_revision(folder)


def test_rerun_downloads_nothing_new(world):
    server, folder = world["server"], world["folder"]
    shards = {p.name: p.read_bytes() for p in (folder / "data" / "references").glob("*.parquet")}
    before = len(server.file_requests())
    report = references(folder, commons_api=server.api, **FAST)
    kept = {r["file"].removeprefix("File:") for r in read(folder, "references")}
    assert all(not [p for p in server.file_requests()[before:] if p.endswith(n.replace(" ", "%20"))] for n in kept)
    assert report["reused"] == 6 and report["images"] == 6
    assert {p.name: p.read_bytes() for p in (folder / "data" / "references").glob("*.parquet")} == shards
    assert local_revision(folder) == world["revision_before"]


def test_interrupted_run_keeps_verified_downloads(tmp_path, monkeypatch):
    artifacts = {q: ARTIFACTS[q] for q in ("Q1", "Q2", "Q12")}
    with CommonsServer(FILES, CATEGORIES) as server:
        folder = make_dataset(tmp_path / "dataset", artifact_rows(artifacts))
        listing = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))

        def crash(*args, **kwargs):
            raise KeyboardInterrupt

        monkeypatch.setattr(refmod, "_write", crash)
        with pytest.raises(KeyboardInterrupt):
            references(folder, commons_api=server.api, **FAST)
        staged = sorted((folder / refmod.STAGING).iterdir())
        assert len(staged) == 4  # Q1's three and Q2's one, verified; not the 404
        assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if refmod.STAGING not in str(p)) == listing
        monkeypatch.undo()
        before = len(server.file_requests())
        report = references(folder, commons_api=server.api, **FAST)
        assert server.file_requests()[before:] == ["/files/Gone.jpg"]  # only the 404 is asked for again
        assert (report["downloaded"], report["reused"], report["images"]) == (0, 4, 4)
        assert not (folder / refmod.STAGING).exists()


def test_imageinfo_continuation_and_a_table_without_categories(tmp_path):
    rows = [r | {"commons_category": None} for r in artifact_rows({q: ARTIFACTS[q] for q in ("Q1", "Q2", "Q4")})]
    folder = make_dataset(tmp_path / "dataset", rows)
    table = pq.read_table(folder / "data" / "artifacts" / "test-00000-of-00001.parquet").drop_columns(["commons_category"])
    pq.write_table(table, folder / "data" / "artifacts" / "test-00000-of-00001.parquet")  # built before P373 was read
    with CommonsServer(FILES, CATEGORIES, imageinfo_page=1) as server:
        report = references(folder, commons_api=server.api, **FAST)
    assert (report["images"], report["commons_category_column"]) == (3, False)
    assert {(r["qid"], r["file"]) for r in read(folder, "references")} == {
        ("Q1", "File:Filone bread.jpg"), ("Q2", "File:Busy.jpg"), ("Q4", "File:Big photo.jpg")}
    # no artifact lacks an image: no empty references-missing config (datasets cannot load one)
    assert not (folder / "data" / "references-missing").exists()
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert [c["config_name"] for c in yaml.safe_load(card.split("---\n")[1])["configs"]] == ["artifacts", "references"]
    assert "Every artifact has at least one image." in card


def test_several_commons_categories_are_taken_in_turn(tmp_path):
    """CuRe lists several categories, joined by ';': their files alternate (A1, B1, A2, B2, ...), so the images
    span every category; the split ignores blanks around the names."""
    extra = [FakeFile("Night 1.jpg", jpeg("navy")), FakeFile("Night 2.jpg", jpeg("black"))]
    categories = CATEGORIES | {"Filone at night": ["Night 1.jpg", "Night 2.jpg"]}
    rows = [{"qid": "Q30", "name": "Two categories", "country": "IT", "concept": "cuisine", "image": None,
             "commons_category": "Filone; Filone at night;Empty things", "source": "cure"}]
    folder = make_dataset(tmp_path / "dataset", rows)
    with CommonsServer(FILES + extra, categories) as server:
        report = references(folder, commons_api=server.api, **FAST)
    assert [(r["rank"], r["file"]) for r in read(folder, "references")] == [
        (1, "File:Filone bread.jpg"), (2, "File:Night 1.jpg"), (3, "File:Night 2.jpg")]  # the SVG between: rejected
    assert report["images"] == 3 and refmod.commons_categories(" A ;; B;") == ["A", "B"]
    assert refmod.commons_categories(None) == [] and refmod.commons_categories("Bust (Rome)") == ["Bust (Rome)"]


def test_no_image_at_all_writes_only_the_missing_list(tmp_path):
    folder = make_dataset(tmp_path / "dataset", artifact_rows({q: ARTIFACTS[q] for q in ("Q12", "Q24")}))
    with CommonsServer(FILES, CATEGORIES) as server:
        report = references(folder, commons_api=server.api, **FAST)
    assert (report["images"], report["missing"]) == (0, 2)
    assert not (folder / "data" / "references").exists() and len(read(folder, "references-missing")) == 2
    assert references_revision(folder).startswith("sha256:")


def test_unreachable_or_broken_api_fails_whole_in_one_line(tmp_path, capsys):
    folder = make_dataset(tmp_path / "dataset", artifact_rows({"Q1": ARTIFACTS["Q1"]}))
    listing = sorted(p.name for p in folder.rglob("*"))
    with CommonsServer() as server:
        closed = server.api  # the port is closed once the server stops
    with pytest.raises(CultureboardError, match=r"--commons-api .*: is unreachable"):
        references(folder, commons_api=closed, **FAST)
    with CommonsServer(FILES, CATEGORIES) as server:
        server.api_status = 404
        code = main(["references", "--dataset", str(folder), "--commons-api", server.api, "--contact", CONTACT])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and err.startswith(f"error: --commons-api {server.api}: answered HTTP 404")
    assert sorted(p.name for p in folder.rglob("*")) == listing  # nothing written


def test_cli_checks_its_options(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("CULTUREBOARD_CONTACT", raising=False)
    folder = make_dataset(tmp_path / "dataset", artifact_rows({"Q1": ARTIFACTS["Q1"]}))
    assert main(["references", "--dataset", str(folder)]) == 2
    assert "error: --contact: is empty" in capsys.readouterr().err
    assert main(["references", "--dataset", str(folder), "--contact", CONTACT, "--connections", "9"]) == 2
    assert main(["references", "--dataset", str(tmp_path), "--contact", CONTACT]) == 1
    assert "is not a dataset folder with an artifacts config" in capsys.readouterr().err


def test_cli_writes_the_config(tmp_path, capsys):
    folder = make_dataset(tmp_path / "dataset", artifact_rows({q: ARTIFACTS[q] for q in ("Q1", "Q12")}))
    with CommonsServer(FILES, CATEGORIES) as server:
        code = main(["references", "--dataset", str(folder), "--commons-api", server.api, "--contact", CONTACT,
                     "--per-artifact", "2", "--connections", "1"])
    out = capsys.readouterr().out
    assert code == 0 and "2 images of 1 of 2 artifacts (downloaded 2, reused 0); 1 artifacts" in out
    assert [r["rank"] for r in read(folder, "references")] == [1, 2]


def _file(license=None, code=None, non_free=False) -> CommonsFile:
    return CommonsFile("File:X.jpg", "u", "p", 1, 1, 1, "0" * 40, "image/jpeg", "t", None, None, None, license, code,
                       None, None, None, None, non_free)


@pytest.mark.parametrize("license,code,free", [
    ("CC BY-SA 4.0", "cc-by-sa-4.0", True), ("CC BY 2.0", "cc-by-2.0", True), ("CC0", "cc0", True),
    ("Public domain", "pd", True), ("GFDL", "gfdl", True), ("FAL", None, True), ("CC BY-SA 3.0 de", None, True),
    ("Attribution", "attribution", True), ("Copyrighted free use", None, True), ("OGL 3", None, True),
    ("CC BY-NC 4.0", "cc-by-nc-4.0", False), ("CC BY-ND 2.0", None, False), ("CC BY-NC-SA 2.0", None, False),
    ("Fair use", None, False), ("All rights reserved", None, False), (None, None, False), ("Custom", None, False),
    ("CC BY-SA 4.0", "cc-by-sa-4.0-nd", False),  # any sign of ND rules it out
])
def test_licence_rules(license, code, free):
    assert (license_problem(_file(license, code)) is None) == free


def test_non_free_mark_wins():
    assert license_problem(_file("CC BY-SA 4.0", "cc-by-sa-4.0", non_free=True)).startswith("non-free (Commons marks")


def test_plain_text():
    assert plain_text('<a href="//x">Jo&nbsp;Doe</a>\n <b>(talk)</b>') == "Jo Doe (talk)"  # no-break space too
    assert plain_text("<span></span>") is None and plain_text(None) is None


def test_render_card_adds_the_section_when_the_config_is_there(world):
    table = pq.read_table(sorted((world["folder"] / "data" / "references").glob("*.parquet")))
    configs = [Config("references", table, "reference photographs", "other")]
    card = render_card(configs, {}, card_yaml(configs))
    assert "## Reference images" in card and "Every artifact has at least one image." in card
    assert card_section([Config("x", MISSING_SCHEMA.empty_table(), "d", "CC0-1.0")]) == []


def test_a_folder_without_the_output_marker_is_refused_before_any_download(tmp_path):
    folder = make_dataset(tmp_path / "dataset", artifact_rows({"Q1": ARTIFACTS["Q1"]}))
    (folder / ".cultureboard-output").unlink()  # as a folder downloaded from the Hub
    with CommonsServer(FILES, CATEGORIES) as server:
        with pytest.raises(CultureboardError, match="downloaded from the Hub is not one"):
            references(folder, commons_api=server.api, **FAST)
        assert server.requests == []
