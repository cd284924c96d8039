# taskfactory — `make run` builds a dataset, `make test` runs the whole suite.
# Both set up what they need: the Python environment (uv, from uv.lock) and, as root,
# a Docker engine with the offline base image.

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
UV := python3 -m uv
DATA ?= data
TASKS ?= 20
SEED ?= 1
# Test processes (pytest-xdist), each taking whole files: most tests wait on containers,
# servers and subprocesses, so two keep the two cores busier than one.
TEST_WORKERS ?= 2
export UV_PYTHON_DOWNLOADS := never
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export DO_NOT_TRACK := 1

.PHONY: run test venv engine image compose lint typecheck bench clean-data

$(VENV)/.synced: pyproject.toml uv.lock
	@$(UV) --version >/dev/null 2>&1 || python3 -m pip install --quiet uv 2>/dev/null \
	  || python3 -m pip install --quiet --user --break-system-packages uv
	$(UV) sync --frozen --python python3 --compile-bytecode
	@touch $@

venv: $(VENV)/.synced

# The Docker engine and the base image (root only; skipped with a note otherwise).
engine:
	@if [ "$$(id -u)" = 0 ]; then bash environments/engine/ensure-docker.sh; \
	else echo "engine: not root; using a Docker daemon only if one already answers"; fi

image: engine
	@if [ "$$(id -u)" = 0 ]; then bash environments/engine/build-base-image.sh; fi

# The Docker Compose v2 plugin, which Harbor's docker environment needs (not taskfactory).
compose: engine
	bash environments/engine/install-compose.sh

run: venv
	@$(MAKE) --no-print-directory image || echo "run: no Docker engine here; the local backend will be used"
	$(VENV)/bin/taskfactory run --tasks $(TASKS) --seed $(SEED) --data $(DATA)
	$(VENV)/bin/taskfactory query "select ecosystem, count(*) as tasks, avg(n_steps) as avg_steps, \
	  sum(gate.reference_reward) as solved_by_reference from tasks group by ecosystem" --data $(DATA)

test: venv
	@$(MAKE) --no-print-directory image || echo "test: no Docker engine; Docker-backed tests will be skipped"
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/pytest -ra --durations=25 -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

lint: venv
	$(VENV)/bin/ruff check .

# mypy's settings are in pyproject.toml: the whole package, strict on schemas/ and
# environments/, the rest (flows/, tasks/) non-strict.
typecheck: venv
	$(VENV)/bin/mypy

bench: venv image
	$(PY) benchmarks/throughput.py

clean-data:
	rm -rf $(DATA)
