# rbc — developer entry points. `make help` lists them.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
DEMO    := records/stewart.yaml

.PHONY: help install demo test test-fast lint clean repro repro-quick repro-go2 repro-excavation repro-dances repro-kangaroo

help:  ## list targets
	@grep -E '^[a-z0-9%-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-22s %s\n", $$1, $$2}'

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

repro: $(STAMP)  ## every reproduction target -> artifacts/repro/index.md (docs/repro.md)
	$(BIN)/rbc repro

repro-quick: $(STAMP)  ## every target on its small case list (make test runs it too)
	$(BIN)/rbc repro --quick

repro-dances: $(STAMP)  ## issue 20's dances: 3 formations x 8 policies x 4 plants x 30 s on Dask (days of CPU; --quick: rbc repro dances --quick)
	$(BIN)/rbc repro dances

repro-kangaroo: $(STAMP)  ## the Kangaroo-like biped's targets (issue 21 item 2; docs/supports.md)
	$(BIN)/rbc repro kangaroo-ablation kangaroo-landing

repro-excavation: $(STAMP)  ## the excavator moving material in MuJoCo (issue 21 item 3; docs/excavation.md)
	$(BIN)/rbc repro excavation

repro-%: $(STAMP)  ## one target, e.g. make repro-table5-solvers (rbc repro --list)
	$(BIN)/rbc repro $*

repro-go2: $(STAMP)  ## the Go2 course (issue 21): alias of make repro-go2-course
	$(BIN)/rbc repro go2-course

lint: $(STAMP)  ## ruff
	$(BIN)/ruff check src tests

clean:  ## remove the virtual environment and generated artifacts
	rm -rf $(VENV) artifacts/*.h5 artifacts/*.xml artifacts/repro artifacts/repro-quick
