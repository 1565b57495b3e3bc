#!/usr/bin/env bash
# validate.yml: validate each submission folder a pull request changes, and the pull request's scope. The
# validator is this checkout's (the base commit); the pull request's head is data, checked out in pr/. Writes
# report/pr.json and report/N.json (one JSON report per submission folder, or one of the scope alone), prints
# each as text, and exits 1 when any is not valid.
# Environment: PR_NUMBER, BASE_SHA, HEAD_SHA.
set -euo pipefail
here="$(dirname "$0")"
mkdir -p report datasets
git -C pr diff --name-only --no-renames "$BASE_SHA...$HEAD_SHA" > changed.txt
python3 "$here/ci.py" pr-json report/pr.json
status=0
n=0
mapfile -t ids < <(awk -F/ 'NF >= 3 && $1 == "submissions" { print $2 }' changed.txt | sort -u)
for id in "${ids[@]}"; do
  case "$id" in .|..) continue ;; esac
  folder="pr/submissions/$id"
  if [ ! -e "$folder" ] && [ ! -L "$folder" ]; then
    continue  # deleted by this pull request: the scope check still reports it
  fi
  n=$((n + 1))
  dataset="$(bash "$here/fetch-dataset.sh" "$folder" datasets)" || dataset=""
  if [ -n "$dataset" ]; then
    cultureboard validate "$folder" --dataset "$dataset" --changed-files changed.txt --read-text --json > "report/$n.json" || status=1
  else
    status=1
    cultureboard validate "$folder" --changed-files changed.txt --json > "report/$n.json" || true
    python3 "$here/ci.py" unavailable "report/$n.json"
  fi
  bash "$here/show-report.sh" "report/$n.json"
done
if [ "$n" -eq 0 ]; then  # no submission folder left to validate: the scope check alone
  cultureboard validate --changed-files changed.txt --json > report/1.json || status=1
  bash "$here/show-report.sh" report/1.json
fi
exit "$status"
