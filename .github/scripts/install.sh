#!/usr/bin/env bash
# Install cultureboard from this checkout into the runner's Python. `cpu` (the default): the CPU-only torch
# first (PyPI's default build is the CUDA one, several GB); `cuda`: PyPI's (the GPU runner).
# Usage: install.sh [cpu|cuda]
set -euo pipefail
if [ "${1:-cpu}" = cpu ]; then
  pip install -q -c constraints.txt --index-url https://download.pytorch.org/whl/cpu torch torchvision
fi
# the ocr extra: validate --read-text and evaluate read every image's text (evaluators/engine/written.py)
pip install -q -c constraints.txt -e '.[ocr]'
