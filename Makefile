PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint fuzz bench bench-quick bench-transform clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/quickstart.py

# one worker per core (pytest-xdist): the suite is about 11 CPU-minutes
test: $(STAMP)
	$(PY) -m pytest -n auto compiler_tests

# pyflakes and pycodestyle's errors (pyproject.toml [tool.ruff]); ruff is in the dev extra
lint: $(STAMP)
	$(PY) -m ruff check src compiler_tests

# 10,000 random programs or more, each checked against finite differences, the
# in-place/out-of-place paths, aliasing and mutation of inputs and cotangents.
# 10,000 random programs, one worker per core; FUZZ_SEED=n draws another set
FUZZ_SEED ?= 1
fuzz: $(STAMP)
	$(PY) compiler_tests/fuzzing.py --programs 10000 --seed $(FUZZ_SEED)

# The benchmarks' peers (the `bench` extra). A peer that cannot be installed is
# left out and its cells say so; the suite still runs.
BENCH_STAMP := $(VENV)/.bench-installed
BENCH_PEERS := jax autograd torch==2.13.0 matplotlib

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[bench]' || \
	  for p in $(BENCH_PEERS); do \
	    $(PY) -m pip install --quiet "$$p" || echo "bench: could not install $$p; its cells will say so"; \
	  done
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(PY) benchmarks/run.py
	$(PY) benchmarks/transform_time.py
	$(PY) benchmarks/forward.py          # jvp of elementwise chains vs primal, jax.jit(jax.jvp)
	$(PY) benchmarks/higher_order.py     # the MLP loss's HVP vs jax.jit of JAX's HVP
	$(PY) benchmarks/call_cost.py        # issue 17's loop and per-call rows

# first-transform time against function size (issue 17): N -> seconds, ms per
# statement, and the ratio of the two largest sizes (2 linear, 4 quadratic)
bench-transform: $(STAMP)
	$(PY) benchmarks/transform_time.py

bench-quick: $(BENCH_STAMP)
	$(PY) benchmarks/run.py --quick

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
