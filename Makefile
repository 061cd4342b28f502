# Two entry points for a fresh machine: `make demo` and `make test`. Both create or reuse .venv, on today's stack
# (the newest Gymnasium 1.x and Stable-Baselines3 2.x, locked in constraints/today.txt); `make test-classic` tests
# imitation's own stack (Gymnasium 0.29.1, Stable-Baselines3 2.2.1) in .venv-classic. docs/installation.md says why.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.curteach-installed
CLASSIC_VENV ?= .venv-classic
CLASSIC_PY := $(CLASSIC_VENV)/bin/python
CLASSIC_STAMP := $(CLASSIC_VENV)/.curteach-installed
DEMO_OUT ?= results/demo
# the extras both stacks install besides `teaching` (and `classic` on imitation's stack)
EXTRAS := datasets,test,docs,ray,tensorboard
# today's stack only: metaworld 3.1 needs Gymnasium >= 1.1 (imitation's own stack has 0.29)
TODAY_EXTRAS := $(EXTRAS),metaworld

.PHONY: install install-classic demo test test-classic test-slow test-envs-gym1 bench bench-gpu lint docs dist lock clean

$(STAMP): pyproject.toml constraints/today.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# The CPU build of torch must come first: a bare torch requirement would pull CUDA wheels.
	$(PY) -m pip install -q -c constraints/today.txt torch==2.13.0
	# imitation out first: pip would print its stale pins as a conflict while it upgrades what they name
	$(PY) -m pip uninstall -q -y imitation 2>/dev/null || true
	# teaching: torch, SB3, matplotlib and what imitation's modules need (the base install is the environments alone)
	$(PY) -m pip install -q -c constraints/today.txt -e ".[teaching,$(TODAY_EXTRAS)]"
	# imitation 1.0.1 last and without its dependencies: it pins gymnasium~=0.29 and stable-baselines3~=2.2.1
	$(PY) -m pip install -q --no-deps -c constraints/today.txt imitation==1.0.1
	touch $(STAMP)

$(CLASSIC_STAMP): pyproject.toml constraints/classic.txt
	test -x $(CLASSIC_PY) || $(PYTHON) -m venv $(CLASSIC_VENV)
	$(CLASSIC_PY) -m pip install -q --upgrade pip
	$(CLASSIC_PY) -m pip install -q -c constraints/classic.txt torch==2.13.0
	# classic: imitation 1.0.1 with its own pins and dependencies
	$(CLASSIC_PY) -m pip install -q -c constraints/classic.txt -e ".[teaching,classic,$(EXTRAS)]"
	touch $(CLASSIC_STAMP)

install-classic: $(CLASSIC_STAMP)

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

# The whole default suite on imitation's own stack, in its own virtual environment
test-classic: install-classic
	$(CLASSIC_PY) -m pytest -n 2 -q

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
	for f in benchmarks/*.py; do [ "$$f" = benchmarks/gpu.py ] && continue; echo "== $$f"; $(PY) $$f || exit 1; done

# The learners on one GPU against bare loops (benchmarks/gpu.py; refuses without a GPU: `--allow-cpu --quick` tries it)
bench-gpu: install
	$(PY) benchmarks/gpu.py $(BENCH_GPU_ARGS)

# The sdist and wheel into dist/, checked with twine (metadata, README rendering).
dist: install
	rm -rf dist
	$(PY) -m build --outdir dist .
	$(VENV)/bin/twine check --strict dist/*

# Re-resolves both stacks from PyPI (the newest releases) into constraints/, each in a scratch virtual environment;
# review the diff, then make install and make test-classic.
lock:
	$(PYTHON) constraints/lock.py

clean:
	rm -rf $(VENV) $(CLASSIC_VENV) results site .pytest_cache dist build
