#!/usr/bin/env bash
# evaluate.yml, prepare: the pull request (or branch) to take the submission from, and this checkout's commit
# (the evaluator every later job checks out), into $GITHUB_OUTPUT as pr, head_sha, base_sha and main_sha. A
# label event gives its pull request's head and base (later pushes are not picked up); a dispatch with a pull
# request number reads them with gh; a dispatch without one takes the dispatched branch ($GITHUB_SHA).
# Environment: EVENT, EVENT_PR, EVENT_HEAD, EVENT_BASE, INPUT_PR, REPO, GH_TOKEN.
set -euo pipefail
if [ "$EVENT" = pull_request_target ]; then
  pr="$EVENT_PR" head="$EVENT_HEAD" base="$EVENT_BASE"
elif [ -n "${INPUT_PR:-}" ]; then
  if [[ ! "$INPUT_PR" =~ ^[1-9][0-9]{0,9}$ ]]; then
    echo "::error::the pr input must be a pull request number"
    exit 1
  fi
  pr="$INPUT_PR"
  head="$(gh api "repos/$REPO/pulls/$pr" --jq .head.sha)"
  base="$(gh api "repos/$REPO/pulls/$pr" --jq .base.sha)"
else
  pr="" head="$GITHUB_SHA" base=""
fi
if [ -n "$pr" ] && [[ ! "$pr" =~ ^[1-9][0-9]{0,9}$ ]]; then
  echo "::error::not a pull request number"
  exit 1
fi
for sha in "$head" "$base"; do
  if [ -n "$sha" ] && [[ ! "$sha" =~ ^[0-9a-f]{40}$ ]]; then
    echo "::error::not a commit hash"
    exit 1
  fi
done
{ echo "pr=$pr"; echo "head_sha=$head"; echo "base_sha=$base"; echo "main_sha=$(git rev-parse HEAD)"; } >> "$GITHUB_OUTPUT"
