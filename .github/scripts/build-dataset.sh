#!/usr/bin/env bash
# dataset.yml: build the release into dataset/ ($BUILD_CONFIG: a build config YAML of the repository; unset: the
# defaults, on the shipped sample).
set -euo pipefail
config=()
if [ -n "${BUILD_CONFIG:-}" ]; then
  config=(--config "$BUILD_CONFIG")
fi
HF_HUB_OFFLINE=1 cultureboard build dataset --out dataset "${config[@]}"
