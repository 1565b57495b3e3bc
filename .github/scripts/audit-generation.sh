#!/usr/bin/env bash
# evaluate.yml, score (shard 0, before scoring): the audit of chosen seeds of work/submissions/$ID on dataset/:
# an open pipeline's sample of images (seeded by the pull request number $PR; 0 for a dispatch without one) is
# regenerated with the declared seeds and settings and compared by LPIPS. Beyond the tolerance the step fails,
# naming the images, so no shard is merged and nothing is published; a closed model is self-reported.
# $SCORERS: the scorers (default: the registry's; `tiny` or a scorer config file for a check on a CPU);
# $PIPELINE: a local copy of a pipeline whose revision is local: (tests).
# Writes the verdict as JSON to audit/audit.json (the merge job records it in review.json: "generation verified").
set -euo pipefail
args=("work/submissions/$ID" --dataset dataset --pr "${PR:-0}" --scorers "${SCORERS:-default}")
if [ -n "${PIPELINE:-}" ]; then
  args+=(--pipeline "$PIPELINE")
fi
mkdir -p audit
cultureboard audit-generation "${args[@]}" --json > audit/audit.json || status=$?
cat audit/audit.json
exit "${status:-0}"
