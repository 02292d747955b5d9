"""Query helpers shared by every app."""

from django.db import connections, router, transaction
from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce


def related_count(model, field):
    """``annotate(n=related_count(GPU, "node"))``: how many ``model`` rows point at each row, as a
    correlated subquery (no GROUP BY, so several counts and ``select_related`` combine freely)."""
    rows = model._default_manager.filter(**{field: OuterRef("pk")}).order_by().values(field)
    return Coalesce(Subquery(rows.annotate(n=Count("pk")).values("n"), output_field=IntegerField()), 0)


TIMESTAMPS = ("created", "updated")


def without_timestamps(queryset):
    """``queryset`` without the ``created``/``updated`` columns of its rows and of the rows it joins
    (``select_related``), for a table that shows none of them: loading a PostgreSQL timestamp cost about
    10 µs with Django's loader, most of a list page's fetch when every row joins four models (a few µs with
    ``speed_up_timestamps``' loader, still the largest part of a row)."""

    def timestamps(model, related, prefix):
        names = {field.name for field in model._meta.concrete_fields}
        yield from (f"{prefix}{name}" for name in TIMESTAMPS if name in names)
        for name, nested in related.items():
            yield from timestamps(model._meta.get_field(name).related_model, nested, f"{prefix}{name}__")

    related = queryset.query.select_related
    return queryset.defer(*timestamps(queryset.model, related if isinstance(related, dict) else {}, ""))


def bulk_upsert(model, unique_fields, update_fields, rows, batch_size=2000):
    """``INSERT … ON CONFLICT (unique_fields) DO UPDATE`` for many rows, each a sequence of values in the
    order ``[*unique_fields, *update_fields]`` (attribute names, e.g. ``gpu_id``; no model instances, which
    would cost more to build than the database takes to write them).

    On PostgreSQL the rows are streamed with ``COPY`` into a temporary staging table and merged with one
    ``INSERT … SELECT … ON CONFLICT``, several times faster than multi-row INSERTs (see
    ``bench/telemetry.py``); elsewhere (SQLite, the demo) the same ``INSERT … ON CONFLICT`` through
    ``executemany``, which skips building model instances.
    A unique key must not repeat within one call.
    """
    if not rows:
        return 0
    opts = model._meta
    names = [*unique_fields, *update_fields]
    fields = [opts.get_field(name.removesuffix("_id")) for name in names]
    connection = connections[router.db_for_write(model)]
    quote = connection.ops.quote_name
    columns = [quote(field.column) for field in fields]
    listed = ", ".join(columns)
    table, staging = quote(opts.db_table), quote(f"staging_{opts.db_table}")
    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in columns[len(unique_fields):])
    conflict = f"ON CONFLICT ({', '.join(columns[:len(unique_fields)])}) DO UPDATE SET {updates}"
    if connection.vendor != "postgresql":
        # SQLite (the demo): the same upsert, row by row through executemany, with values as the fields store them.
        sql = f"INSERT INTO {table} ({listed}) VALUES ({', '.join(['%s'] * len(columns))}) {conflict}"
        with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
            _executemany(cursor, connection, sql, fields, rows, batch_size)
        return len(rows)
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        # Dropped right after the merge: ON COMMIT DROP alone would keep it for a second call in one transaction.
        cursor.execute(f"CREATE TEMP TABLE {staging} AS SELECT {listed} FROM {table} WITH NO DATA")
        with cursor.cursor.copy(f"COPY {staging} ({listed}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        cursor.execute(f"INSERT INTO {table} ({listed}) SELECT {listed} FROM {staging} {conflict}")
        cursor.execute(f"DROP TABLE {staging}")
    return len(rows)


def bulk_insert(model, fields, rows, batch_size=2000):
    """Plain ``INSERT`` of many rows, each a sequence of values in the order of ``fields`` (attribute names): on
    PostgreSQL one ``COPY`` straight into the table, elsewhere ``executemany``. For rows whose key the caller has
    just deleted under a lock (a rollup recomputed), where ``bulk_upsert``'s conflict clause has nothing to do."""
    if not rows:
        return 0
    opts = model._meta
    columns_of = [opts.get_field(name.removesuffix("_id")) for name in fields]
    connection = connections[router.db_for_write(model)]
    quote = connection.ops.quote_name
    listed = ", ".join(quote(field.column) for field in columns_of)
    table = quote(opts.db_table)
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({listed}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            sql = f"INSERT INTO {table} ({listed}) VALUES ({', '.join(['%s'] * len(columns_of))})"
            _executemany(cursor, connection, sql, columns_of, rows, batch_size)
    return len(rows)


def _executemany(cursor, connection, sql, fields, rows, batch_size):
    """``sql`` for each row (SQLite), in batches, with values as the fields store them."""
    prepare = [field.get_db_prep_save for field in fields]
    for start in range(0, len(rows), batch_size):
        cursor.executemany(sql, [[prep(value, connection) for prep, value in zip(prepare, row, strict=True)]
                                 for row in rows[start:start + batch_size]])


def analyze(*models):
    """Refresh PostgreSQL's statistics of ``models``' tables after a bulk load (no-op elsewhere). Until autovacuum
    gets to them (never, for rows a transaction has not committed yet) the planner takes a freshly filled table
    for an empty one and can pick a plan that runs minutes instead of milliseconds."""
    for model in models:
        connection = connections[router.db_for_write(model)]
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(f"ANALYZE {connection.ops.quote_name(model._meta.db_table)}")


def speed_up_timestamps(sender, connection, **kwargs):
    """On ``connection_created``: load PostgreSQL ``timestamptz`` values with psycopg's C parser.

    Django's loader (``BaseTzLoader``) subclasses psycopg's pure-Python one to set the time zone it expects, and
    a C loader cannot be subclassed: every timestamp a query reads was parsed in Python, about 3.5 µs where C takes
    1 (a list of 1,000 interruptions reads 2,000-3,000). This loader wraps the C one and sets the same time zone;
    it keeps Django's ``timezone`` attribute, which Django compares before registering a loader per cursor."""
    if connection.vendor != "postgresql":
        return
    try:
        from psycopg_binary import _psycopg as compiled
    except ImportError:  # psycopg without its binary package: Django's loader stays
        return
    from psycopg.adapt import Loader
    from psycopg.pq import Format

    adapters = connection.connection.adapters
    django_loader = adapters.get_loader(adapters.types["timestamptz"].oid, Format.TEXT)  # Django reads text
    zone = getattr(django_loader, "timezone", None)

    class TimestamptzLoader(Loader):
        timezone = zone

        def __init__(self, oid, context=None):
            super().__init__(oid, context)
            self.compiled = compiled.TimestamptzLoader(oid, context)

        def load(self, data):
            return self.compiled.load(data).replace(tzinfo=self.timezone)

    adapters.register_loader("timestamptz", TimestamptzLoader)
