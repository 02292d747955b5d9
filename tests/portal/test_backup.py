"""Backup and restore as docs/backup.md describes it: ``pg_dump -Fc`` of the (throwaway) test database,
``pg_restore`` into a fresh database, and every row of every table (objects, their history rows, the
change log's users and permissions) is there again, byte for byte as PostgreSQL returns it."""

import subprocess
import uuid
from decimal import Decimal

import psycopg
import pytest
from django.apps import apps
from django.db import connection
from psycopg import sql

from inventory.lifecycle import transition
from inventory.models import GPU, LifecycleState, Node
from planning.models import Contract
from tests.factories import make_gpu, make_node, make_rack, make_site, make_team
from tests.helpers.pgserver import find_bindir

# Committed data: pg_dump reads the database from its own session.
pytestmark = pytest.mark.django_db(transaction=True)


def conninfo(dbname):
    s = connection.settings_dict
    return {"host": s["HOST"], "port": str(s["PORT"]), "user": s["USER"], "dbname": dbname}


def pg(tool, *args, dbname):
    info = conninfo(dbname)
    command = [str(find_bindir() / tool), "-h", info["host"], "-p", info["port"], "-U", info["user"],
               "-d", info["dbname"], *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{' '.join(command)}:\n{result.stderr}"
    return result


def every_table():
    """Every table Django manages (objects, history, auth, axes...), with its primary key column."""
    return sorted({(model._meta.db_table, model._meta.pk.column) for model in apps.get_models()
                   if model._meta.managed and not model._meta.proxy})


def snapshot(dbname):
    rows = {}
    with psycopg.connect(**conninfo(dbname)) as conn:
        for table, pk in every_table():
            query = sql.SQL("SELECT * FROM {} ORDER BY {}").format(sql.Identifier(table), sql.Identifier(pk))
            rows[table] = conn.execute(query).fetchall()
    return rows


@pytest.fixture
def inventory_with_history(manager):
    """Objects with several history rows each: created, edited, moved through the lifecycle."""
    site = make_site(name="fra-1")
    rack = make_rack(site, name="fra-1-r01")
    nodes = [make_node(site=site, rack=rack, hostname=f"dgx-{i:02}", state=LifecycleState.BURN_IN) for i in range(3)]
    for node in nodes:
        make_gpu(node=node)
        node.owner_team = make_team("vision")
        node.save()
    transition(nodes[0], LifecycleState.IN_SERVICE, user=manager, reason="burn-in passed")
    contract = Contract.objects.create(kind=Contract.Kind.SUPPORT, vendor="Acme", reference="SUP-1",
                                       start="2026-01-01", end="2027-12-31", monthly_cost=Decimal("12345.67"))
    contract.nodes.add(*nodes)
    return nodes


@pytest.fixture
def restored_database():
    name = f"restore_{uuid.uuid4().hex[:12]}"
    with connection.cursor() as cursor:
        cursor.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)).as_string(cursor.connection))
    yield name
    with connection.cursor() as cursor:
        cursor.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name))
                       .as_string(cursor.connection))


def test_dump_and_restore_keep_every_object_and_history_row(inventory_with_history, restored_database, tmp_path):
    source = connection.settings_dict["NAME"]
    dump = tmp_path / "portal.dump"
    pg("pg_dump", "-Fc", "--no-owner", "-f", str(dump), dbname=source)
    assert dump.stat().st_size > 0
    pg("pg_restore", "--no-owner", "--exit-on-error", "--single-transaction", str(dump), dbname=restored_database)

    before, after = snapshot(source), snapshot(restored_database)
    assert after == before  # every table, every row, every column
    history = Node.history.model._meta.db_table
    assert len(after[history]) >= 3 * 2 + 1  # created and edited, plus the state change
    assert len(after[GPU.history.model._meta.db_table]) >= 3
    assert len(after[Node._meta.db_table]) == 3
    assert sum(len(rows) for rows in after.values()) > 100  # roles, permissions, content types, objects

    # The restored database is usable as it is: sequences continue after the restored rows.
    with psycopg.connect(**conninfo(restored_database)) as conn:
        max_id = conn.execute(sql.SQL("SELECT max(history_id) FROM {}").format(sql.Identifier(history))).fetchone()[0]
        next_id = conn.execute("SELECT nextval(pg_get_serial_sequence(%s, 'history_id'))", [history]).fetchone()[0]
        assert next_id > max_id
