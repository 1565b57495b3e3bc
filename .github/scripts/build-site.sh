#!/usr/bin/env bash
# site.yml: build the site into _site/ from results/, submissions/ and dataset/, with every ratings/*/ folder
# (an output of `cultureboard import ratings`) for the trust map, and results-held-out/ (the held-out job's aggregates)
# when there is one. _site/ is what upload-pages-artifact deploys. With SITE_MEDIA=hub the thumbnails and full-size
# images go to the results dataset $RESULTS_REPO instead (HF_TOKEN; `cultureboard publish media`, kept in _media/ for
# the next run) and the pages link them there at that commit: at 1,000 submissions they would not fit in Pages' 1 GB.
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
if [ "${SITE_MEDIA:-local}" = hub ]; then
  cultureboard publish media results --submissions submissions --repo "$RESULTS_REPO" --out _media
  extra+=(--media hub --media-from _media)
fi
HF_HUB_OFFLINE=1 cultureboard build site --results results --dataset dataset --submissions submissions --out _site \
  "${extra[@]}"
