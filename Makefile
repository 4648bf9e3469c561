# The README's two commands: `make run` and `make test`. Each sets up what a fresh clone lacks.
# `make` alone lists the targets.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# `make test` runs on its own throwaway embedded PostgreSQL, removed afterwards.
TEST_PGDATA := .local/test-pgdata
# `make test` runs the tests in TEST_WORKERS processes (pytest-xdist), each on a test database of its
# own on the one server; tests marked xdist_group run one after another in one worker. One process:
# make test PYTEST_ARGS='-n 0' (or -p no:xdist, which leaves the plugin out).
TEST_WORKERS ?= 3
TEST_PARALLEL = $(if $(findstring no:xdist,$(PYTEST_ARGS)),,-n $(TEST_WORKERS) --dist loadgroup)
# The port `make run` serves on: make run PORT=8001.
PORT ?= 8000

.DEFAULT_GOAL := help
.PHONY: help run test bench lint install stop check-python clean

help: ## list the targets (this)
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  make %-8s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

check-python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Lifecycle needs Python 3.11 or newer; found " + sys.version.split()[0] + " (set PYTHON=python3.11).")'

$(BIN)/python: | check-python
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

install: $(VENV)/.installed ## make .venv and install the project in it

# A development .env (DEBUG on, a random SECRET_KEY) so that manage.py typed by hand works too.
.env: | $(BIN)/python
	@$(BIN)/python -c 'import secrets; print("DEBUG=true\nSECRET_KEY=" + secrets.token_urlsafe(50) + "".join(f"\nDEMO_{r}_PASSWORD=" + secrets.token_urlsafe(12) for r in ("ADMIN", "SUPPORT", "AUDITOR", "INTEGRATOR", "PRIVACY")))' > $@
	@echo "wrote .env (development settings; not for production)"

run: install .env ## set up, load the demo data, serve the admin on 127.0.0.1:PORT (8000) with the worker and the mail and webhook listeners
	@$(BIN)/python -m lifecycle.ops.local_run --port $(PORT)

# PYTHONDONTWRITEBYTECODE is emptied for the run: where the environment sets it, each of the suite's
# processes (the xdist workers, every manage.py a test starts) compiled the project and rewrote the
# tests' asserts again, about 8 s of CPU per worker before its first test. The bytecode goes to
# __pycache__ directories, which git ignores.
test: install ## run the whole suite on a throwaway embedded PostgreSQL (PYTEST_ARGS=...)
	@status=0; \
	PYTHONDONTWRITEBYTECODE= LIFECYCLE_PGDATA=$(TEST_PGDATA) DEBUG=true $(BIN)/python -m pytest $(TEST_PARALLEL) --durations=15 $(PYTEST_ARGS) || status=$$?; \
	LIFECYCLE_PGDATA=$(TEST_PGDATA) $(BIN)/python -m lifecycle.ops.embedded_db stop --delete >/dev/null; \
	exit $$status

# The benches use the embedded PostgreSQL of `make run` (DATABASE_URL unset), each on a scratch database.
bench: install ## run every bench and write its figures into docs/measurements.md (QUICK=1: small sizes; ONLY=admin,api)
	@$(BIN)/python -m bench.all $(if $(QUICK),--quick) $(if $(ONLY),--only $(ONLY))

lint: install ## ruff, the formatter's check and the import layers
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-logo

stop: ## stop the embedded PostgreSQL that make run and manage.py use
	$(BIN)/python -m lifecycle.ops.embedded_db stop

# Run as root, the databases of .local live in /var/lib/lifecycle/<key>/ (lifecycle/ops/embedded_db.py).
clean: ## stop the embedded PostgreSQL; delete .venv, .local and the databases (run as root: theirs in /var/lib/lifecycle)
	@if [ -x $(BIN)/python ]; then \
		if [ -n "$$LIFECYCLE_PGDATA" ]; then $(BIN)/python -m lifecycle.ops.embedded_db stop || exit 1; fi; \
		LIFECYCLE_PGDATA="$(CURDIR)/.local/pgdata" $(BIN)/python -m lifecycle.ops.embedded_db stop --delete || exit 1; \
		LIFECYCLE_PGDATA="$(CURDIR)/$(TEST_PGDATA)" $(BIN)/python -m lifecycle.ops.embedded_db stop --delete >/dev/null || exit 1; \
	fi
	rm -rf $(VENV) .local
