# skfm developer tasks. Needs only Python 3.11 (or some python3) on the PATH.
#
#   make venv      create .venv and install skfm (editable) with its test extras, at the exact
#                  versions of constraints.txt (what CI tested)
#   make demo      run `skfm demo`
#   make test      fast tests (not marked slow), in a random order, and every docstring example
#   make test-all  all tests, slow ones included
#   make test-slow the slow tests alone (sktime's full suites, more hostile-input draws, ...):
#                  CI runs them after `make test`
#   make lint      ruff check
#   make lock      regenerate constraints.txt from a clean venv with the newest versions that
#                  pyproject.toml's ranges allow (test and docs extras)
#   make test-latest  the fast tests in .venv-latest, against the newest versions the ranges
#                  allow (no constraints): drift shows here before users see it
#   make bench     install the bench extras and run the benchmark scripts
#   make bench-asv run the asv micro-benchmarks against the current checkout
#   make bench-asv-quick  each asv benchmark once (minutes; fails if one fails): the CI check
#   make docs      build the documentation site into docs/_build/html (warnings are errors);
#                  SKFM_DOCS_PLOT_GALLERY=0 skips running the gallery examples
#   make clean     remove caches and build outputs (keeps .venv; `make distclean` removes it)

VENV        := .venv
PY          := $(VENV)/bin/python
STAMP       := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench
DOCS_STAMP  := $(VENV)/.installed-docs
# The CPU wheel of torch lies on disk; an unpinned torch would pull a multi-GB CUDA build.
TORCH       := torch==2.13.0
# Exact versions of every package the test and docs extras pull in (`make lock` writes it).
CONSTRAINTS := constraints.txt
PYTHON      ?= python3.11
LATEST      := .venv-latest
LOCK_VENV   := .venv-lock

CC18_DATA      ?= ../shared/data/openml_cc18
BENCH_SPLITS   ?= 5
N_ESTIMATORS   ?= 8
CC18_MODELS    ?= tabswift,lr,rf,hgb,xgb,lgbm
REG_MODELS     ?= tabswift,ridge,rf,hgb
# reports go to an ignored folder; `make bench BENCH_OUT=docs/benchmarks` regenerates the shipped ones
BENCH_OUT      ?= runs/benchmarks

.PHONY: venv demo test test-all test-slow test-latest lint lock bench bench-asv bench-asv-quick docs docs-clean clean distclean

venv: $(STAMP)

$(PY):
	$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); python3 -m venv $(VENV); }

# torch first, pinned, so that resolving skfm's "torch>=..." finds it already installed.
$(STAMP): pyproject.toml $(CONSTRAINTS) | $(PY)
	$(PY) -m pip install -c $(CONSTRAINTS) "$(TORCH)"
	$(PY) -m pip install -c $(CONSTRAINTS) -e ".[test]"
	touch $@

# bench extras are not locked (xgboost, lightgbm, asv...); the rest stays at the locked versions.
$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install -c $(CONSTRAINTS) -e ".[test,bench]"
	touch $@

# A clean venv with the newest versions the ranges allow; its `pip freeze` is the lock.
lock:
	rm -rf $(LOCK_VENV)
	$(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/pip install "$(TORCH)"
	$(LOCK_VENV)/bin/pip install ".[test,docs]"
	{ echo "# Exact versions CI tests with: \`make lock\` writes this file (pip freeze of a clean"; \
	  echo "# venv with the test and docs extras, $$($(LOCK_VENV)/bin/python --version))."; \
	  echo "# \`make venv\` installs with it as constraints; pyproject.toml keeps the ranges."; \
	  $(LOCK_VENV)/bin/pip freeze --exclude skfm; } > $(CONSTRAINTS)
	rm -rf $(LOCK_VENV)

# The same fast tests against the newest versions the ranges allow, in a venv of its own.
test-latest:
	rm -rf $(LATEST)
	$(PYTHON) -m venv $(LATEST)
	$(LATEST)/bin/pip install "$(TORCH)"
	$(LATEST)/bin/pip install --upgrade -e ".[test]"
	$(LATEST)/bin/pip freeze --exclude skfm | LC_ALL=C sort > $(LATEST)/freeze.txt
	@echo "newest versions that differ from $(CONSTRAINTS) (none when empty):"
	@grep -v '^#' $(CONSTRAINTS) | LC_ALL=C sort | LC_ALL=C comm -13 - $(LATEST)/freeze.txt
	$(LATEST)/bin/python -m pytest -m "not slow"

demo: $(STAMP)
	$(VENV)/bin/skfm demo

test: $(STAMP)
	$(PY) -m pytest -m "not slow"

test-all: $(STAMP)
	$(PY) -m pytest

test-slow: $(STAMP)
	$(PY) -m pytest -m slow

lint: $(STAMP)
	$(VENV)/bin/ruff check .

$(DOCS_STAMP): $(STAMP)
	$(PY) -m pip install -c $(CONSTRAINTS) -e ".[test,docs]"
	touch $@

# -j 1: examples run one at a time (each uses the CPU's threads); -W --keep-going: every warning
# is reported and then fails the build.
SPHINXOPTS ?= -W --keep-going -j 1
docs: $(DOCS_STAMP)
	$(PY) -m sphinx -b html $(SPHINXOPTS) docs docs/_build/html
	@echo "docs: file://$(CURDIR)/docs/_build/html/index.html"

docs-clean:
	rm -rf docs/_build docs/auto_examples docs/api/generated docs/gen_modules

bench: $(BENCH_STAMP)
	$(PY) benchmarks/cc18.py --data $(CC18_DATA) --splits $(BENCH_SPLITS) \
		--models $(CC18_MODELS) --n-estimators $(N_ESTIMATORS) --out $(BENCH_OUT)
	$(PY) benchmarks/regression.py --splits $(BENCH_SPLITS) \
		--models $(REG_MODELS) --n-estimators $(N_ESTIMATORS) --out $(BENCH_OUT)

bench-asv: $(BENCH_STAMP)
	cd asv_bench && ../$(VENV)/bin/asv machine --yes && ../$(VENV)/bin/asv run --python=same

# asv exits with status 2 when a benchmark fails; --quick runs each one once and saves nothing.
bench-asv-quick: $(BENCH_STAMP)
	cd asv_bench && ../$(VENV)/bin/asv machine --yes && \
		../$(VENV)/bin/asv run --python=same --quick --show-stderr

clean:
	rm -rf build dist *.egg-info .pytest_cache .ruff_cache asv_bench/.asv
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) $(LATEST) $(LOCK_VENV)
