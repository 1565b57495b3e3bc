#!/usr/bin/env bash
# evaluate.yml, held-out: the custodians' private held-out dataset $HELD_OUT_REPO into private/. The only step of
# the workflow that holds HF_TOKEN for it (HELD_OUT_HF_TOKEN, read access), and it reads no pull-request data: the
# submission is downloaded after it. Nothing it downloads is printed.
# Environment: HELD_OUT_REPO, HF_TOKEN.
set -euo pipefail
if [ -z "${HELD_OUT_REPO:-}" ]; then
  echo "::error::set the repository variable CULTUREBOARD_HELD_OUT_REPO (ORG/NAME of the private held-out dataset)"
  exit 1
fi
rm -rf private
HF_HUB_OFFLINE=0 hf download "$HELD_OUT_REPO" --repo-type dataset --local-dir private > /dev/null 2>&1 || {
  echo "::error::could not download the private held-out dataset $HELD_OUT_REPO (check HELD_OUT_HF_TOKEN's access)"
  exit 1
}
rm -rf private/.cache
