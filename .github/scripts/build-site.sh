#!/usr/bin/env bash
# site.yml: build the site into _site/ from results/, submissions/ and dataset/, with every ratings/*/ folder
# (an output of `cultureboard import ratings`) for the trust map, and results-held-out/ (the held-out job's aggregates)
# when there is one. _site/ is what upload-pages-artifact deploys.
set -euo pipefail
mkdir -p results submissions
extra=()
for folder in ratings/*/; do
  if [ -d "$folder" ]; then
    extra+=(--ratings "$folder")
  fi
done
if [ -d results-held-out ]; then
  extra+=(--held-out results-held-out)
fi
HF_HUB_OFFLINE=1 cultureboard build site --results results --dataset dataset --submissions submissions --out _site \
  "${extra[@]}"
