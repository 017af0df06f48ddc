# Set-up is part of every target: a fresh clone needs nothing but Python 3.11 and these commands.
# `make run` installs what running needs; `make test` adds the development tools and the programs the tests run.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HASH := $(shell cat pyproject.toml | sha256sum | cut -c1-12)
RUNTIME := $(VENV)/.installed-run-$(HASH)
DEV := $(VENV)/.installed-dev-$(HASH)
export JUDGEBIAS_DATA_ROOT ?= $(abspath ../shared/data)
# The whole suite in two worker processes, a test file at a time on one worker (its module fixtures started once):
# much of the suite waits on clocks (SLURM's time limits, a gateway's per-minute quota, batch polling), and the
# other worker runs meanwhile. PARALLEL= runs it in one process.
PARALLEL ?= -n 2 --dist loadfile

.PHONY: setup run test test-quick test-alone lint wheel bench system litellm llamacpp oracles clean

$(RUNTIME): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $(RUNTIME)

$(DEV): $(RUNTIME)
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(DEV)

setup: $(DEV)

## Run the main job offline: the scripted default judge on the embedded dataset q1.
run: $(RUNTIME)
	$(BIN)/python -m judgebias.run

## Everything CI runs: lint, format check, type check, the wheel as a user installs it, the whole test suite.
test: $(DEV) system litellm llamacpp oracles
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy --show-traceback src
	bash tools/check-wheel.sh
	PARALLEL="$(PARALLEL)" bash tools/test-without-shared.sh
	$(BIN)/pytest $(PARALLEL)

## The quick part only: unit tests, no subprocesses, no services.
test-quick: $(DEV)
	$(BIN)/pytest $(PARALLEL) -m "not slow and not reliability and not browser and not redis and not gateway and not cluster and not realmodel and not statistical and not oracle"

## The tests that read the shared datasets, with an empty folder in their place: they pass or skip, never fail.
test-alone: $(DEV)
	PARALLEL="$(PARALLEL)" bash tools/test-without-shared.sh

## A regular wheel in a clean venv: the main job, a sweep and the gate from a folder outside the checkout.
wheel:
	bash tools/check-wheel.sh

## System programs the tests run for real (Debian packages; skipped when present, or with JUDGEBIAS_SKIP_SYSTEM=1).
system:
	@bash tools/install-system.sh

## LiteLLM's proxy for the gateway tests, in its own .venv-litellm (skipped at the pinned version, or with
## JUDGEBIAS_SKIP_LITELLM=1).
litellm:
	@bash tools/install-litellm.sh

## llama.cpp's server and a small open-weight model for the realmodel tests, in .venv-llamacpp and .models
## (skipped when present, or with JUDGEBIAS_SKIP_LLAMACPP=1).
llamacpp:
	@bash tools/install-llamacpp.sh

## The other tools' own code (alpaca_eval, fschat) in .venv-oracles, for the audit tests marked `oracle` (skipped
## at the pinned versions, or with JUDGEBIAS_SKIP_ORACLES=1).
oracles:
	@bash tools/install-oracles.sh

## Speed and memory benchmarks: ratios against baselines measured in the same run.
bench: $(DEV)
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) .venv-litellm .venv-llamacpp .venv-oracles .venv-wheel .models build *.egg-info src/*.egg-info
