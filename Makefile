# The two commands: `make run` (ingest, serve at once, train in the background) and `make test`; `make check` is the
# quick loop.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
# Two installs: what serving and training need (`make run`), then the test, docs and ray extras (`make test`, `check`).
SERVE_STAMP := $(VENV)/.installed-serve
STAMP := $(VENV)/.installed
DATASETS := $(wildcard data/measurements/*.csv)
# pytest-xdist workers: the machine's two cores. Each worker starts its own session servers (tests/conftest.py). Files
# are handed out longest first, as tests/conftest.py collects them (tests/durations.json), not by their number of tests.
WORKERS ?= 2
PYTEST := $(BIN)/python -m pytest -n $(WORKERS) --dist loadfile --no-loadscope-reorder

.PHONY: install system-deps tools run lint format check test docs bench clean

$(SERVE_STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e .
	touch $(SERVE_STAMP)

$(STAMP): $(SERVE_STAMP)
	$(BIN)/pip install -q -c constraints.txt -e '.[test,docs,ray]'
	touch $(STAMP)

install: $(STAMP)

system-deps:
	./scripts/install-system-deps.sh

# Only the programs the walkthroughs run (getting started's MAFFT retrain, the own-programs BLAST+ sweep):
# BLAST+, MAFFT, Clustal Omega, seqkit, HMMER, BWA and taskset, from Debian, as root, what is missing.
tools:
	./scripts/install-system-deps.sh tools

# Serve at once (a pair without a champion is answered with the median of its measured runs) and train the zoo in the
# background: the retrain worker, at lower priority on both cores, trains run time then peak memory for every pair
# without a champion, and the API swaps each champion in as it is registered (progress: /readyz, `predictor models list`).
run: export PREDICTOR_WORKER_N_JOBS ?= -1
run: $(SERVE_STAMP)
	$(BIN)/predictor ingest $(DATASETS)
	$(BIN)/predictor serve --train

# Lint, format and types ([tool.ruff], [tool.mypy]) and the layers ([tool.importlinter]), all in pyproject.toml.
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-logo

# Drop the `# fmt: skip` markers, format the tree and apply ruff's safe fixes (scripts/format.sh).
format: install
	BIN=$(BIN) ./scripts/format.sh

# The quick loop: lint, layers and the tests that start no server and run no external program (not marked
# `server`) and are not long (not marked `slow`; both lists in tests/conftest.py). docs/development.md has the figures.
check: lint
	$(PYTEST) -m "not server and not slow"

# Everything, as CI runs it (.ci/run): the system's servers and tools installed, the docs built, every test.
test: install system-deps docs lint
	$(PYTEST)

# The documentation site (docs/, mkdocs.yml), built offline; any warning (a broken link, a missing page or
# docstring) fails it. `$(BIN)/mkdocs serve -a 127.0.0.1:8002` previews it.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir .site

clean:
	rm -rf $(VENV) .predictor .pytest_cache .site
