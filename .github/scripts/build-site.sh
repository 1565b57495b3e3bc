#!/usr/bin/env bash
# site.yml: build the site into _site/ from results/, submissions/ and dataset/, with every ratings/*/ folder
# (an output of `cultureboard import ratings`) for the trust map. _site/ is what upload-pages-artifact deploys.
set -euo pipefail
mkdir -p results submissions
ratings=()
for folder in ratings/*/; do
  if [ -d "$folder" ]; then
    ratings+=(--ratings "$folder")
  fi
done
HF_HUB_OFFLINE=1 cultureboard build site --results results --dataset dataset --submissions submissions --out _site \
  "${ratings[@]}"
