"""The utilization figures behind the dashboards and ``/api/inventory/utilization/``: plain functions over
the rollup tables, each a set-based aggregate (``values().annotate()``; ``usage`` wraps one in the join that
the ORM cannot write), so a figure costs the same few queries for ten GPUs or ten thousand.

Ranges and tables
    ``24h`` and ``7d`` read hourly rows, one bucket per hour; ``30d``, ``90d``, ``1y`` and the calendar ranges
    (``last_month``, a month, dates: ``ranges.py``) read daily rows, one bucket per day. The series and the
    groupings read the usage rows (``UsageHourly``, ``UsageDaily``: the GPU rows summed per node and GPU model, a
    few rows per node), what is per GPU the GPU rows (``GPUHourly``, ``GPUDaily``). Each rolling range ends with the
    current hour or day, so its last bucket may still be filling; a calendar range at its last midnight.

What the figures mean
    - *GPU-hours observed*: hours for which a GPU reported a utilization. An hourly row counts one hour,
      a daily row its ``hours`` (the hours of that day with a utilization reading).
    - *Mean utilization*: the mean of the GPUs' hourly mean utilization, weighted by those hours.
    - *Idle GPU-hours*: observed GPU-hours × (1 − utilization / 100), summed per row: a GPU at 25 % for
      an hour is 0.75 idle GPU-hours. So idle = observed × (1 − mean / 100) for any group.
    - *Idle cost*: idle GPU-hours × the node's cost per GPU-hour where a contract gives it
      (``inventory.costs``), else × ``settings.IDLE_GPU_HOUR_COST`` (in ``settings.COST_CURRENCY``);
      ``idle_gpu_hours_at_default_cost`` says how many idle GPU-hours the fallback priced (``idle_cost_basis``
      words it).

Missing data is missing, never zero
    A bucket without rows (a source down, a stale source, a GPU not reporting) is ``None`` in every
    series and matrix, and charts draw it as a gap. Rows without a utilization reading are left out of
    every figure rather than read as 0 %.

Filters (``filters`` argument, a mapping; empty values are ignored)
    ``site`` (id), ``partition``, ``gpu_model`` (id), ``team`` (the node's owner team). The groupings
    count a GPU's hours and days in the node it was in when they were last rolled up (a GPU moved to another node
    brings along only the hours and days rolled up since); what is per GPU, in the node it is in now.
"""

from django.conf import settings
from django.db import connections, router
from django.utils import timezone

from inventory.costs import gpu_hour_costs
from inventory.models import GPU, SERVING_STATES, GPUModel, Node, Site

from .models import SlurmJob, TelemetrySource, UsageDaily, UsageHourly
from .ranges import (  # noqa: F401 (the ranges were defined here: read from here by many)
    DEFAULT_RANGE,
    RANGE_BUTTONS,
    RANGES,
    Range,
    UnknownParameter,
    calendar_month,
    get_range,
    last_closed_month,
)

USAGE_TABLES = (UsageHourly, UsageDaily)


# Filter name -> lookup on a GPU (on a rollup row: through its ``gpu``).
FILTER_LOOKUPS = {
    "site": "node__site",
    "partition": "node__partition",
    "gpu_model": "gpu_model",
    "team": "node__owner_team",
}

# group_by -> (key, shown name) of a row of ``usage``.
GROUPS = {
    "site": ("site_id", "site"),
    "partition": ("partition", "partition"),
    "gpu_model": ("gpu_model_id", "gpu_model_name"),
    "team": ("team", "team"),
    "node": ("node_id", "hostname"),
}
NONE_LABEL = "(none)"  # a node without a partition or team, or a GPU that sits in no node
HEATMAP_ROWS = 60
HEATMAP_BY = ("node", "gpu")  # what the heatmap has a row for
# What ``usage`` tells about each of its rows: (table alias, column) of its key k (the GPU, or the usage rows' sums
# per node and GPU model), the node n, site s and model m.
USAGE_COLUMNS = {
    "node_id": ("k", "node_id"), "gpu_model_id": ("k", "gpu_model_id"), "hostname": ("n", "hostname"),
    "site_id": ("n", "site_id"), "site": ("s", "name"), "partition": ("n", "partition"), "team": ("n", "owner_team"),
    "gpu_model_name": ("m", "name"), "state": ("n", "state"),
}
PER_GPU_COLUMNS = {"gpu_id": ("k", "id"), "slot": ("k", "slot")}
NODE_FIELDS = ("site", "partition", "team", "state")  # what a node's group tells besides its figures


def rollup_rows(range_key, filters=None, now=None, per_gpu=True):
    """The rows a range reads within its buckets: per GPU (hourly or daily), with a utilization reading, or
    (``per_gpu`` False) those of ``Range.table``, the usage rows."""
    span = get_range(range_key)
    buckets = span.buckets(now)
    table = span.table(per_gpu)
    rows = table.objects.filter(**{f"{span.time_field}__gte": buckets[0], f"{span.time_field}__lte": buckets[-1]})
    if table in USAGE_TABLES:  # their rows sum only readings, and know the node and model themselves
        return rows.filter(**gpu_filters(filters))
    return rows.filter(util_mean__isnull=False,
                       **{f"gpu__{lookup}": value for lookup, value in gpu_filters(filters).items()})


def gpu_filters(filters):
    """The set filters as lookups on a GPU."""
    return {FILTER_LOOKUPS[name]: value for name, value in (filters or {}).items()
            if value not in (None, "") and name in FILTER_LOOKUPS}


# Filter name -> (table alias, column) in ``rollup_from``'s SQL: "n" the node, "h" the table holding the GPU model.
FILTER_COLUMNS = {"site": ("n", "site_id"), "partition": ("n", "partition"), "gpu_model": ("h", "gpu_model_id"),
                  "team": ("n", "owner_team")}


def rollup_from(range_key, filters=None, now=None, per_gpu=True, connection=None, join_gpu=False):
    """``rollup_rows`` written by hand: ``(sql, params)`` of a ``FROM … WHERE …`` whose rows are aliased ``r``,
    for the dashboard's reads (``usage_sql``, ``utilization_series``, ``heatmap``): the ORM compiled their
    querysets in about as much time per request as the rest of the page's Python. The same rows as
    ``rollup_rows`` (``tests/inventory/telemetry/test_telemetry_groupings.py`` compares them on every filter).
    Rows per GPU are joined to their GPU (alias ``g``) where a filter needs it, or ``join_gpu``."""
    span = get_range(range_key)
    buckets = span.buckets(now)
    table = span.table(per_gpu)
    connection = connection or connections[router.db_for_read(table)]
    ops = connection.ops
    quote = ops.quote_name
    stored = ops.adapt_datefield_value if span.daily else ops.adapt_datetimefield_value
    moment = f"r.{quote(span.time_field)}"
    where, params = [f"{moment} >= %s", f"{moment} <= %s"], [stored(buckets[0]), stored(buckets[-1])]
    joins, chosen = [], chosen_filters(filters)
    if table in USAGE_TABLES:  # their rows know their node and GPU model
        holder = "r"
    else:
        where.append("r.util_mean IS NOT NULL")
        holder = "g"
        if chosen or join_gpu:
            joins.append(f"JOIN {quote(GPU._meta.db_table)} g ON g.id = r.gpu_id")
    filter_joins, filter_where, filter_params = filtered(chosen, holder, quote)
    return (f"FROM {quote(table._meta.db_table)} r {' '.join(joins + filter_joins)} "
            f"WHERE {' AND '.join(where + filter_where)}", params + filter_params)


def read_connection(span, per_gpu=True):
    """The connection that reads the range's rows (``Range.table``)."""
    return connections[router.db_for_read(span.table(per_gpu))]


def bucket_keys(span, buckets, connection):
    """``{bucket as the database driver returns it: bucket}``: a date, an aware datetime, or on SQLite (no time
    zones) a naive datetime in the connection's zone. The hand-written reads look their rows' buckets up in it
    rather than convert every row."""
    if span.daily or connection.features.supports_timezones:
        return {t: t for t in buckets}
    return {timezone.make_naive(t, connection.timezone): t for t in buckets}


def fetch_rows(connection, sql, params):
    """The rows of ``sql``, as the driver returns them (numbers, dates, datetimes: naive on SQLite)."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def chosen_filters(filters):
    """The set filters, a site or GPU model as its id."""
    return {name: getattr(value, "pk", value) for name, value in (filters or {}).items()
            if value not in (None, "") and name in FILTER_COLUMNS}


def filtered(chosen, holder, quote):
    """The joins, conditions and parameters of the set filters (``chosen_filters``) on rows that hold a node and a
    GPU model id (``holder``: their alias)."""
    joins, where, params = [], [], []
    if any(FILTER_COLUMNS[name][0] == "n" for name in chosen):
        joins.append(f"JOIN {quote(Node._meta.db_table)} n ON n.id = {holder}.node_id")
    for name, value in chosen.items():
        alias, column = FILTER_COLUMNS[name]
        where.append(f"{holder if alias == 'h' else alias}.{quote(column)} = %s")
        params.append(value)
    return joins, where, params


def _figures(gpu_hours, util_hours, idle_cost=None, idle_at_default=None):
    """Mean utilization, idle GPU-hours and idle cost from the two sums; None where nothing was observed.
    ``idle_cost``: summed per GPU at its node's cost, ``idle_at_default`` the idle GPU-hours of those priced at
    ``IDLE_GPU_HOUR_COST`` (no contract cost known); else all idle GPU-hours × ``IDLE_GPU_HOUR_COST``."""
    if not gpu_hours:
        return {"gpu_hours": 0.0, "util_mean": None, "idle_gpu_hours": 0.0, "idle_cost": 0.0,
                "idle_gpu_hours_at_default_cost": 0.0}
    util_mean = util_hours / gpu_hours
    idle = gpu_hours - util_hours / 100
    return {
        "gpu_hours": round(float(gpu_hours), 2),
        "util_mean": round(util_mean, 2),
        "idle_gpu_hours": round(idle, 2),
        "idle_cost": round(idle * settings.IDLE_GPU_HOUR_COST if idle_cost is None else idle_cost, 2),
        "idle_gpu_hours_at_default_cost": round(idle if idle_cost is None else idle_at_default, 2),
    }


def fleet_figures(range_key, filters=None, now=None):
    """The fleet's GPU-hours observed, mean utilization and idle GPU-hours over the range, in one aggregate (its idle
    cost at ``IDLE_GPU_HOUR_COST``: ``totals`` prices each node)."""
    span = get_range(range_key)
    sums = rollup_rows(range_key, filters, now, per_gpu=False).aggregate(**span.sums(per_gpu=False))
    return _figures(sums["gpu_hours"], sums["util_hours"] or 0)


def idle_cost_basis(figures, currency=None, default_cost=None, priced="idle_gpu_hours", noun="idle GPU-hours"):
    """What the idle cost of ``figures`` (of ``_figures``, ``totals``) priced, in words for its label: each node's
    cost from its contracts, the default cost per GPU-hour, or both (how many idle GPU-hours at the default).
    ``priced``/``noun``: another figure priced the same way (goodput's lost GPU-hours: the figures' ``priced`` and
    ``priced_at_default_cost``), and its name in the words."""
    currency = currency or settings.COST_CURRENCY
    default_cost = settings.IDLE_GPU_HOUR_COST if default_cost is None else default_cost
    idle, at_default = figures[priced], figures[f"{priced}_at_default_cost"]
    default = f"{default_cost:g} {currency} per GPU-hour"
    if idle and not at_default:
        return "at each node's cost per GPU-hour from its contracts"
    if at_default and at_default < idle:
        return (f"at each node's cost per GPU-hour from its contracts; {at_default:,.1f} of {idle:,.1f} {noun} "
                f"(nodes without a contract cost) at {default}")
    return f"at {default} (no node in these figures has a cost from its contracts)"


def utilization_series(range_key, filters=None, now=None):
    """Fleet mean utilization per bucket: ``[{"time", "util_mean", "gpus_reporting"}]`` for every bucket of
    the range, oldest first; both values are None for a bucket without rows (a gap, not a zero)."""
    span = get_range(range_key)
    connection = read_connection(span, per_gpu=False)
    rows, params = rollup_from(range_key, filters, now, per_gpu=False, connection=connection)
    sums = span.sums_sql(per_gpu=False)
    moment = f"r.{connection.ops.quote_name(span.time_field)}"
    buckets = span.buckets(now)
    bucket_of = bucket_keys(span, buckets, connection)
    aggregated = {bucket_of.get(t): (gpu_hours, util_hours, gpus) for t, gpu_hours, util_hours, gpus in fetch_rows(
        connection, f"SELECT {moment}, {sums['gpu_hours']}, {sums['util_hours']}, {sums['gpus']} {rows} "
                    f"GROUP BY {moment}", params)}
    points = []
    for bucket in buckets:
        gpu_hours, util_hours, gpus = aggregated.get(bucket, (None, None, None))
        points.append({
            "time": bucket,
            "util_mean": _figures(gpu_hours, util_hours)["util_mean"] if gpus is not None else None,
            "gpus_reporting": gpus,
        })
    return points


def usage(range_key, filters=None, now=None, per_gpu=False):
    """GPU-hours and utilization-hours per node and GPU model (``per_gpu``: per GPU) over the GPUs that reported
    in the range: ``gpus`` (how many reported), where they are (node, site, partition, team), their model and the
    node's ``hour_cost``: a few rows per node (costs are per node, models per GPU), the rows that
    ``usage_groupings`` groups in the database (``usage_sql``) and the GPU heatmap ranks. One query, plus the
    costs' queries:

    - ``per_gpu``: the GPU rows summed per GPU first (the big table's only pass), then those sums joined to GPU,
      node, site and model;
    - else: the usage rows summed per node and model, joined to node, site and model and to the GPUs that reported
      in the range (a GPU counts once however many hours or days it reported: one index probe per GPU)."""
    sql, params, connection = usage_sql(range_key, filters, now, per_gpu)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    costs = gpu_hour_costs() if rows else {}
    default_cost = settings.IDLE_GPU_HOUR_COST  # read once: a lazy settings lookup per row costs more than the row
    columns = usage_columns(per_gpu)
    names = (*columns, "gpus", "gpu_hours", "util_hours", "hour_cost", "priced")
    node = list(columns).index("node_id")  # where a row's node is
    # PostgreSQL sums integers (the hourly ranges' GPU-hours) as numeric: floats, as the figures use them.
    # ``priced``: a contract gives the node's cost; else it is the default IDLE_GPU_HOUR_COST.
    return [dict(zip(names, (*values, gpus, float(gpu_hours), float(util_hours),
                             costs.get(values[node], default_cost), values[node] in costs), strict=True))
            for *values, gpus, gpu_hours, util_hours in rows]


def usage_columns(per_gpu):
    return {**(PER_GPU_COLUMNS if per_gpu else {}), **USAGE_COLUMNS}


def usage_sql(range_key, filters=None, now=None, per_gpu=False):
    """``usage``'s query: (SQL, parameters, connection); its columns are ``usage_columns`` by name, then ``gpus``,
    ``gpu_hours`` and ``util_hours``. Written by hand on ``rollup_from`` (the ORM took longer to compile it than the
    dashboard's other Python)."""
    span = get_range(range_key)
    grouped = not per_gpu
    connection = read_connection(span, per_gpu=not grouped)
    quote = connection.ops.quote_name
    key = ", ".join(f"r.{quote(column)}" for column in (("node_id", "gpu_model_id") if grouped else ("gpu_id",)))
    rows, params = rollup_from(range_key, filters, now, per_gpu=not grouped, connection=connection)
    figures = span.sums_sql(per_gpu=not grouped)
    sums_sql = (f"SELECT {key}, {figures['gpu_hours']} AS gpu_hours, {figures['util_hours']} AS util_hours {rows} "
                f"GROUP BY {key}")
    columns = usage_columns(per_gpu)
    listed = ", ".join(f"{alias}.{quote(column)}" for alias, column in columns.values())
    named = ", ".join(f"{alias}.{quote(column)} AS {quote(name)}" for name, (alias, column) in columns.items())
    tables = {alias: quote(model._meta.db_table) for alias, model in (("g", GPU), ("n", Node), ("s", Site),
                                                                        ("m", GPUModel))}
    around = (f"LEFT JOIN {tables['n']} n ON n.id = k.node_id LEFT JOIN {tables['s']} s ON s.id = n.site_id "
              f"JOIN {tables['m']} m ON m.id = k.gpu_model_id")
    if grouped:
        # The GPUs that the filters select and that reported in the range, per node and model: one probe per GPU
        # into its hourly or daily rows.
        days, days_params = rollup_from(range_key, None, now, connection=connection)
        joins, where, filter_params = filtered(chosen_filters(filters), "g", quote)
        reported_sql = (f"SELECT g.node_id, g.gpu_model_id, COUNT(*) AS gpus FROM {tables['g']} g {' '.join(joins)} "
                        f"WHERE {' AND '.join([*where, f'EXISTS (SELECT 1 {days} AND r.gpu_id = g.id)'])} "
                        f"GROUP BY g.node_id, g.gpu_model_id")
        sql = (f"SELECT {named}, COALESCE(r.gpus, 0) AS gpus, k.gpu_hours AS gpu_hours, k.util_hours AS util_hours "
               f"FROM ({sums_sql}) k LEFT JOIN ({reported_sql}) r ON COALESCE(r.node_id, 0) = COALESCE(k.node_id, 0) "
               f"AND r.gpu_model_id = k.gpu_model_id {around}")
        params = (*params, *filter_params, *days_params)
    else:
        sql = (f"SELECT {named}, COUNT(*) AS gpus, SUM(u.gpu_hours) AS gpu_hours, SUM(u.util_hours) AS util_hours "
               f"FROM ({sums_sql}) u JOIN {tables['g']} k ON k.id = u.gpu_id {around} GROUP BY {listed}")
    return sql, tuple(params), connection


LEAST_USED_CANDIDATES = 10  # per lifecycle state: the dashboard's least-used tables show 10 nodes of their states
GROUPING_COLUMNS = ("kind", "number_key", "text_key", "name", *NODE_FIELDS, "gpus", "gpu_hours", "util_hours",
                    "idle_cost", "idle_at_default")  # of one row of ``usage_groupings``' query


def usage_groupings(range_key, group_bys, filters=None, now=None, candidates_only=False):
    """``{group_by: {key: {"name", "gpus", "gpu_hours", "util_hours", "idle_cost", "idle_at_default", "first"}}}``
    for each of ``group_bys``, all from one query: the usage query (``usage_sql``) read once, each node's idle
    GPU-hours priced at its contract cost (passed in as a ``VALUES`` list) else at ``IDLE_GPU_HOUR_COST``, and one
    ``GROUP BY`` per grouping, so the database returns one row per group instead of a few per node.

    ``candidates_only``: the "node" grouping keeps only the nodes that can be among the least used: in each
    lifecycle state the ``LEAST_USED_CANDIDATES`` least used, and the ``HEATMAP_ROWS`` least used of all (GPUs
    outside a node left out), by mean utilization with a margin of 0.01 points for ties and rounding. The
    dashboard shows no other node, and a large fleet's other rows would cost more in Python than the query."""
    for group_by in group_bys:
        if group_by not in GROUPS:
            raise UnknownParameter(f"Unknown group_by '{group_by}'; use one of {', '.join(GROUPS)}.")
    usage, usage_params, connection = usage_sql(range_key, filters, now)
    quote = connection.ops.quote_name
    costs = gpu_hour_costs()
    params = [settings.IDLE_GPU_HOUR_COST, *usage_params]  # in the order of their placeholders
    if costs:
        prices = ", ".join(["(%s, %s)"] * len(costs))
        joined = (f"LEFT JOIN (SELECT column1 AS node_id, column2 AS cost FROM (VALUES {prices}) v) c "
                  f"ON c.node_id = u.node_id")
        params += [value for node_cost in costs.items() for value in (node_cost[0], float(node_cost[1]))]
        cost, unpriced = "COALESCE(c.cost, %s)", "CASE WHEN c.node_id IS NULL THEN 1 ELSE 0 END"
    else:
        joined, cost, unpriced = "", "%s", "1"
    as_double = "CAST(u.{} AS DOUBLE PRECISION)"  # PostgreSQL sums the hourly ranges' integer GPU-hours as numeric
    # p: the usage rows with their idle GPU-hours, the cost of one and whether it is the default cost (1).
    priced = (f"SELECT {', '.join(f'u.{quote(name)}' for name in USAGE_COLUMNS)}, u.gpus AS gpus, "
              f"{as_double.format('gpu_hours')} AS gpu_hours, {as_double.format('util_hours')} AS util_hours, "
              f"{as_double.format('gpu_hours')} - {as_double.format('util_hours')} / 100 AS idle, "
              f"{cost} AS cost, {unpriced} AS unpriced FROM ({usage}) u {joined}")
    sums = ("SUM(p.gpus)", "SUM(p.gpu_hours)", "SUM(p.util_hours)", "SUM(p.idle * p.cost)", "SUM(p.idle * p.unpriced)")
    selects = []
    for group_by in dict.fromkeys(group_bys):
        key_field, name_field = GROUPS[group_by]
        node_fields = NODE_FIELDS if group_by == "node" else ()
        numbered = key_field.endswith("_id")
        keys = (f"p.{quote(key_field)}" if numbered else "CAST(NULL AS INTEGER)",
                "CAST(NULL AS TEXT)" if numbered else f"p.{quote(key_field)}")
        shown = [f"p.{quote(name)}" if name in node_fields else "CAST(NULL AS TEXT)" for name in NODE_FIELDS]
        listed = ", ".join(f"p.{quote(name)}" for name in dict.fromkeys((key_field, name_field, *node_fields)))
        values = ("'" + group_by + "'", *keys, f"p.{quote(name_field)}", *shown, *sums)
        named = ", ".join(f"{value} AS {quote(name)}" for value, name in zip(values, GROUPING_COLUMNS, strict=True))
        select = f"SELECT {named} FROM p GROUP BY {listed}"
        if group_by == "node" and candidates_only:
            select = candidate_nodes(select, quote)
            params += [LEAST_USED_CANDIDATES, HEATMAP_ROWS]
        selects.append(select)
    with connection.cursor() as cursor:
        cursor.execute(f"WITH p AS ({priced}) {' UNION ALL '.join(selects)}", params)
        rows = cursor.fetchall()
    groupings = {group_by: {} for group_by in group_bys}
    for group_by, number_key, text_key, name, *node_values, gpus, gpu_hours, util_hours, idle_cost, at_default in rows:
        key = number_key if GROUPS[group_by][0].endswith("_id") else text_key
        groupings[group_by][key] = {"name": name or NONE_LABEL, "gpus": int(gpus or 0), "gpu_hours": gpu_hours or 0.0,
                                    "util_hours": util_hours or 0.0, "idle_cost": idle_cost or 0.0,
                                    "idle_at_default": at_default or 0.0,
                                    "first": dict(zip(NODE_FIELDS, node_values, strict=True))}
    return groupings


def candidate_nodes(node_select, quote):
    """The "node" grouping's query narrowed to the nodes that can be among the least used (``usage_groupings``);
    its two placeholders take ``LEAST_USED_CANDIDATES`` and ``HEATMAP_ROWS``."""
    columns = [quote(name) for name in GROUPING_COLUMNS]
    ratio, every = "g.util_hours / g.gpu_hours", "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING"
    return (f"SELECT {', '.join(f'r.{name}' for name in columns)} FROM ("
            f"SELECT g.*, {ratio} AS ratio, "
            f"NTH_VALUE({ratio}, %s) OVER (PARTITION BY g.{quote('state')} ORDER BY {ratio} {every}) AS state_nth, "
            f"NTH_VALUE({ratio}, %s) OVER (ORDER BY {ratio} {every}) AS fleet_nth "
            f"FROM ({node_select}) g WHERE g.number_key IS NOT NULL AND g.gpu_hours > 0) r "
            f"WHERE r.state_nth IS NULL OR r.ratio <= r.state_nth + 0.01 "
            f"OR r.fleet_nth IS NULL OR r.ratio <= r.fleet_nth + 0.01")


def utilization_by(group_by, range_key, filters=None, now=None, grouped=None):
    """Mean utilization, GPU-hours observed, idle GPU-hours and idle cost per site, partition, GPU model,
    team or node, most idle GPU-hours first. ``grouped``: that grouping of ``usage_groupings``, already read for the
    same range and filters (the dashboard reads all its groupings in one query)."""
    if grouped is None:
        grouped = usage_groupings(range_key, [group_by], filters, now)[group_by]
    groups = []
    for key, group in grouped.items():
        entry = {"key": key, "name": group["name"], "gpus": group["gpus"],
                 **_figures(group["gpu_hours"], group["util_hours"], group["idle_cost"], group["idle_at_default"])}
        if group_by == "node":
            entry.update(group["first"])
        groups.append(entry)
    groups.sort(key=lambda g: (-g["idle_gpu_hours"], str(g["name"])))
    return groups


def least_used_nodes(range_key, filters=None, limit=10, now=None):
    """The nodes with the lowest mean utilization over the range (only nodes that reported)."""
    return least_used(utilization_by("node", range_key, filters, now), limit)


def least_used(node_groups, limit=10, serving=True):
    """The ``limit`` least used of the groups of ``utilization_by("node", …)``, leaving out GPUs in no node.
    ``serving``: only nodes in service (or degraded); else only the others (burn-in, in repair, retired...),
    whose idle hours are expected and would crowd out the nodes worth a look."""
    nodes = [g for g in node_groups if g["key"] is not None and (g["state"] in SERVING_STATES) == serving]
    nodes.sort(key=lambda g: (g["util_mean"], g["name"]))
    return nodes[:limit]


def totals(groups):
    """The fleet figures from any one grouping of ``utilization_by`` (every GPU-hour is in one group)."""
    gpu_hours = sum(g["gpu_hours"] for g in groups)
    util_hours = sum(g["gpu_hours"] * g["util_mean"] for g in groups if g["util_mean"] is not None)
    idle_cost = sum(g["idle_cost"] for g in groups)
    idle_at_default = sum(g["idle_gpu_hours_at_default_cost"] for g in groups)
    return {"gpus": sum(g["gpus"] for g in groups), **_figures(gpu_hours, util_hours, idle_cost, idle_at_default)}


def heatmap(range_key, filters=None, by="node", limit=HEATMAP_ROWS, now=None, nodes=None):
    """Nodes (or GPUs) × buckets of mean utilization: ``{"rows": [{"key", "name"}], "times": [...],
    "values": [[util or None, ...] per row]}``. At most ``limit`` rows, the least used over the range first
    (then by name), so a large fleet shows where the idle capacity is. ``nodes``: the "node" grouping of
    ``usage_groupings`` already read for the same range and filters (its candidates suffice); GPU rows read their
    own usage per GPU."""
    if by not in HEATMAP_BY:
        raise UnknownParameter(f"Unknown heatmap rows '{by}'; use one of {', '.join(HEATMAP_BY)}.")
    span = get_range(range_key)
    if by == "node":
        if nodes is None:
            nodes = usage_groupings(range_key, ["node"], filters, now, candidates_only=True)["node"]
        candidates = {key: group for key, group in nodes.items() if key is not None}
    else:
        candidates = {row["gpu_id"]: {**row, "name": _gpu_name(row)}
                      for row in usage(range_key, filters, now, per_gpu=True)}
    chosen = sorted(candidates, key=lambda key: (candidates[key]["util_hours"] / candidates[key]["gpu_hours"],
                                                 candidates[key]["name"]))[:limit]
    per_gpu = by == "gpu"
    connection = read_connection(span, per_gpu)
    quote = connection.ops.quote_name
    moment = f"r.{quote(span.time_field)}"
    rows, params = rollup_from(range_key, filters, now, per_gpu, connection, join_gpu=per_gpu and by == "node")
    listed = ", ".join(["%s"] * len(chosen))
    if per_gpu:
        # The chosen rows' GPUs as a subquery: PostgreSQL reads their rows on the (gpu, hour|day) unique index
        # rather than the whole range.
        key, column = ("g.node_id", "node_id") if by == "node" else ("r.gpu_id", "id")
        rows += f" AND r.gpu_id IN (SELECT id FROM {quote(GPU._meta.db_table)} WHERE {quote(column)} IN ({listed}))"
    else:  # the nodes' usage rows, read on the (node, hour, model) or (node, model, day) unique index
        key = "r.node_id"
        rows += f" AND r.node_id IN ({listed})"
    sums = span.sums_sql(per_gpu)
    buckets = span.buckets(now)
    bucket_of = bucket_keys(span, buckets, connection)
    cells = {key: dict.fromkeys(buckets) for key in chosen}
    # Up to 60 rows × 365 buckets, the dashboard's largest read. Each cell's mean (the division ``_figures`` makes)
    # rounded to 2 decimals by the database, halves up as the tables' figures are: a short number to convert
    # instead of two sums, a division and a rounding per cell in Python. FLOOR, not ROUND: PostgreSQL rounds a
    # double's halves to even, and a cast to NUMERIC costs more time in the database than it saves here.
    mean = f"FLOOR({sums['util_hours']} / NULLIF({sums['gpu_hours']}, 0) * 100 + 0.5) / 100"
    if chosen:
        for row_key, t, cell in fetch_rows(
                connection, f"SELECT {key}, {moment}, {mean} {rows} GROUP BY {key}, {moment}", [*params, *chosen]):
            if (bucket := bucket_of.get(t)) is not None:
                cells[row_key][bucket] = cell
    return {
        "rows": [{"key": key, "name": candidates[key]["name"]} for key in chosen],
        "times": buckets,
        "values": [list(cells[key].values()) for key in chosen],
    }


def _gpu_name(row):
    return f"{row['hostname']}/gpu{row['slot']}" if row["node_id"] else f"spare GPU #{row['gpu_id']}"


def has_slurm_source():
    return TelemetrySource.objects.filter(kind=TelemetrySource.Kind.SLURM).exists()


def stale_sources():
    """Enabled sources whose last pulls failed: their data stops at ``synced_until``, stale since
    ``stale_since``. Dashboards say so rather than show the missing hours as idle."""
    return [source for source in sources_with_jobs() if source.enabled and source.stale_since is not None]


def sources_with_jobs():
    """The telemetry sources, stale ones first (the longest stale first), then by name, each saying whether it
    stored Slurm jobs (``has_jobs``): every job has its source, so "any job?" needs no query of its own. Written by
    hand: the dashboards read it on every request, and the ORM took three times as long to compile it as to read
    it. Only Slurm sources store jobs, and only theirs are looked for: PostgreSQL, knowing one source holds every
    job, answered "none" for a Prometheus source by reading the whole table (24 ms at 100,000 jobs)."""
    quote = connections[router.db_for_read(TelemetrySource)].ops.quote_name
    source_id = quote(SlurmJob._meta.get_field("source").column)
    return list(TelemetrySource.objects.raw(
        f"SELECT s.*, CASE WHEN s.kind = %s THEN EXISTS (SELECT 1 FROM {quote(SlurmJob._meta.db_table)} j "
        f"WHERE j.{source_id} = s.id) ELSE FALSE END AS has_jobs FROM {quote(TelemetrySource._meta.db_table)} s "
        "ORDER BY s.stale_since IS NULL, s.stale_since, s.name", [TelemetrySource.Kind.SLURM]))
