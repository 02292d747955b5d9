import os

import dj_database_url
import pytest
from django.db.models.signals import post_migrate

from portal.roles import ADMIN, MANAGER, VIEWER
from tests.helpers.accounts import make_user, token_client
from tests.helpers.api_client import generated_package
from tests.helpers.pgserver import throwaway_postgres
from tests.helpers.slurmcluster import missing_packages, throwaway_slurm


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix):
    """Point Django at a real PostgreSQL for the whole run (one server per xdist worker)."""
    from django.conf import settings
    from django.db import connections

    def use(config):
        # Update in place (Django's connection handler holds this very dict) and drop the connection
        # object made at start-up so the next access builds one with the PostgreSQL backend.
        settings.DATABASES["default"].update({"OPTIONS": {}, **config})  # none of SQLite's options
        connections["default"].close()
        del connections["default"]

    if os.environ.get("TEST_DATABASE_URL"):
        use(dj_database_url.parse(os.environ["TEST_DATABASE_URL"]))
        yield
        return
    with throwaway_postgres() as (host, port, user):
        use({"ENGINE": "django.db.backends.postgresql", "NAME": "postgres", "HOST": host, "PORT": port,
             "USER": user, "PASSWORD": "", "CONN_MAX_AGE": 0})
        yield


def restore_catalog(sender, using, apps=None, **kwargs):
    """A transactional test's flush empties the tables the data migrations filled, and then emits post_migrate
    (the roles come back that way): load the hardware catalog again, as its migrations did, so that the tests after
    it see the catalog whatever ran before them on the same worker."""
    from importlib import import_module

    from django.apps import apps as installed
    from django.db import connections

    apps = apps or installed  # flush sends no registry: the installed models are the migrated ones
    if sender.label != "inventory" or apps.get_model("inventory", "GPUModel").objects.using(using).exists():
        return
    editor = connections[using].schema_editor()  # the migrations' functions read the alias from it
    import_module("inventory.migrations.0002_catalog").load_catalog(apps, editor)
    import_module("inventory.migrations.0006_scenario_costs").set_list_prices(apps, editor)
    import_module("inventory.migrations.0011_catalog_more_gpus").load(apps, editor)


post_migrate.connect(restore_catalog, dispatch_uid="tests-restore-catalog")


def pytest_configure(config):
    config.addinivalue_line("markers", "slurm: against a real one-machine Slurm cluster (the slurm_cluster fixture)")
    config.addinivalue_line("markers", "slow: a minute or more, e.g. make demo for real (-m 'not slow' skips them)")


@pytest.fixture(scope="session")
def slurm_cluster():
    """A real Slurm 22.05 (slurmdbd on MariaDB, slurmctld, slurmd with 8 GPUs in gres.conf) for the whole run, one
    per xdist worker that needs it (tests/helpers/slurmcluster.py); skips where the Debian packages are missing."""
    missing = missing_packages()
    if missing:
        pytest.skip(f"no real Slurm: missing Debian packages {', '.join(missing)} "
                    f"(apt-get install -y {' '.join(missing)})")
    if os.geteuid() != 0:
        pytest.skip("the real Slurm cluster runs as root (SlurmUser=root; munged and MariaDB run as their users)")
    with throwaway_slurm() as cluster:
        yield cluster


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """A client package generated from the OpenAPI schema (``tests/helpers/api_client.py``), once per module."""
    with generated_package(tmp_path_factory.mktemp("generated")) as package:
        yield package


@pytest.fixture
def viewer(db):
    return make_user("vera", VIEWER)


@pytest.fixture
def manager(db):
    return make_user("max", MANAGER)


@pytest.fixture
def admin_user(db):
    return make_user("ada", ADMIN)


@pytest.fixture
def manager_api(manager):
    return token_client(manager)


@pytest.fixture
def viewer_api(viewer):
    return token_client(viewer)


@pytest.fixture
def viewer_client(client, viewer):
    client.force_login(viewer)
    return client


@pytest.fixture
def manager_client(client, manager):
    client.force_login(manager)
    return client


@pytest.fixture
def retries(monkeypatch):
    """Run a webhook delivery's retries at once, recording the countdowns asked for (Celery would wait them out)."""
    from planning.webhooks import delivery as webhooks
    from tests.helpers.webhooks import RetryNow

    countdowns = []

    def retry(countdown):
        countdowns.append(countdown)
        return RetryNow()

    monkeypatch.setattr(webhooks.send_webhook, "retry", retry)
    return countdowns
