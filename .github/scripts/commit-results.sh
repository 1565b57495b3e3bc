#!/usr/bin/env bash
# evaluate.yml, commit: commit results/$ID/ (downloaded into $RUNNER_TEMP/results), and the held-out job's
# results-held-out/$ID.json (in $RUNNER_TEMP/held-out) when it ran, to the default branch,
# retrying on top of newer commits, and start site.yml (a push made with the workflow token starts no workflow by
# itself); with RESULTS_TARGET=branch, push the branch results/$ID instead, for a maintainer's pull request.
# Environment: ID, PR, HEAD_SHA, MAIN_SHA, DEFAULT_BRANCH, RESULTS_TARGET, GH_TOKEN (and GitHub's).
set -euo pipefail
git config user.name "github-actions[bot]"
git config user.email "41898282+github-actions[bot]@users.noreply.github.com"
from="from pull request #$PR at $HEAD_SHA"
[ -n "$PR" ] || from="from $HEAD_SHA"
message="results: $ID

Scored $from by the evaluator at $MAIN_SHA (run $GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID)."
if [ "$RESULTS_TARGET" = branch ]; then
  branch="results/$ID"
else
  branch="$DEFAULT_BRANCH"
fi
for attempt in 1 2 3 4 5; do
  git fetch --depth=1 origin "$DEFAULT_BRANCH"
  git checkout -q -B work FETCH_HEAD
  rm -rf "results/$ID"
  mkdir -p results
  cp -a "$RUNNER_TEMP/results/$ID" "results/$ID"
  git add -f -A "results/$ID"  # -f: .gitignore lists *.parquet
  if [ -f "$RUNNER_TEMP/held-out/$ID.json" ]; then  # the held-out job's aggregates, when it ran
    mkdir -p results-held-out
    cp "$RUNNER_TEMP/held-out/$ID.json" "results-held-out/$ID.json"
    git add -f "results-held-out/$ID.json"
  fi
  if git diff --cached --quiet; then
    echo "The results are already on $DEFAULT_BRANCH."
  else
    git commit -q -m "$message"
  fi
  if [ "$branch" = "$DEFAULT_BRANCH" ]; then
    git push origin "HEAD:refs/heads/$branch" && break
  else
    git push --force origin "HEAD:refs/heads/$branch" && break
  fi
  if [ "$attempt" = 5 ]; then
    echo "::error::could not push the results after 5 attempts"
    exit 1
  fi
  sleep $((attempt * 15))
done
echo "sha=$(git rev-parse HEAD)" >> "$GITHUB_OUTPUT"
if [ "$branch" = "$DEFAULT_BRANCH" ]; then
  gh workflow run site.yml --ref "$DEFAULT_BRANCH"
  echo "Results of $ID committed to $DEFAULT_BRANCH; the site is rebuilding." >> "$GITHUB_STEP_SUMMARY"
else
  echo "Results of $ID pushed to $branch: open a pull request at $GITHUB_SERVER_URL/$GITHUB_REPOSITORY/compare/$DEFAULT_BRANCH...$branch?expand=1" >> "$GITHUB_STEP_SUMMARY"
fi
