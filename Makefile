# Quick start (see README):  make demo   |   make test
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
SAMPLE ?= sample_traces/cpu_rmsnorm_session

.PHONY: demo test install install-dev lint bench samples clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-dev: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed

install-dev: $(VENV)/.installed-dev

demo: install
	$(BIN)/trnscope open $(SAMPLE)

# ruff, mypy (strict flags on the core and CLI), the import-linter layer contracts, then every test.
test: install-dev
	$(BIN)/python -m ruff check .
	$(BIN)/python -m mypy
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -n 2 --dist loadfile

lint: install-dev
	$(BIN)/python -m ruff check .
	$(BIN)/python -m ruff format --check .

# Rebuild the bundled SYNTHETIC Trainium sample (the CPU samples: see sample_traces/README.md).
samples: install-dev
	$(BIN)/python -m trnscope.testing.build_samples --out sample_traces

bench: install-dev
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
