# Two entry points for a fresh machine: `make demo` and `make test`. Both create or reuse .venv.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.curteach-installed
DEMO_OUT ?= results/demo

.PHONY: install demo test test-slow test-envs-gym1 bench lint docs dist clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# The CPU build of torch must come first: a bare torch requirement would pull CUDA wheels.
	$(PY) -m pip install -q torch==2.13.0
	# teaching: torch, SB3, imitation and matplotlib (the base install is the environments alone; docs/installation.md)
	$(PY) -m pip install -q -e ".[teaching,test,docs,ray,tensorboard]"
	touch $(STAMP)

install: $(STAMP)

# The car at the paper's teaching rate 0.17 and at 0.1 on the same 4 roads, then the reading of the two; then the
# navigation learner leaving its initial plateau (--scale demo: Adam, not the paper's protocol; docs/experiments/nav.md)
demo: install
	$(VENV)/bin/curteach demo --out $(DEMO_OUT)
	$(VENV)/bin/curteach car-irl --init T0-T3 --runs 4 --workers 2 --out $(DEMO_OUT)/car-irl
	$(VENV)/bin/curteach car-irl --init T0-T3 --runs 4 --workers 2 --teaching-rate 0.1 --out $(DEMO_OUT)/car-irl-eta0.1
	$(VENV)/bin/curteach demo-reading $(DEMO_OUT)/car-irl $(DEMO_OUT)/car-irl-eta0.1
	$(VENV)/bin/curteach nav --scale demo --runs 1 --curricula Agn,Cur --workers 2 --out $(DEMO_OUT)/nav

test: install
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -n 2 -q

test-slow: install
	$(PY) -m pytest -n 2 -q -m slow

# The wheel in a fresh virtual environment with the newest Gymnasium 1.x from PyPI and no torch: the environment
# tests and check_env there (also part of test-slow).
test-envs-gym1: install
	$(PY) -m pytest -q -m slow tests/project/test_dist_envs.py

lint: install
	$(VENV)/bin/ruff check .

# The documentation site, into site/ (NO_MKDOCS_2_WARNING silences the Material theme's banner about MkDocs 2.0).
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

bench: install
	for f in benchmarks/*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

# The sdist and wheel into dist/, checked with twine (metadata, README rendering).
dist: install
	rm -rf dist
	$(PY) -m build --outdir dist .
	$(VENV)/bin/twine check --strict dist/*

clean:
	rm -rf $(VENV) results site .pytest_cache dist build
