#!/usr/bin/env bash
# evaluate.yml, held-out: generate and score the held-out prompts (private/) with the open pipeline of the submission
# $ID (work/submissions/$ID, public results in results/) and write only its aggregates to held-out/$ID.json. The
# images and per-image scores are made under $RUNNER_TEMP and removed; the command's messages (which could name a
# held-out prompt) stay in $RUNNER_TEMP, and only its table of aggregates is printed. private/ is removed at the end,
# whatever happens. $SCORERS: as score-shard.sh; $PIPELINE: a local pipeline folder (tests; the workflow never sets it).
# Environment: ID.
set -euo pipefail
work="$RUNNER_TEMP/held-out-work"
trap 'rm -rf private "$work"' EXIT
mkdir -p "$work"
args=("work/submissions/$ID" --dataset dataset --private private --results results --out held-out
      --scorers "${SCORERS:-default}" --work "$work")
if [ -n "${PIPELINE:-}" ]; then
  args+=(--pipeline "$PIPELINE")
fi
if cultureboard evaluate-held-out "${args[@]}" > "$RUNNER_TEMP/held-out.out" 2> "$RUNNER_TEMP/held-out.err"; then
  cat "$RUNNER_TEMP/held-out.out"
  {
    echo "Held-out split of $ID:"
    echo '```'
    cat "$RUNNER_TEMP/held-out.out"
    echo '```'
  } >> "$GITHUB_STEP_SUMMARY"
else
  echo "::error::held-out scoring of $ID failed; its messages may name held-out prompts, so they are not shown (rerun it where the private dataset is: cultureboard evaluate-held-out)"
  exit 1
fi
