#!/usr/bin/env bash
# evaluate.yml, prepare: take the submission folder out of pr/ as data (a pull request must change exactly that
# one folder and nothing else), delete pr/, fetch the dataset it pins into dataset/ (it must be $DATASET_REPO
# when that is set), re-validate it with this checkout's validator, and choose the shard count: into
# $GITHUB_OUTPUT as id, n and shards. Nothing from pr/ is run.
# Environment: INPUT_SUBMISSION, INPUT_SHARDS, HEAD_SHA, BASE_SHA, DATASET_REPO, IMAGES_PER_SHARD, MAX_SHARDS.
set -euo pipefail
here="$(dirname "$0")"
id_re='^[a-z0-9]+(-[a-z0-9]+)*(__[a-z0-9]+(-[a-z0-9]+)*){1,2}$'
id=""
if [ -n "${INPUT_SUBMISSION:-}" ]; then
  id="${INPUT_SUBMISSION#submissions/}"
  id="${id%/}"
fi
scope=()
if [ -n "${BASE_SHA:-}" ]; then  # a pull request: it must change one submission folder and nothing else
  git -C pr diff --name-only --no-renames "$BASE_SHA...$HEAD_SHA" > changed.txt
  mapfile -t ids < <(awk -F/ 'NF >= 3 && $1 == "submissions" { print $2 }' changed.txt | sort -u)
  if [ "${#ids[@]}" -ne 1 ]; then
    echo "::error::the pull request changes ${#ids[@]} submission folders; evaluate takes exactly one"
    exit 1
  fi
  if [ -n "$id" ] && [ "$id" != "${ids[0]}" ]; then
    echo "::error::the pull request changes another submission folder than the submission input"
    exit 1
  fi
  id="${ids[0]}"
  scope=(--changed-files changed.txt)
fi
if [[ ! "$id" =~ $id_re ]]; then
  echo "::error::the submission folder is not submissions/<org>__<model>[__<tag>]"
  exit 1
fi
if [ -L "pr/submissions/$id" ] || [ ! -d "pr/submissions/$id" ]; then
  echo "::error::submissions/$id is not a folder at $HEAD_SHA"
  exit 1
fi
mkdir -p work/submissions
cp -a "pr/submissions/$id" "work/submissions/$id"  # links stay links: the validator refuses them
rm -rf pr
folder="$(REQUIRED_DATASET="${DATASET_REPO:-}" bash "$here/fetch-dataset.sh" "work/submissions/$id" .datasets)"
rm -rf dataset
mv "$folder" dataset

token="$(python3 -c 'import uuid; print(uuid.uuid4().hex)')"
echo "::stop-commands::$token"  # the report quotes submitted text
valid=0
HF_HUB_OFFLINE=1 cultureboard validate "work/submissions/$id" --dataset dataset "${scope[@]}" || valid=$?
echo "::$token::"
if [ "$valid" -ne 0 ]; then
  echo "::error::the submission is not valid by the default branch's validator (see the report above)"
  exit 1
fi

images="$(grep -c . "work/submissions/$id/metadata.jsonl" || true)"
if [[ "${INPUT_SHARDS:-}" =~ ^[1-9][0-9]?$ ]]; then
  n="$INPUT_SHARDS"
else
  per="${IMAGES_PER_SHARD:-4000}" most="${MAX_SHARDS:-8}"
  n=$(( (images + per - 1) / per ))
  n=$(( n < 1 ? 1 : (n > most ? most : n) ))
fi
shards="$(python3 "$here/ci.py" shards "$n")"
{ echo "id=$id"; echo "n=$n"; echo "shards=$shards"; } >> "$GITHUB_OUTPUT"
echo "submission $id: $images images in $n shards"
