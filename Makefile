# Two entry points for a fresh machine: `make run` (the offline suite) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: setup run test lint typecheck unit behaviour clean

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

# The behaviour tests need a running service; `behaviour` starts one.
# Two workers: the local-model tests are long and single-threaded, the machine has two cores.
unit: setup
	$(BIN)/python -m pytest -n 2 --ignore=tests/behaviour

# The 60 behaviour tests over real HTTP: a service on a free loopback port, stopped on any exit.
behaviour: setup
	@set -eu; \
	port=$$($(BIN)/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'); \
	mkdir -p .vitrine/behaviour; \
	$(BIN)/vitrine serve --port $$port --log-file .vitrine/behaviour/service.log 2>.vitrine/behaviour/service.err & pid=$$!; \
	trap 'kill $$pid 2>/dev/null || true; wait $$pid 2>/dev/null || true' EXIT INT TERM; \
	$(BIN)/python -m vitrine.service.process wait http://127.0.0.1:$$port --pid $$pid --timeout 120; \
	EVAL_API_URL=http://127.0.0.1:$$port VITRINE_REQUIRE_SERVICE=1 \
	  $(BIN)/python -m pytest tests/behaviour -m "not adversarial" --vitrine-report .vitrine/behaviour

test: lint typecheck unit behaviour

clean:
	rm -rf $(VENV) .vitrine .pytest_cache .mypy_cache .ruff_cache
