#!/usr/bin/env bash
# The GPU jobs' cache folders, into $GITHUB_ENV: HF_HOME (the runner's persistent $PERSISTENT_HF_HOME, or a
# folder of the run) and CULTUREBOARD_CACHE (the stand-ins and the embedding cache).
set -euo pipefail
echo "HF_HOME=${PERSISTENT_HF_HOME:-$RUNNER_TEMP/huggingface}" >> "$GITHUB_ENV"
echo "CULTUREBOARD_CACHE=$RUNNER_TEMP/cultureboard-cache" >> "$GITHUB_ENV"
