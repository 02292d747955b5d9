# Two commands do all the set-up on a fresh machine with Python 3.11:
#   make demo   the portal with a demo fleet, a Celery worker and beat, on http://127.0.0.1:8000 (PORT=, SIM_PORT=)
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

$(VENV)/.installed-test: requirements-test.lock $(VENV)/.installed
	$(BIN)/pip install --quiet -r requirements-test.lock
	touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

demo: install
	@echo "Migrating the database (var/portal.sqlite3) …"
	@DEBUG=1 $(BIN)/python manage.py migrate --noinput -v 0
	@DEBUG=1 $(DEMO_OUTBOUND) $(DEMO_SLURM) $(BIN)/python manage.py seed_demo --simulator-port $(SIM_PORT)
	@echo ""
	@echo "Open the portal at http://127.0.0.1:$(PORT)/ and log in with one of the demo logins above."
	@echo "A Celery worker with beat and the telemetry simulator (port $(SIM_PORT)) run alongside."
	@echo "Ctrl-C stops everything."
	@echo ""
	@trap 'kill 0' INT TERM EXIT; \
	DEBUG=1 $(BIN)/python manage.py simulate_telemetry --port $(SIM_PORT) & \
	DEBUG=1 $(DEMO_OUTBOUND) $(DEMO_SLURM) $(BIN)/celery -A portal worker --beat --loglevel=WARNING --concurrency=2 & \
	DEBUG=1 $(DEMO_OUTBOUND) $(DEMO_SLURM) $(BIN)/python manage.py runserver 127.0.0.1:$(PORT)

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
