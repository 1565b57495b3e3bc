#!/usr/bin/env bash
# site.yml: the dataset the site describes, into dataset/: $DATASET_REPO at $DATASET_REVISION from the Hub, or
# (either unset) the offline build of the shipped sample.
set -euo pipefail
if [ -n "${DATASET_REPO:-}" ] && [ -n "${DATASET_REVISION:-}" ]; then
  HF_HUB_OFFLINE=0 hf download "$DATASET_REPO" --repo-type dataset --revision "$DATASET_REVISION" --local-dir dataset > /dev/null
else
  HF_HUB_OFFLINE=1 cultureboard build dataset --out dataset
fi
