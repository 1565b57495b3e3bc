"""The leaderboard's Hub dataset, and uploads to the Hugging Face Hub shared by ``publish dataset`` and
``publish results``."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import CultureboardError

#: The official Hub dataset of the leaderboard: the one dataset repository submissions must pin (by a
#: commit). CI reads the same name from the repository variable ``CULTUREBOARD_DATASET_REPO``; a fork of
#: the leaderboard sets that environment variable to its own dataset.
OFFICIAL_DATASET = os.environ.get("CULTUREBOARD_DATASET_REPO") or "cultureboard/cultureboard"
#: How a team gets the official dataset, pinned to one revision (a tag such as v1.0, or a commit).
DOWNLOAD_COMMAND = f"hf download {OFFICIAL_DATASET} --repo-type dataset --revision REV --local-dir dataset"


def check_repo_id(repo: str) -> None:
    if repo.count("/") != 1 or not all(repo.split("/")):
        raise CultureboardError(f"--repo {repo}", "is not ORG/NAME", "name the Hub dataset repository as ORG/NAME", exit_code=2)


def upload_folder(repo: str, folder: str | Path, message: str, *, api=None, create_pr: bool = False,
                  ignore_patterns: list[str] | None = None, private: bool = False, path_in_repo: str | None = None):
    """Create the dataset repo if needed and upload ``folder`` as one commit (into ``path_in_repo``, default the
    repository's root); returns the CommitInfo.
    ``private``: the repository is created private, and one that exists and is public is refused before any
    upload. Refusals and transport failures become one-line errors with the fix."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    api = api or HfApi()
    try:
        if private:
            api.create_repo(repo, repo_type="dataset", exist_ok=True, private=True)
            if not api.repo_info(repo, repo_type="dataset").private:
                raise CultureboardError(f"--repo {repo}", "is a public repository, and this is the private held-out "
                                        "dataset", "create a private (or gated) dataset repository for it, or make "
                                        "this one private on the Hub; nothing was uploaded")
        else:
            api.create_repo(repo, repo_type="dataset", exist_ok=True)
        return api.upload_folder(repo_id=repo, repo_type="dataset", folder_path=str(folder), create_pr=create_pr,
                                 commit_message=message, ignore_patterns=ignore_patterns, path_in_repo=path_in_repo)
    except CultureboardError:
        raise
    except HfHubHTTPError as exc:
        raise CultureboardError(f"--repo {repo}", f"the Hub refused the upload ({exc})",
                                "check that HF_TOKEN is set and has write access to the repository") from None
    except Exception as exc:  # offline mode, DNS, refused connection: the transport's own error types
        raise CultureboardError(f"--repo {repo}", f"the Hub is unreachable ({exc.__class__.__name__}: {exc})",
                                "run publish on a machine with network access (HF_HUB_OFFLINE unset) and HF_TOKEN set") from None
