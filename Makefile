# skfm developer tasks. Needs only Python 3.11 (or some python3) on the PATH.
#
#   make venv      create .venv and install skfm (editable) with its test extras
#   make demo      run `skfm demo`
#   make test      fast tests (not marked slow)
#   make test-all  all tests, slow ones included
#   make lint      ruff check
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

CC18_DATA      ?= ../shared/data/openml_cc18
BENCH_SPLITS   ?= 5
N_ESTIMATORS   ?= 8
CC18_MODELS    ?= tabswift,lr,rf,hgb,xgb,lgbm
REG_MODELS     ?= tabswift,ridge,rf,hgb
BENCH_OUT      ?= docs/benchmarks

.PHONY: venv demo test test-all lint bench bench-asv bench-asv-quick docs docs-clean clean distclean

venv: $(STAMP)

$(PY):
	python3.11 -m venv $(VENV) || { rm -rf $(VENV); python3 -m venv $(VENV); }

# torch first, pinned, so that resolving skfm's "torch>=..." finds it already installed.
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install "$(TORCH)"
	$(PY) -m pip install -e ".[test]"
	touch $@

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install -e ".[test,bench]"
	touch $@

demo: $(STAMP)
	$(VENV)/bin/skfm demo

test: $(STAMP)
	$(PY) -m pytest -m "not slow"

test-all: $(STAMP)
	$(PY) -m pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check .

$(DOCS_STAMP): $(STAMP)
	$(PY) -m pip install -e ".[test,docs]"
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
	rm -rf $(VENV)
