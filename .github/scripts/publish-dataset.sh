#!/usr/bin/env bash
# dataset.yml: upload dataset/ to the Hub dataset $DATASET_REPO, tagged $TAG; the commit it prints (in the run
# summary) is what submissions pin.
# Environment: DATASET_REPO, TAG, HF_TOKEN.
set -euo pipefail
if [ -z "${DATASET_REPO:-}" ]; then
  echo "::error::set the repository variable CULTUREBOARD_DATASET_REPO (ORG/NAME)"
  exit 1
fi
cultureboard publish dataset dataset --repo "$DATASET_REPO" --revision "$TAG" | tee published.txt
{
  echo "Published $DATASET_REPO at tag $TAG:"
  echo '```'
  cat published.txt
  echo '```'
} >> "$GITHUB_STEP_SUMMARY"
