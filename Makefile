# rbc — developer entry points. `make help` lists them.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
DEMO    := records/stewart.yaml

.PHONY: help install demo test test-fast lint clean

help:  ## list targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)  ## create .venv and install rbc (editable) with dev extras

demo: $(STAMP)  ## compile and inspect the shipped Stewart platform
	@mkdir -p artifacts
	$(BIN)/rbc compile $(DEMO) -o artifacts/stewart.h5
	$(BIN)/rbc inspect artifacts/stewart.h5

test: $(STAMP)  ## run the whole test suite (slow tests included)
	$(BIN)/pytest -q

test-fast: $(STAMP)  ## run the tests not marked slow
	$(BIN)/pytest -q -m "not slow"

lint: $(STAMP)  ## ruff
	$(BIN)/ruff check src tests

clean:  ## remove the virtual environment and generated artifacts
	rm -rf $(VENV) artifacts/*.h5 artifacts/*.xml
