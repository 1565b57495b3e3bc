"""``build site --media hub`` (site/media_hub.py): ``publish media`` makes and uploads the thumbnails and full-size
copies under media/ of the results dataset and records the commit; a hub-mode build writes no image file and links
every image at that commit, with a policy that lets the Hub's images load; bad input is one line and exit 2."""

from __future__ import annotations

import html
import json
import re
import shutil

import pytest

import site_worlds
from cultureboard.cli import main
from cultureboard.errors import CultureboardError
from cultureboard.site import media_hub
from cultureboard.site.render import build_site

COMMIT = "c" * 40
BASE = f"https://huggingface.co/datasets/lab/results/resolve/{COMMIT}/media/"


class FakeHub:
    """Records upload_folder's arguments and keeps a copy of what it was given."""

    def __init__(self, keep):
        self.calls, self.keep = [], keep

    def create_repo(self, repo_id, **kw):
        self.calls.append(("create_repo", repo_id))

    def upload_folder(self, **kw):
        self.calls.append(("upload_folder", kw))
        shutil.copytree(kw["folder_path"], self.keep)
        return type("CommitInfo", (), {"oid": COMMIT})()


@pytest.fixture(scope="module")
def small(tmp_path_factory, tiny_scorers):
    """Two families' results (cultdiff and ecb: few images) of the site tests' world, their media published to a
    fake Hub, and a site built from them in each mode."""
    base = site_worlds.five_families(tmp_path_factory.getbasetemp(), tiny_scorers)
    root = tmp_path_factory.mktemp("media-hub")
    results = root / "results"
    for prompt_set in ("cultdiff", "ecb"):
        for sid in base["ids"][prompt_set]:
            shutil.copytree(base["results"] / sid, results / sid)
    hub = FakeHub(root / "uploaded")
    info = media_hub.publish_media(results, base["submissions"], "lab/results", root / "media", api=hub)
    local = build_site(results, base["dataset"], base["submissions"], root / "local", built="2026-01-01")
    remote = build_site(results, base["dataset"], base["submissions"], root / "hub", built="2026-01-01", media="hub",
                        media_from=root / "media")
    return {"root": root, "base": base, "results": results, "hub": hub, "info": info, "local": local, "remote": remote}


def test_publish_media_uploads_the_images_under_media_at_one_commit(small):
    (call, kw), = [c for c in small["hub"].calls if c[0] == "upload_folder"]
    assert kw["repo_id"] == "lab/results" and kw["path_in_repo"] == "media" and kw["ignore_patterns"] == ["published.json"]
    uploaded = small["root"] / "uploaded"
    record = json.loads((small["root"] / "media" / "published.json").read_text())
    assert record["repo"] == "lab/results" and record["commit"] == COMMIT == small["info"]["commit"]
    ok = [(sid, sha, e["full"]) for sid, images in record["images"].items() for sha, e in images.items()
          if e["status"] == "ok"]
    assert ok and len(ok) == small["info"]["images"]
    for sid, sha, full in ok:  # every published image has its full-size copy and its thumbnail in the upload
        assert full == f"images/{sid}/{sha}.png" and (uploaded / full).is_file()
        assert (uploaded / "thumbs" / sid / f"{sha}.webp").is_file()


def test_a_hub_build_writes_no_image_and_links_each_at_the_commit(small):
    local, remote = small["root"] / "local", small["root"] / "hub"
    assert (local / "thumbs").is_dir() and (local / "images").is_dir()
    assert not (remote / "thumbs").exists() and not (remote / "images").exists()
    sid = small["base"]["ids"]["cultdiff"][0]
    pages = sorted((remote / "model" / sid).glob("images-*.html"))
    text = pages[0].read_text()
    thumbs = re.findall(r'<img src="([^"]+)"', text)
    assert thumbs and all(t.startswith(f"{BASE}thumbs/{sid}/") and t.endswith(".webp") for t in thumbs)
    fulls = re.findall(r'<a href="(https://huggingface.co/[^"]+)" rel="noopener noreferrer" title="Full size">', text)
    assert len(fulls) == len(thumbs) and all(f.startswith(f"{BASE}images/{sid}/") for f in fulls)
    # the same page of the local build links the same files in the site
    local_thumbs = re.findall(r'<img src="([^"]+)"', (local / "model" / sid / pages[0].name).read_text())
    assert [t.rsplit("/", 1)[1] for t in local_thumbs] == [t.rsplit("/", 1)[1] for t in thumbs]
    assert all(t.startswith("../../thumbs/") for t in local_thumbs)
    assert "img-src 'self' data: https://huggingface.co" in _policy(pages[0])
    assert "huggingface" not in _policy(local / "index.html") and "https:" not in _policy(local / "index.html")
    compare = next((remote / "models").glob("*.data.js")).read_text()
    assert BASE + "thumbs/" in compare and '"thumbs/' not in compare


def _policy(page) -> str:
    return html.unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page.read_text()).group(1))


def test_a_hub_build_without_a_media_record_is_one_line(small, tmp_path, capsys):
    args = (small["results"], small["base"]["dataset"], small["base"]["submissions"], tmp_path / "site")
    with pytest.raises(CultureboardError, match="has no results repository") as exc:
        build_site(*args, media="hub")
    assert exc.value.exit_code == 2 and not (tmp_path / "site").exists()
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "published.json").write_text(json.dumps({"repo": "lab/results", "commit": "main", "images": {}}))
    with pytest.raises(CultureboardError, match="is not a media record"):
        build_site(*args, media="hub", media_from=tmp_path / "bad")
    with pytest.raises(CultureboardError, match="cannot be read as a media record"):
        build_site(*args, media="hub", media_from=tmp_path / "nowhere")
    code = main(["build", "site", "--results", str(args[0]), "--dataset", str(args[1]), "--submissions", str(args[2]),
                 "--out", str(args[3]), "--media", "hub"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--media hub" in err and "publish media" in err
    assert not (tmp_path / "site").exists()


def test_publish_media_without_a_hub_is_one_line(small, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    args = ["publish", "media", str(small["results"]), "--submissions", str(small["base"]["submissions"]), "--out",
            str(tmp_path / "media")]
    code = main(args + ["--repo", "lab/results"])
    err = capsys.readouterr().err
    assert code != 0 and len(err.strip().splitlines()) == 1 and "lab/results" in err
    assert not (tmp_path / "media" / "published.json").exists()
    code = main(args + ["--repo", "no-slash"])
    err = capsys.readouterr().err
    assert code == 2 and "ORG/NAME" in err
