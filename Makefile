# Two commands do all the set-up on a fresh machine with Python 3.11:
#   make demo   the portal with a demo fleet, a Celery worker and beat, on http://127.0.0.1:8000 (PORT=, SIM_PORT=, VAR_DIR=)
#   make test   every test, against a throwaway PostgreSQL the run starts itself
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
# The port of the demo's telemetry simulator (the demo's telemetry sources pull it).
SIM_PORT ?= 9400
# The demo's telemetry simulator listens on loopback, which the outbound policy refuses unless allowed.
DEMO_OUTBOUND := OUTBOUND_ALLOWED_NETWORKS=127.0.0.1/32
# The demo's Slurm accounting is simulated (inventory/teams/slurm_simulator.py): the allocations' sync runs against it.
DEMO_SLURM := SLURM_SYNC_BACKEND=simulator SLURM_CLUSTER=demo
# Where the demo keeps its database, broker queue and mail (VAR_DIR=/tmp/demo2 runs a second, separate demo).
VAR_DIR ?= $(or $(PORTAL_VAR_DIR),var)
# The address links in mails and webhooks point at: the port the demo serves on.
PORTAL_URL ?= http://127.0.0.1:$(PORT)
# The demo's settings, the same for every process it runs: mail goes to files (one per message) under
# $(VAR_DIR)/mail/, not into the terminal; WARNING and above is logged (LOG_LEVEL=INFO for more); the filesystem
# broker's URL names a host, or kombu warns that it has none on every connection.
LOG_LEVEL ?= WARNING
CELERY_BROKER_URL ?= filesystem://localhost/
DEMO_ENV = DEBUG=1 PORTAL_VAR_DIR=$(abspath $(VAR_DIR)) PORTAL_URL=$(PORTAL_URL) LOG_LEVEL=$(LOG_LEVEL) \
	EMAIL_BACKEND=django.core.mail.backends.filebased.EmailBackend EMAIL_FILE_PATH=$(abspath $(VAR_DIR))/mail \
	CELERY_BROKER_URL=$(CELERY_BROKER_URL) $(DEMO_OUTBOUND) $(DEMO_SLURM)

.PHONY: demo test install install-test lint run-worker clean loadtest

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null || { echo "Python 3.11 is needed (set PYTHON=...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# The lock files pin the whole dependency tree (requirements-test.lock: the test extras). The portal
# runs from this checkout, so only its dependencies are installed.
$(VENV)/.installed: requirements.lock pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.lock
	touch $@

$(VENV)/.installed-test: requirements-test.lock requirements-ldap.lock tests/oidc/package-lock.json $(VENV)/.installed
	$(BIN)/pip install --quiet -r requirements-test.lock
	@$(BIN)/pip install --quiet -r requirements-ldap.lock || echo "python-ldap did not build (it needs libldap2-dev, \
	libsasl2-dev and a C compiler): the LDAP tests will be skipped."
	@cd tests/oidc && npm ci --silent --no-audit --no-fund || echo "npm ci in tests/oidc failed (Node.js and npm \
	are needed): the OpenID Connect tests will be skipped."
	touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

demo: install
	@echo "Migrating the database ($(VAR_DIR)/portal.sqlite3) …"
	@$(DEMO_ENV) $(BIN)/python manage.py migrate --noinput -v 0
	@$(DEMO_ENV) $(BIN)/python manage.py seed_demo --simulator-port $(SIM_PORT)
	@echo ""
	@echo "Open the portal at $(PORTAL_URL)/ and log in with one of the demo logins above."
	@echo "The portal's mail is written to $(VAR_DIR)/mail/ (a file per message), not sent."
	@echo "A Celery worker with beat and the telemetry simulator (port $(SIM_PORT)) run alongside."
	@echo "Ctrl-C stops everything."
	@echo ""
	@exec env $(DEMO_ENV) BIN=$(BIN) tools/demo.sh $(PORT) $(SIM_PORT)  # exec: Ctrl-C reaches its trap

test: install-test
	$(BIN)/ruff check .
	DEBUG=1 $(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/pytest -n 2

# Loopback load test (bench/README.md): gunicorn, PostgreSQL, Celery worker and beat as in production, then
# locust with 1 user and LOAD_USERS users for LOAD_SECONDS each; prints p50/p95/p99 and requests per second.
LOAD_USERS ?= 50
LOAD_SECONDS ?= 60
loadtest: install-test
	$(BIN)/python bench/loadtest.py --users $(LOAD_USERS) --duration $(LOAD_SECONDS)

lint: install-test
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format --check . || true

clean:
	rm -rf $(VENV) var staticfiles
