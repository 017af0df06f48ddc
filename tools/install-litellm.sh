#!/usr/bin/env bash
# LiteLLM's proxy for the gateway tests, in a virtualenv of its own (.venv-litellm): it is not a dependency of
# judgebias and its many pins must not meet ours. Skipped when the pinned version is already there;
# JUDGEBIAS_SKIP_LITELLM=1 skips it (the gateway tests then skip, naming the missing proxy).
# The pin is the release the gateway facts in docs/judges.md were checked on (never 1.107.0: a compromised release).
set -euo pipefail
PIN="${LITELLM_VERSION:-1.108.7}"
VENV="${LITELLM_VENV:-.venv-litellm}"
PYTHON="${PYTHON:-python3}"
if [ "${JUDGEBIAS_SKIP_LITELLM:-0}" = "1" ]; then
    echo "JUDGEBIAS_SKIP_LITELLM=1: not installing the LiteLLM proxy"
    exit 0
fi
if [ "$PIN" = "1.107.0" ]; then
    echo "litellm 1.107.0 was a compromised release: refusing to install it" >&2
    exit 2
fi
if [ -x "$VENV/bin/litellm" ] && [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("litellm"))' 2>/dev/null)" = "$PIN" ]; then
    exit 0
fi
echo "installing litellm[proxy]==$PIN into $VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install --quiet --upgrade pip
"$VENV/bin/pip" install --quiet "litellm[proxy]==$PIN"
