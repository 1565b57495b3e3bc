"""``cultureboard publish dataset``: upload a dataset folder to the Hugging Face Hub.

The upload is one commit; its hash is what submissions pin as ``dataset_revision``. With
``revision`` a tag of that name is created at the commit; with ``create_pr`` the commit goes to a
Hub pull request instead of ``main``. The token comes from ``HF_TOKEN`` or the huggingface_hub login.

A private held-out dataset (a folder with ``held-out.json``, builder/held_out.py) goes only to a private repository:
one is created private, and a public one is refused before the upload. A public dataset whose private dataset
lies beside it is scanned first (:func:`builder.held_out.find_leaks`) and refused if it names a held-out prompt or
artifact.
"""

from __future__ import annotations

from pathlib import Path

from cultureboard.atomic import MARKER
from cultureboard.errors import CultureboardError
from cultureboard.hub import check_repo_id, upload_folder

from .held_out import SPLIT_FILE, find_leaks, private_folder
from .references import STAGING  # downloads of an interrupted `cultureboard references` run


def publish_dataset(folder: str | Path, repo: str, revision: str | None = None, create_pr: bool = False, api=None) -> dict:
    """Upload ``folder`` to dataset repo ``repo``; returns {commit, pr_url, tag}."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    folder = Path(folder)
    if not (folder / "README.md").is_file() or not (folder / "build.json").is_file():
        raise CultureboardError(folder, "is not a dataset folder (no README.md dataset card and build.json)",
                                "pass the --out folder of `cultureboard build` or `cultureboard import`")
    check_repo_id(repo)
    private = (folder / SPLIT_FILE).is_file()
    if not private:
        _check_no_leak(folder)
    api = api or HfApi()
    info = upload_folder(repo, folder, f"cultureboard {'held-out ' if private else ''}dataset"
                         f"{f' {revision}' if revision else ''}", api=api, create_pr=create_pr,
                         ignore_patterns=[MARKER, f"{STAGING}/*"], private=private)
    if revision:
        try:
            api.create_tag(repo, repo_type="dataset", tag=revision, revision=info.oid)
        except HfHubHTTPError as exc:
            raise CultureboardError(f"--revision {revision}", f"the Hub refused the tag ({exc})",
                                    "choose a tag that does not exist yet (the upload itself succeeded: "
                                    f"commit {info.oid})") from None
    return {"commit": info.oid, "pr_url": getattr(info, "pr_url", None), "tag": revision}


def _check_no_leak(folder: Path) -> None:
    """A public dataset whose private dataset is beside it must name none of its held-out prompts or artifacts."""
    private = private_folder(folder)
    if (private / SPLIT_FILE).is_file() and (leaks := find_leaks([folder], private)):
        raise CultureboardError(leaks[0].split(": ", 1)[0], leaks[0].split(": ", 1)[1] + f" of {private}"
                                + (f" (and {len(leaks) - 1} more files)" if len(leaks) > 1 else ""),
                                "rebuild the public dataset with the custodians' key (build dataset --held-out); "
                                "nothing was uploaded")
