#!/usr/bin/env bash
# health.yml: compare the fresh results of $ID with the committed ones (drift beyond $TOLERANCE fails); the
# report is kept in drift.txt for the health issue.
set -euo pipefail
status=0
cultureboard compare-results "results/$ID" "fresh/$ID" --tolerance "$TOLERANCE" > drift.txt || status=$?
cat drift.txt
exit "$status"
