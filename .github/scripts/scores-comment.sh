#!/usr/bin/env bash
# evaluate.yml, merge: the scores comment's data in comment/: the summary, meta.json, and standing.json (the new
# model beside the top three comparable models of each prompt set, over the results of this checkout, the
# default branch, and the merged result). The submission folder (work/submissions/$ID) is read as data.
# Environment: ID, PR, HEAD_SHA, MAIN_SHA, RESULTS_TARGET.
set -euo pipefail
here="$(dirname "$0")"
mkdir -p comment submissions
cp "results/$ID/summary.json" comment/summary.json
python3 "$here/ci.py" comment-meta comment/meta.json
rm -rf "submissions/$ID"
cp -a "work/submissions/$ID" "submissions/$ID"
if ! python3 "$here/ci.py" standing results submissions "$ID" comment/standing.json; then
  echo "::warning::the comparison with the models on the board could not be made (see above)"
fi
