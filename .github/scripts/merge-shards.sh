#!/usr/bin/env bash
# evaluate.yml, merge: the shards downloaded into shards/shard-I-of-N/ become results/$ID/, the result an
# unsharded run gives, with results/$ID/review.json: the pull request and commits it was scored from, and the run
# that scored it (the site links them), and the audit of chosen seeds' verdict (audit/audit.json, from shard 0).
# Environment: ID, PR, HEAD_SHA, MAIN_SHA (and GitHub's GITHUB_SERVER_URL, GITHUB_REPOSITORY, GITHUB_RUN_ID).
set -euo pipefail
mkdir -p "results/$ID.shards"
for part in shards/shard-*; do
  mv "$part" "results/$ID.shards/${part#shards/shard-}"
done
cultureboard merge-shards results "$ID" --dataset dataset
AUDIT=audit/audit.json python3 "$(dirname "$0")/ci.py" review "results/$ID/review.json"
