"""Make a dataset folder look exactly like ``hf download ORG/NAME --repo-type dataset --local-dir DIR`` left it:
the Hub client's own writer records, for each data file, the commit it was downloaded at."""

from __future__ import annotations

from pathlib import Path

from huggingface_hub._local_folder import write_download_metadata

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def as_hub_download(folder: Path, commit: str = COMMIT) -> Path:
    """Record every ``data/*/*.parquet`` of ``folder`` as downloaded at ``commit``; returns ``folder``."""
    for path in sorted((folder / "data").glob("*/*.parquet")):
        write_download_metadata(folder, path.relative_to(folder).as_posix(), commit, "etag-of-" + path.name)
    return folder
