"""The site's images served from the results dataset on the Hub (``build site --media hub``) instead of copied into
the site: at 1,000 submissions their thumbnails and full-size copies would be most of GitHub Pages' 1 GB.

Two steps, so that every page links one pinned commit:

1. ``cultureboard publish media RESULTS --submissions DIR --repo ORG/NAME --out MEDIA``: the thumbnails and
   full-size copies of every result's local images, made and verified exactly as a local build makes them
   (:func:`.thumbs.start_media`: only verified bytes are published), into the folder ``MEDIA`` (``thumbs/<id>/``,
   ``images/<id>/``; an earlier ``MEDIA`` is reused where its files are proven unchanged), uploaded as one commit
   under ``media/`` of the results dataset repository. ``MEDIA/published.json`` (:data:`PUBLISHED`) then records
   the repository, the commit and the status of every image.
2. ``cultureboard build site ... --media hub --media-from MEDIA``: no image file is written into the site; every
   thumbnail and full-size link is ``https://huggingface.co/datasets/ORG/NAME/resolve/COMMIT/media/...``, and the
   pages' Content-Security-Policy allows images from the Hub (:data:`HUB_CSP`). The build itself needs no network.

The file names are the images' sha256, so the commit pins their bytes twice over.
"""

from __future__ import annotations

import json
import re
import os
import stat
from pathlib import Path

from cultureboard.atomic import atomic_dir
from cultureboard.errors import CultureboardError

#: The record of a media folder's upload, in the folder.
PUBLISHED = "published.json"
#: Where the media go in the results dataset repository.
IN_REPO = "media"
HUB = "https://huggingface.co"
#: The pages' policy in hub mode: the site's own files, and images from the Hub (its file addresses redirect to
#: its content servers).
HUB_CSP = ("default-src 'none'; img-src 'self' data: https://huggingface.co https://*.huggingface.co https://*.hf.co; "
           "style-src 'self'; script-src 'self'; base-uri 'none'; form-action 'none'")
_COMMIT = re.compile(r"[0-9a-f]{40}")
_REPO = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")
_FIX = ("run `cultureboard publish media RESULTS --submissions DIR --repo ORG/NAME --out MEDIA` first and pass that "
        "folder as --media-from MEDIA (or build with --media local)")


def make_media(results, out: Path, px: int = 256, *, workers: int | None = None) -> dict:
    """Make the image files of ``results`` (:class:`~.load.Result` objects) into ``out`` (replaced atomically, its
    earlier files reused where proven unchanged); returns {(sid, sha256): {status, full}} and the problems
    (images left out), as :meth:`.thumbs.Media.result` does."""
    from .thumbs import start_media

    out = Path(out)
    with atomic_dir(out, kind="media") as tmp:
        with start_media(results, out, tmp, px, workers=workers) as pending:
            media, problems = pending.result()
    return {"media": media, "problems": problems}


def record(out: Path, repo: str, commit: str, media: dict) -> None:
    """Write :data:`PUBLISHED` into ``out``: the repository, the commit, and {sid: {sha256: {status, full}}}."""
    images: dict[str, dict] = {}
    for (sid, sha), entry in sorted(media.items()):
        images.setdefault(sid, {})[sha] = {"status": entry["status"], "full": entry["full"]}
    (Path(out) / PUBLISHED).write_text(json.dumps({"repo": repo, "commit": commit, "images": images},
                                                  sort_keys=True) + "\n")


def publish_media(results: str | Path, submissions: str | Path, repo: str, out: str | Path, *, px: int = 256,
                  workers: int | None = None, api=None) -> dict:
    """Step 1 of the module docstring; returns {repo, commit, images, problems}."""
    from cultureboard.hub import check_repo_id, upload_folder

    from .load import load_results

    check_repo_id(repo)
    loaded, _ = load_results(Path(results), Path(submissions))
    made = make_media(loaded, Path(out), px, workers=workers)
    info = upload_folder(repo, out, f"Site media of {len(loaded)} results", api=api, path_in_repo=IN_REPO,
                         ignore_patterns=[PUBLISHED])
    commit = getattr(info, "oid", None)
    if not (isinstance(commit, str) and _COMMIT.fullmatch(commit)):
        raise CultureboardError(f"--repo {repo}", f"answered the upload without a commit id ({commit!r})",
                                "upload again; the pages must link one commit of the media")
    record(Path(out), repo, commit, made["media"])
    return {"repo": repo, "commit": commit, "images": len(made["media"]), "problems": made["problems"]}


def read_published(folder: str | Path | None) -> dict:
    """The :data:`PUBLISHED` record of ``folder`` as {repo, commit, media: {(sid, sha256): {status, full, thumb,
    external}}} with Hub addresses; one clear error when there is none or it is not one."""
    if folder is None:
        raise CultureboardError("--media hub", "has no results repository to link the images from", _FIX, exit_code=2)
    path = Path(folder) / PUBLISHED
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            raise OSError("not a regular file")
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise CultureboardError(path, f"cannot be read as a media record ({exc})", _FIX, exit_code=2) from None
    ok = (isinstance(found, dict) and isinstance(found.get("repo"), str) and _REPO.fullmatch(found["repo"])
          and isinstance(found.get("commit"), str) and _COMMIT.fullmatch(found["commit"])
          and isinstance(found.get("images"), dict))
    if not ok:
        raise CultureboardError(path, "is not a media record (repo ORG/NAME, a 40-hex commit, images)", _FIX,
                                exit_code=2)
    base = f"{HUB}/datasets/{found['repo']}/resolve/{found['commit']}/{IN_REPO}/"
    media = {}
    for sid, images in found["images"].items():
        for sha, entry in (images.items() if isinstance(images, dict) else ()):
            if not (isinstance(entry, dict) and re.fullmatch(r"[0-9a-f]{64}", sha)):
                continue
            status, full = entry.get("status"), entry.get("full")
            shown = status == "ok" and isinstance(full, str) and full == f"images/{sid}/{sha}{Path(full).suffix}"
            media[sid, sha] = {"status": status if isinstance(status, str) else "not fetched",
                               "full": base + full if shown else None,
                               "thumb": f"{base}thumbs/{sid}/{sha}.webp" if shown else None, "external": shown}
    return {"repo": found["repo"], "commit": found["commit"], "media": media}


class Published:
    """The image files of a hub-mode build: already made and uploaded, so every submission is ready at once (the
    interface of :class:`.thumbs.Media` that the build uses)."""

    waited = 0.0

    def __init__(self, media: dict):
        self.media = media

    def ready(self, sid: str) -> dict:
        return self.media

    def result(self):
        return self.media, []

    def __enter__(self) -> "Published":
        return self

    def __exit__(self, *exc) -> None:
        return None
