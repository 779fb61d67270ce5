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

# Two runs: everything not marked serial on three workers side by side (pytest-xdist), then the scenarios that
# assert a time or a memory figure, alone, so that no other test's load skews what they measure. Three workers on
# two cores: one spends its first two minutes in a scenario that only waits (marked `waits`), and many bus tests
# wait on a server or a subprocess, so a third keeps both cores busy. Bytecode is cached even where the
# environment says not to: every pytest process would otherwise rewrite every test module's asserts again, and
# every `ichor` subprocess a test starts would compile the package again.
test: $(INSTALLED)
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n 3 -m "not serial"
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -m serial

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
