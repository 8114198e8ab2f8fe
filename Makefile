# Every target creates or reuses .venv and installs the project (editable) with its extras.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: demo test test-fast bench lint clean-cache zoo

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

# The outside-model zoo (tests/zoo): every model, then the table in docs/model_zoo.md.
zoo: $(STAMP)
	$(BIN)/pip install -q -e '.[zoo]'
	$(BIN)/python -m pytest -n 2 -q -m zoo tests/zoo $(PYTEST_ARGS)
	$(BIN)/python -m tests.zoo.runner --run -j 2 --results zoo_results.jsonl --markdown docs/model_zoo.md

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

lint: $(STAMP)
	$(BIN)/ruff check relay_core converters relay_import tests benchmarks
	$(BIN)/ruff format --check relay_core converters relay_import tests benchmarks

clean-cache:
	rm -rf $${RELAY_CACHE_DIR:-$${XDG_CACHE_HOME:-$$HOME/.cache}/relay}
