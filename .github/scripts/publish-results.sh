#!/usr/bin/env bash
# Push results/ to the Hub results dataset $RESULTS_REPO: one split per submission, and latest (files that did
# not change make no change on the Hub); with $ID, check that it has results and name it in the commit.
# Environment: RESULTS_REPO, HF_TOKEN, ID (optional).
set -euo pipefail
if ! compgen -G "results/*/scores.parquet" > /dev/null; then
  echo "No results yet."
  exit 0
fi
submission=()
if [ -n "${ID:-}" ]; then
  submission=(--submission "$ID")
fi
cultureboard publish results results --repo "$RESULTS_REPO" "${submission[@]}"
