#!/usr/bin/env bash
# Print a JSON validation report as text with GitHub's workflow commands switched off: it quotes submitted text,
# which could otherwise hold a `::set-output`, `::add-mask` or `::stop-commands` line.
# Usage: show-report.sh REPORT.json
set -euo pipefail
token="$(python3 -c 'import uuid; print(uuid.uuid4().hex)')"
echo "::stop-commands::$token"
python3 "$(dirname "$0")/ci.py" text "$1" || true
echo "::$token::"
