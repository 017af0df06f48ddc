# Set-up is part of every target: a fresh clone needs nothing but Python 3.11 and these commands.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha256sum | cut -c1-12)
export JUDGEBIAS_DATA_ROOT ?= $(abspath ../shared/data)

.PHONY: setup run test test-quick lint bench system litellm clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

## Run the main job offline: the scripted default judge on the embedded dataset q1.
run: $(STAMP)
	$(BIN)/python -m judgebias.run

## Everything CI runs: lint, format check, type check, the whole test suite (slow and reliability included).
test: $(STAMP) system litellm
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy src
	$(BIN)/pytest

## The quick part only: unit tests, no subprocesses.
test-quick: $(STAMP)
	$(BIN)/pytest -m "not slow and not reliability and not browser and not redis and not gateway and not cluster"

## System programs the tests run for real (Debian packages; skipped when present, or with JUDGEBIAS_SKIP_SYSTEM=1).
system:
	@bash tools/install-system.sh

## LiteLLM's proxy for the gateway tests, in its own .venv-litellm (skipped at the pinned version, or with
## JUDGEBIAS_SKIP_LITELLM=1).
litellm:
	@bash tools/install-litellm.sh

## Speed and memory benchmarks: ratios against baselines measured in the same run.
bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) .venv-litellm build *.egg-info src/*.egg-info
