#!/usr/bin/env bash
# The dataset a submission pins, in a folder under DATASETS (reused when it is there), printed on stdout: a
# public Hub dataset at a commit is downloaded at that commit; any other pin (a local sha256: fingerprint) gets
# the offline build of the shipped sample. With $REQUIRED_DATASET set, a Hub pin of another dataset is refused.
# Usage: fetch-dataset.sh SUBMISSION_FOLDER DATASETS
set -euo pipefail
here="$(dirname "$0")"
read -r kind repo revision < <(python3 "$here/ci.py" pin "$1")
if [ "$kind" = hub ]; then
  if [ -n "${REQUIRED_DATASET:-}" ] && [ "$repo" != "$REQUIRED_DATASET" ]; then
    echo "::error::the submission pins the dataset $repo, not $REQUIRED_DATASET" >&2
    exit 1
  fi
  folder="$2/${repo//\//__}@$revision"
  if [ ! -d "$folder/data" ]; then
    HF_HUB_OFFLINE=0 hf download "$repo" --repo-type dataset --revision "$revision" --local-dir "$folder" > /dev/null
  fi
else
  folder="$2/sample"
  if [ ! -d "$folder/data" ]; then
    HF_HUB_OFFLINE=1 cultureboard build dataset --out "$folder" > /dev/null
  fi
fi
echo "$folder"
