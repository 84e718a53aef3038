# Two entry points for a fresh machine: `make run` (the offline suite) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: setup run test lint typecheck unit clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[all]'
	touch $(STAMP)

setup: $(STAMP)

run: setup
	$(BIN)/vitrine --all

lint: setup
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: setup
	$(BIN)/mypy

unit: setup
	$(BIN)/python -m pytest

test: lint typecheck unit

clean:
	rm -rf $(VENV) .vitrine .pytest_cache .mypy_cache .ruff_cache
