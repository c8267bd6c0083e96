# The two commands: `make run` (ingest, train, register, serve) and `make test`.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DATASETS := $(wildcard data/measurements/*.csv)

.PHONY: install system-deps tools run test docs bench clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e '.[test,docs,ray]'
	touch $(STAMP)

install: $(STAMP)

system-deps:
	./scripts/install-system-deps.sh

# Only the programs the walkthroughs run (getting started's MAFFT retrain, the own-programs BLAST+ sweep):
# BLAST+, MAFFT, Clustal Omega, seqkit, HMMER, BWA and taskset, from Debian, as root, what is missing.
tools:
	./scripts/install-system-deps.sh tools

run: install
	$(BIN)/predictor ingest $(DATASETS)
	$(BIN)/predictor train
	$(BIN)/predictor serve

test: install system-deps docs
	$(BIN)/lint-imports --no-logo
	$(BIN)/python -m pytest

# The documentation site (docs/, mkdocs.yml), built offline; any warning (a broken link, a missing page or
# docstring) fails it. `$(BIN)/mkdocs serve -a 127.0.0.1:8002` previews it.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir .site

clean:
	rm -rf $(VENV) .predictor .pytest_cache .site
