# Each target creates .venv and installs what it needs, so both work on a fresh machine with only Python.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SCENARIO ?= scenarios/quick.yaml

.PHONY: run test lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/commbench run $(SCENARIO)

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -q tests

lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) runs .pytest_cache
