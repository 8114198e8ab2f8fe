# Every target creates or reuses .venv and installs the project (editable) with its extras.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: demo test test-fast bench bench-compile bench-generic bench-timm lint clean-cache lock zoo

# constraints.txt pins every package to the version the suite was last tested with (`make lock`
# regenerates it from a fresh resolve), so a fresh clone installs what CI tested.
LOCK    := constraints.txt

$(STAMP): setup.cfg pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip -c $(LOCK)
	$(BIN)/pip install -q -e '.[all,dev]' -c $(LOCK)
	touch $(STAMP)

# Resolve the newest allowed versions in a scratch venv and pin them all (minus the project).
lock:
	rm -rf .venv-lock
	$(PY) -m venv .venv-lock
	.venv-lock/bin/pip install -q --upgrade pip
	.venv-lock/bin/pip install -q -e '.[all,dev]'
	{ echo "# Versions the test suite was run with: make installs with -c $(LOCK)."; \
	  echo "# Regenerate with 'make lock' (a fresh resolve of .[all,dev]), then run make test."; \
	  .venv-lock/bin/pip freeze --all --exclude-editable; } > $(LOCK).tmp
	mv $(LOCK).tmp $(LOCK)
	rm -rf .venv-lock

demo: $(STAMP)
	$(BIN)/relay demo

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q --durations=20 $(PYTEST_ARGS)

test-fast: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q -m 'not slow' $(PYTEST_ARGS)

# The outside-model zoo (tests/zoo): every model, then the table in docs/model_zoo.md.
zoo: $(STAMP)
	$(BIN)/pip install -q -e '.[zoo]' -c $(LOCK)
	$(BIN)/python -m pytest -n 2 -q -m zoo tests/zoo $(PYTEST_ARGS)
	$(BIN)/python -m tests.zoo.runner --run -j 2 --results zoo_results.jsonl --markdown docs/model_zoo.md

# Real architectures (torchvision: the zoo extra) against onnxruntime / torch / TF, quiet and busy.
bench: $(STAMP)
	$(BIN)/pip install -q -e '.[zoo]' -c $(LOCK)
	$(BIN)/python -m benchmarks.run $(BENCH_ARGS)

# Cold / warm convert + compile times (torchvision models, BERT-base), beside TVM Relax's where
# RELAY_BENCH_TVM_PYTHON names a Python with apache-tvm and onnx (a venv of its own).
bench-compile: $(STAMP)
	$(BIN)/pip install -q -e '.[zoo]' -c $(LOCK)
	$(BIN)/python -m benchmarks.compile

bench-generic: $(STAMP)
	$(BIN)/pip install -q -e '.[zoo]' -c $(LOCK)
	$(BIN)/python -m benchmarks.generic

# Latency of 30 timm families (default ONNX export, default compile) against onnxruntime.
bench-timm: $(STAMP)
	$(BIN)/pip install -q -e '.[zoo]' -c $(LOCK)
	$(BIN)/python -m benchmarks.timm_latency

lint: $(STAMP)
	$(BIN)/ruff check relay_core converters relay_import tests benchmarks tools
	$(BIN)/ruff format --check relay_core converters relay_import tests benchmarks tools

clean-cache:
	rm -rf $${RELAY_CACHE_DIR:-$${XDG_CACHE_HOME:-$$HOME/.cache}/relay}
