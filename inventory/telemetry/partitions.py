"""Monthly partitions of the hourly rollup tables on PostgreSQL (``GPUHourly``, ``NodeHourly``: ~7 million rows a
month at 10,000 GPUs). Migration 0010 makes them tables partitioned by range of ``hour``, one partition per
calendar month in UTC (``inventory_gpuhourly_p2026_12``) and a DEFAULT partition; elsewhere (SQLite, the demo)
everything here does nothing.

Partitions exist before rows arrive, three ways:
- the rollup upserts create the months they write (``ensure_partitions``: one catalog query when they exist);
- the daily retention task creates this month's and the next ``MONTHS_AHEAD`` months' (``maintain``), so the
  month's first pull does not take the parent table's lock while dashboards read it;
- any other write (the ORM, the admin, a bulk load) to a month without a partition lands in the DEFAULT partition,
  never lost and never failing: the month's partition, when created, takes its rows out of it.

Retention drops whole months (``drop_months_before``) instead of deleting their rows one by one.
"""

import re
from datetime import UTC, datetime

from django.db import connections, router, transaction

MONTHS_AHEAD = 2


def month_start(moment):
    """The first instant of ``moment``'s month in UTC (partition bounds are absolute instants: a change of the
    portal's TIME_ZONE must never make two partitions overlap)."""
    return moment.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def add_months(month, count):
    index = month.year * 12 + month.month - 1 + count
    return month.replace(year=index // 12, month=index % 12 + 1)


def months_of(start, end):
    """The month starts (UTC) of the instants in [start, end)."""
    months, month = [], month_start(start)
    while month < end:
        months.append(month)
        month = add_months(month, 1)
    return months


def partition_name(table, month):
    return f"{table}_p{month:%Y_%m}"


def _connection(model):
    return connections[router.db_for_write(model)]


def create_months(connection, table, months):
    """Create the monthly partitions of ``table`` among ``months`` (month starts) that do not exist yet. Rows of a
    month already written to the DEFAULT partition move into the new partition in the same transaction. An advisory
    lock per partition keeps two workers from creating the same one."""
    quote = connection.ops.quote_name
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        for month in sorted(months):
            name = partition_name(table, month)
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s)), to_regclass(%s)", [name, name])
            if cursor.fetchone()[1] is not None:
                continue
            # Bounds are SQL literals (partition bounds take no parameters), written from datetimes, not input.
            low, high = (f"'{bound.isoformat()}'" for bound in (month, add_months(month, 1)))
            cursor.execute(f"CREATE TABLE {quote(name)} (LIKE {quote(table)} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)")
            cursor.execute(
                f"WITH moved AS (DELETE FROM {quote(table + '_default')} WHERE hour >= {low} AND hour < {high} "
                f"RETURNING *) INSERT INTO {quote(name)} SELECT * FROM moved")
            cursor.execute(f"ALTER TABLE {quote(table)} ATTACH PARTITION {quote(name)} "
                           f"FOR VALUES FROM ({low}) TO ({high})")


def ensure_partitions(model, hours):
    """Before writing ``model``'s rows of ``hours``: create the monthly partitions they need that are missing."""
    connection = _connection(model)
    if connection.vendor != "postgresql" or not hours:
        return
    table = model._meta.db_table
    months = {partition_name(table, month_start(hour)): month_start(hour) for hour in hours}
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM unnest(%s::text[]) AS name WHERE to_regclass(name) IS NULL", [list(months)])
        missing = [months[name] for (name,) in cursor.fetchall()]
    if missing:
        create_months(connection, table, missing)


def maintain(models, now):
    """This month's and the next ``MONTHS_AHEAD`` months' partitions of ``models``' tables."""
    this_month = month_start(now)
    for model in models:
        ensure_partitions(model, [add_months(this_month, n) for n in range(MONTHS_AHEAD + 1)])


def drop_months_before(model, cutoff):
    """Drop ``model``'s monthly partitions that end at or before ``cutoff``; returns the rows they held (what a
    DELETE of them would have counted). Rows of the month ``cutoff`` falls in, and any in the DEFAULT partition,
    are left to a DELETE, which partition pruning confines to those two."""
    connection = _connection(model)
    if connection.vendor != "postgresql":
        return 0
    table, quote, dropped = model._meta.db_table, connection.ops.quote_name, 0
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        connection.check_constraints()  # a DROP refuses to run while this transaction has foreign key checks pending
        cursor.execute("SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                       "WHERE i.inhparent = %s::regclass", [table])
        for (name,) in cursor.fetchall():
            found = re.fullmatch(re.escape(table) + r"_p(\d{4})_(\d{2})", name)
            if found and add_months(datetime(int(found[1]), int(found[2]), 1, tzinfo=UTC), 1) <= cutoff:
                cursor.execute(f"SELECT count(*) FROM {quote(name)}")
                dropped += cursor.fetchone()[0]
                cursor.execute(f"DROP TABLE {quote(name)}")
    return dropped
