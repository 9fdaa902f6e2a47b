# Each target creates .venv and installs what it needs, so both work on a fresh machine with only Python.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SCENARIO ?= scenarios/quick.yaml

.PHONY: run test test-fast lint clean browser

# CuPy imports without a GPU: the tests check the device code's CuPy API and skip reasons with it
# (best effort: without it those tests skip and say why).
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	$(PY) -m pip install -q torch==2.13.0  # CPU tests of the training strategies; GPU users install their own torch
	$(PY) -m pip install -q 'cupy-cuda12x>=13' || echo "# cupy-cuda12x not installed: the CuPy API test will skip"
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/commbench run $(SCENARIO)

# Headless Chromium for the report's browser test: Debian's chromium where missing and we can
# (root with apt-get); never fails the target - without it that test skips and says why.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	    { DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium \
	        >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && \
	      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium \
	        >/dev/null 2>&1; }; }; } || \
	  echo "# chromium not installed (needs root and apt-get): the browser test will skip"

test: $(STAMP) browser
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -q tests

# The inner loop: everything but the multi-rank training jobs and the slow end-to-end tests
# (Slurm cluster, A/B rounds, the Open MPI environment).
test-fast: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -q -m "not training and not slow" tests

lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) runs .pytest_cache
