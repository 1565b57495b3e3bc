"""``cultureboard publish dataset``: upload a dataset folder to the Hugging Face Hub.

The upload is one commit; its hash is what submissions pin as ``dataset_revision``. With
``revision`` a tag of that name is created at the commit; with ``create_pr`` the commit goes to a
Hub pull request instead of ``main``. The token comes from ``HF_TOKEN`` or the huggingface_hub login.
"""

from __future__ import annotations

from pathlib import Path

from cultureboard.atomic import MARKER
from cultureboard.errors import CultureboardError


def publish_dataset(folder: str | Path, repo: str, revision: str | None = None, create_pr: bool = False, api=None) -> dict:
    """Upload ``folder`` to dataset repo ``repo``; returns {commit, pr_url, tag}."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    folder = Path(folder)
    if not (folder / "README.md").is_file() or not (folder / "build.json").is_file():
        raise CultureboardError(folder, "is not a dataset folder (no README.md dataset card and build.json)",
                                "pass the --out folder of `cultureboard build` or `cultureboard import`")
    if repo.count("/") != 1 or not all(repo.split("/")):
        raise CultureboardError(f"--repo {repo}", "is not ORG/NAME", "name the Hub dataset repository as ORG/NAME", exit_code=2)
    api = api or HfApi()
    try:
        api.create_repo(repo, repo_type="dataset", exist_ok=True)
        info = api.upload_folder(
            repo_id=repo, repo_type="dataset", folder_path=str(folder), create_pr=create_pr,
            commit_message=f"cultureboard dataset{f' {revision}' if revision else ''}",
            ignore_patterns=[MARKER],
        )
        commit = info.oid
        if revision:
            api.create_tag(repo, repo_type="dataset", tag=revision, revision=commit)
    except HfHubHTTPError as exc:
        raise CultureboardError(f"--repo {repo}", f"the Hub refused the upload ({exc})",
                                "check HF_TOKEN has write access to the repository, and that the tag does not exist yet") from None
    except Exception as exc:  # offline mode, DNS, refused connection: the transport's own error types
        raise CultureboardError(f"--repo {repo}", f"the Hub is unreachable ({exc.__class__.__name__}: {exc})",
                                "run publish on a machine with network access and HF_TOKEN set") from None
    return {"commit": commit, "pr_url": getattr(info, "pr_url", None), "tag": revision}
