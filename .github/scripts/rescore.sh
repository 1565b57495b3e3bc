#!/usr/bin/env bash
# health.yml: re-score the reference submission $ID (one with committed results) into fresh/$ID, on the dataset
# it pins.
set -euo pipefail
if [ ! -d "submissions/$ID" ] || [ ! -f "results/$ID/summary.json" ]; then
  echo "::error::CULTUREBOARD_REFERENCE_SUBMISSION names no submission with committed results (submissions/<id>, results/<id>/summary.json)"
  exit 1
fi
dataset="$(bash "$(dirname "$0")/fetch-dataset.sh" "submissions/$ID" .datasets)"
cultureboard evaluate "submissions/$ID" --dataset "$dataset" --out fresh
