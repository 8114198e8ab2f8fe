# Every target creates or reuses .venv and installs the project (editable) with its extras.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: demo test test-fast bench lint clean-cache

$(STAMP): setup.cfg pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[all,dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/relay demo

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q $(PYTEST_ARGS)

test-fast: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q -m 'not slow' $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

lint: $(STAMP)
	$(BIN)/ruff check relay_core converters relay_import tests benchmarks tools
	$(BIN)/ruff format --check relay_core converters relay_import tests benchmarks tools

clean-cache:
	rm -rf $${RELAY_CACHE_DIR:-$${XDG_CACHE_HOME:-$$HOME/.cache}/relay}
