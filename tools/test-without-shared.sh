#!/usr/bin/env bash
# The suite as a clone with nothing beside it sees it: every test file that reads the shared datasets, run with
# JUDGEBIAS_DATA_ROOT pointing at an empty folder. They must pass or skip (naming the folder), never fail: a new
# user's first `make test` has no ../shared. The files are found by what they read, so a new one is covered too.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${BIN:-.venv/bin}"
empty=$(mktemp -d)
trap 'rm -rf "$empty"' EXIT
mapfile -t files < <(grep -rlE 'JUDGEBIAS_DATA_ROOT|data_root|shared_data|shared/data' tests --include='test_*.py' | sort)
echo "without shared data: ${#files[@]} test files, JUDGEBIAS_DATA_ROOT=$empty"
JUDGEBIAS_DATA_ROOT="$empty" "$BIN/pytest" -q ${PARALLEL:-} -p no:cacheprovider "${files[@]}"
