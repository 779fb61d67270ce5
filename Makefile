# Two commands for a fresh machine with python3 and make: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
BENCH_INSTALLED := $(VENV)/.bench-installed

.PHONY: install run test test-fast lint bench clean

$(INSTALLED): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(INSTALLED)

install: $(INSTALLED)

run: $(INSTALLED)
	$(BIN)/ichor up --feed examples/paste.txt

test: $(INSTALLED)
	$(BIN)/python -m pytest

test-fast: $(INSTALLED)
	$(BIN)/python -m pytest -m "not slow" -x -q

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/mypy

$(BENCH_INSTALLED): $(INSTALLED)
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	touch $(BENCH_INSTALLED)

bench: $(BENCH_INSTALLED)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .ichor .pytest_cache .mypy_cache .ruff_cache .hypothesis
