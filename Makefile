# The two commands: `make run` (ingest, train, register, serve) and `make test`.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DATASETS := $(wildcard data/measurements/*.csv)

.PHONY: install system-deps run test bench clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

system-deps:
	./scripts/install-system-deps.sh

run: install
	$(BIN)/predictor ingest $(DATASETS)
	$(BIN)/predictor train
	$(BIN)/predictor serve

test: install system-deps
	$(BIN)/lint-imports --no-logo
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) .predictor .pytest_cache
