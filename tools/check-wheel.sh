#!/usr/bin/env bash
# The package as a user installs it: a regular wheel built from this checkout, installed with its dependencies into
# a clean virtualenv (.venv-wheel, nothing of the checkout on its path), then the main job, a sweep and the CI gate
# run from a folder outside the checkout. An editable install hides a module or data file missing from the wheel;
# this does not.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
PYTHON="${PYTHON:-python3}"
VENV="$REPO/.venv-wheel"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
quiet() { "$@" >"$work/install.log" 2>&1 || { cat "$work/install.log" >&2; exit 1; }; }
echo "wheel check: building the wheel"
quiet "$PYTHON" -m pip wheel --quiet --no-deps --wheel-dir "$work/dist" "$REPO"
wheel=$(ls "$work"/dist/judgebias-*.whl)
rm -rf "$VENV"
quiet "$PYTHON" -m venv "$VENV"
quiet "$VENV/bin/pip" install --quiet "$wheel"
echo "wheel check: installed $(basename "$wheel") into a clean venv"
mkdir -p "$work/elsewhere"
cd "$work/elsewhere"
export JUDGEBIAS_CACHE_DIR="$work/cache"
unset PYTHONPATH
"$VENV/bin/python" - <<'PY'
import judgebias, pathlib, sys
where = pathlib.Path(judgebias.__file__).resolve()
assert "site-packages" in where.parts, f"judgebias imported from {where}, not from the installed wheel"
print(f"wheel check: judgebias from {where.parent}")
PY
"$VENV/bin/python" -m judgebias.run hydra.run.dir=run data.limit=12 > run.txt
test -s run/summary.json && test -s run/verdicts.jsonl && grep -q "</html>" run/report.html
echo "wheel check: main job ok ($(head -1 run.txt))"
"$VENV/bin/judgebias" -m judge=noisy,longer hydra.sweep.dir=sweep data.limit=12 > sweep.txt
test -s sweep/sweep_summary.csv && test -s sweep/0/summary.json && test -s sweep/1/summary.json
echo "wheel check: sweep ok ($(grep -c '^[01] ' sweep.txt) jobs in the table)"
"$VENV/bin/python" -m judgebias.check sweep --min-consistency 0.5 > check.txt
echo "wheel check: gate ok ($(tail -1 check.txt))"
"$VENV/bin/judgebias" -m hydra/launcher=joblib judge=noisy,longer hydra.sweep.dir=parallel data.limit=12 > parallel.txt
test -s parallel/0/summary.json && test -s parallel/1/summary.json
echo "wheel check: the joblib launcher installed with the package ($(grep -c '^[01] ' parallel.txt) jobs in parallel)"
if "$VENV/bin/python" -c "import hydra_plugins.hydra_submitit_launcher" 2>/dev/null; then
    echo "wheel check: the SLURM launcher should not be installed without judgebias[cluster]" >&2; exit 1
fi
set +e
"$VENV/bin/judgebias" -m hydra/launcher=slurm judge=noisy,longer hydra.sweep.dir=slurm > slurm.txt 2>&1
code=$?
set -e
test "$code" = 2 && test "$(wc -l < slurm.txt)" = 1 && grep -q "pip install 'judgebias\[cluster\]'" slurm.txt || {
    echo "wheel check: a missing SLURM launcher is not one line naming its install (exit $code):" >&2
    cat slurm.txt >&2; exit 1; }
echo "wheel check: a missing SLURM launcher named ($(cat slurm.txt))"
"$VENV/bin/python" -m judgebias.devserver --help > /dev/null
"$VENV/bin/python" -m judgebias.cache stats --help > /dev/null
echo "wheel check: passed"
