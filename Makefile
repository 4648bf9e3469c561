# The README's two commands: `make run` and `make test`. Each sets up what a fresh clone lacks.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# `make test` runs on its own throwaway embedded PostgreSQL, removed afterwards.
TEST_PGDATA := .local/test-pgdata

.PHONY: run test lint install stop check-python clean

check-python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Lifecycle needs Python 3.11 or newer; found " + sys.version.split()[0] + " (set PYTHON=python3.11).")'

$(BIN)/python: | check-python
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

install: $(VENV)/.installed

# A development .env (DEBUG on, a random SECRET_KEY) so that manage.py typed by hand works too.
.env: | $(BIN)/python
	@$(BIN)/python -c 'import secrets; print("DEBUG=true\nSECRET_KEY=" + secrets.token_urlsafe(50) + "".join(f"\nDEMO_{r}_PASSWORD=" + secrets.token_urlsafe(12) for r in ("ADMIN", "SUPPORT", "AUDITOR")))' > $@
	@echo "wrote .env (development settings; not for production)"

run: install .env
	$(BIN)/python manage.py migrate --no-input
	$(BIN)/python manage.py seed_demo
	@echo "Admin: http://127.0.0.1:8000/admin/  (Ctrl-C stops the web server, worker, mail listener and database)"
	@trap '$(BIN)/python -m lifecycle.embedded_db stop' EXIT; trap 'exit 130' INT TERM; \
		PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/honcho --procfile Procfile start

test: install
	@status=0; \
	LIFECYCLE_PGDATA=$(TEST_PGDATA) DEBUG=true $(BIN)/python -m pytest $(PYTEST_ARGS) || status=$$?; \
	LIFECYCLE_PGDATA=$(TEST_PGDATA) $(BIN)/python -m lifecycle.embedded_db stop --delete >/dev/null; \
	exit $$status

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-logo

stop:
	$(BIN)/python -m lifecycle.embedded_db stop

clean: stop
	rm -rf $(VENV) .local
