#!/usr/bin/env bash
# evaluate.yml, score: shard $SHARD of $N of the submission $ID (work/submissions/$ID, on dataset/) into
# results/$ID.shards/$SHARD-of-$N/. $SCORERS: the scorers (default: the registry's real checkpoints; `tiny` or a
# scorer config file for a check on a CPU).
set -euo pipefail
cultureboard evaluate "work/submissions/$ID" --dataset dataset --out results --shard "$SHARD/$N" \
  --scorers "${SCORERS:-default}"
