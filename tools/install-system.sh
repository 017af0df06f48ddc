#!/usr/bin/env bash
# Debian packages the test suite runs for real: headless Chromium and its driver (report, labelling page),
# redis-server (shared cache), slurm-wlm + munge (a private single-node SLURM), and cmake + g++ to build llama.cpp's
# server for the realmodel tests. Installed only when missing; JUDGEBIAS_SKIP_SYSTEM=1 skips this
# (the tests that need a missing program then skip, naming it).
set -euo pipefail
if [ "${JUDGEBIAS_SKIP_SYSTEM:-0}" = "1" ]; then
    echo "JUDGEBIAS_SKIP_SYSTEM=1: not installing system packages"
    exit 0
fi
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v slurmctld >/dev/null 2>&1 || need+=(slurm-wlm)
command -v munged >/dev/null 2>&1 || need+=(munge)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing Debian packages: ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
