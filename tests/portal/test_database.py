from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from django.db import connection
from django.db.backends.postgresql.psycopg_any import get_adapters_template
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.pq import Format


def test_suite_runs_on_postgresql(db):
    assert connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        assert int(cursor.fetchone()[0].split(".")[0]) >= 13


def test_timestamps_are_read_by_psycopgs_compiled_parser(db):
    """``portal.db.speed_up_timestamps`` replaced Django's pure-Python loader of ``timestamptz`` on every connection."""
    connection.ensure_connection()
    adapters = connection.connection.adapters
    loader = adapters.get_loader(adapters.types["timestamptz"].oid, Format.TEXT)
    assert loader.__module__ == "portal.db"
    assert loader.timezone == connection.timezone  # what Django compares before registering a loader per cursor


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(moment=st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
                           timezones=st.sampled_from([UTC, ZoneInfo("Europe/Berlin"), ZoneInfo("America/St_Johns"),
                                                      ZoneInfo("Asia/Kolkata")]), allow_imaginary=False))
def test_the_compiled_timestamp_parser_reads_what_djangos_reads(db, moment):
    """The same text from PostgreSQL (any instant, microseconds, odd offsets) gives the same aware datetime through
    the portal's loader as through Django's, in the time zone Django expects; and a value written reads back equal."""
    connection.ensure_connection()
    adapters = connection.connection.adapters
    oid = adapters.types["timestamptz"].oid
    ours = adapters.get_loader(oid, Format.TEXT)(oid, connection.connection)
    djangos = get_adapters_template(True, connection.timezone).get_loader(oid, Format.TEXT)(oid, connection.connection)
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::timestamptz::text, %s::timestamptz", [moment, moment])
        text, read = cursor.fetchone()
    instant = moment.astimezone(UTC)  # compared in UTC: Python calls an ambiguous local time equal to nothing
    assert ours.load(text.encode()) == djangos.load(text.encode()) == instant
    assert ours.load(text.encode()).tzinfo is djangos.load(text.encode()).tzinfo
    assert read == instant and read.tzinfo is connection.timezone
