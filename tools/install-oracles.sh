#!/usr/bin/env bash
# The other tools' own code, as the tests' oracles: AlpacaEval (`alpaca_eval`, with its dependencies), FastChat
# (`fschat`, whose llm_judge/show_result.py needs only pandas), boto3 (AlpacaEval's bedrock_claude annotator imports
# it to be built, though the tests never call it) and the prediction-powered inference authors' package
# (`ppi-python`, with numba, scikit-learn and statsmodels) from PyPI, in a virtualenv of their own (.venv-oracles;
# never a dependency of judgebias). The tests marked `oracle` run their functions on the same
# files the audit reads and compare the figures. Skipped when present at the pinned versions;
# JUDGEBIAS_SKIP_ORACLES=1 skips it (the oracle tests then skip, naming what is missing).
set -euo pipefail
ALPACA_PIN="${ALPACA_EVAL_VERSION:-0.6.6}"
FSCHAT_PIN="${FSCHAT_VERSION:-0.2.36}"
PPI_PIN="${PPI_PYTHON_VERSION:-0.2.3}"
VENV="${ORACLES_VENV:-.venv-oracles}"
PYTHON="${PYTHON:-python3}"
if [ "${JUDGEBIAS_SKIP_ORACLES:-0}" = "1" ]; then
    echo "JUDGEBIAS_SKIP_ORACLES=1: not installing the other tools' code"
    exit 0
fi
installed() {
    "$VENV/bin/python" -c "import importlib.metadata as m; print(m.version('$1'))" 2>/dev/null || true
}
if [ -x "$VENV/bin/python" ] && [ "$(installed alpaca_eval)" = "$ALPACA_PIN" ] && [ "$(installed fschat)" = "$FSCHAT_PIN" ] \
    && [ "$(installed ppi-python)" = "$PPI_PIN" ] && [ -n "$(installed boto3)" ]; then
    exit 0
fi
echo "installing alpaca_eval==$ALPACA_PIN, fschat==$FSCHAT_PIN and ppi-python==$PPI_PIN into $VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install --quiet --upgrade pip
"$VENV/bin/pip" install --quiet "alpaca_eval==$ALPACA_PIN" pandas scipy boto3
"$VENV/bin/pip" install --quiet --no-deps "fschat==$FSCHAT_PIN"
"$VENV/bin/pip" install --quiet "ppi-python==$PPI_PIN"
