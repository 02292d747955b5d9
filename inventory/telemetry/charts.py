"""What each utilization chart shows, once: the JSON that ``charts.js`` draws and the CSV of the same
figures. The figures come from ``queries``; ``FleetDashboard`` computes each figure at most once per request (the
groupings all come from one query, ``queries.usage_groupings``), so the page and every CSV download cost a fixed
number of queries."""

import csv
from functools import cached_property, lru_cache

from django.conf import settings
from django.http import HttpResponse
from django.utils import timezone

from inventory.models import LifecycleState, Node

from . import queries, slurm_figures
from .models import TelemetrySource
from .rollups import floor_hour

GROUP_CHARTS = {  # chart name -> (group_by, title)
    "by-site": ("site", "site"),
    "by-partition": ("partition", "partition"),
    "by-gpu-model": ("gpu_model", "GPU model"),
    "by-team": ("team", "team"),
}
ALLOCATION_CHARTS = {  # chart name -> group_by of ``slurm_figures.allocations``
    "allocations-by-team": "account",
    "allocations-by-partition": "partition",
}
CHARTS = ("utilization", "heatmap", *GROUP_CHARTS, "queue-wait", *ALLOCATION_CHARTS, "least-used")
UTIL_TITLE = "mean GPU utilization (%)"
NOT_OBSERVED = {"observed_gpu_hours": None, "util_mean": None, "used_gpu_hours": None, "used_beyond_allocation": False}


def time_label(moment):
    """A bucket as the charts show it: local time without offset (plotly.js ignores offsets)."""
    if hasattr(moment, "hour"):
        return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M")
    return moment.isoformat()


def time_labels(buckets):
    """``time_label`` of each of ``buckets``. A page draws several charts of the same range (a node's eight health
    charts and its GPU chart: 1,500 labels for 168 hours, 15 ms): each range's labels are made once."""
    return list(_time_labels(tuple(buckets), timezone.get_current_timezone_name()))


@lru_cache(maxsize=64)
def _time_labels(buckets, zone):
    return tuple(time_label(t) for t in buckets)


def time_axis_title(span):
    return f"{span.time_field} ({timezone.get_current_timezone_name()})"


def csv_response(filename, header, rows):
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    writer = csv.writer(response)
    writer.writerow(header)
    writer.writerows(["" if value is None else value for value in row] for row in rows)
    return response


class FleetDashboard:
    """The fleet utilization dashboard for one range and set of filters."""

    def __init__(self, range_key, filters=None, heatmap_by="node", now=None):
        self.span = queries.get_range(range_key)
        self.filters = filters or {}
        self.heatmap_by = heatmap_by
        self.now = now or timezone.now()
        self._groups = {}

    def _args(self):
        return self.span.key, self.filters

    @cached_property
    def grouped(self):
        """Every grouping the dashboard shows, from one query; of the nodes, only those that can be among the least
        used (the tables, the heatmap)."""
        group_bys = [*(group_by for group_by, _ in GROUP_CHARTS.values()), "node"]
        return queries.usage_groupings(self.span.key, group_bys, self.filters, self.now, candidates_only=True)

    @cached_property
    def series(self):
        return queries.utilization_series(*self._args(), now=self.now)

    @cached_property
    def heatmap(self):
        return queries.heatmap(*self._args(), by=self.heatmap_by, now=self.now, nodes=self.grouped["node"])

    def groups(self, group_by):
        """A grouping's figures; for "node", only the nodes that can be among the least used (``grouped``)."""
        if group_by not in self._groups:  # the tables, the charts, the totals and the CSV all show them
            self._groups[group_by] = queries.utilization_by(group_by, *self._args(), now=self.now,
                                                            grouped=self.grouped[group_by])
        return self._groups[group_by]

    @cached_property
    def least_used(self):
        return self._linked(queries.least_used(self.groups("node")))

    @cached_property
    def not_in_service(self):
        """Nodes that reported but are not in service (burn-in, in repair, retired...): least used first."""
        return self._linked(queries.least_used(self.groups("node"), serving=False))

    @staticmethod
    def _linked(nodes):
        """The least-used tables' rows: each node with its page and its state's label."""
        return [{**node, "url": Node.url_of(node["key"]), "state_label": LifecycleState(node["state"]).label}
                for node in nodes]

    @cached_property
    def totals(self):
        return queries.totals(self.groups("site"))

    @property
    def has_jobs(self):
        """Whether any Slurm job is stored (read with the sources): without, the Slurm figures are empty, for no
        query instead of eight."""
        return any(source.has_jobs for source in self.sources)

    @cached_property
    def queue_waits(self):
        return slurm_figures.queue_waits(*self._args(), now=self.now) if self.has_jobs else []

    @cached_property
    def allocation_groupings(self):
        """Allocations per team and per partition, read together (``slurm_figures.allocation_groupings``)."""
        if not self.has_jobs:
            return {"account": [], "partition": []}
        return slurm_figures.allocation_groupings(*self._args(), now=self.now, waits=self.queue_waits)

    @cached_property
    def allocations_by_team(self):
        return self.allocation_groupings["account"]

    @cached_property
    def allocations_by_partition(self):
        """Allocations per partition and, where the filters allow comparing them (no site or GPU model filter,
        which jobs ignore), what telemetry observed there: ``observed_gpu_hours``, ``util_mean`` and
        ``used_gpu_hours`` (observed × utilization), None for a partition without telemetry. A partition with
        many GPU-hours allocated but few used is waiting on something else than its GPUs (storage, network); one
        with more used than allocated (``used_beyond_allocation``) ran work outside Slurm, or its accounting misses
        jobs: the page flags it rather than show a share over 100 % without a word."""
        if not self.has_jobs:
            return []
        partitions = self.allocation_groupings["partition"]
        observed = {g["key"]: g for g in self.groups("partition")} if self.compares_observed else {}
        for partition in partitions:
            seen = observed.get(partition["key"])
            used = round(seen["gpu_hours"] - seen["idle_gpu_hours"], 2) if seen else None
            partition.update({
                "observed_gpu_hours": seen["gpu_hours"], "util_mean": seen["util_mean"], "used_gpu_hours": used,
                "used_beyond_allocation": used > partition["gpu_hours"],
            } if seen else NOT_OBSERVED)
        return partitions

    @property
    def compares_observed(self):
        """Whether allocations and observed utilization cover the same GPUs: not when a filter that jobs ignore
        (site, GPU model) narrows only the observed side."""
        return not slurm_figures.ignored_job_filters(self.filters)

    def allocations(self, chart):
        """The rows of an allocations chart."""
        return self.allocations_by_team if ALLOCATION_CHARTS[chart] == "account" else self.allocations_by_partition

    @cached_property
    def allocation_totals(self):
        return slurm_figures.allocation_totals(self.allocations_by_partition)

    @cached_property
    def sources(self):
        """Every telemetry source (a few), stale ones first: whether any exists, is Slurm, is stale or stored jobs, in
        one query."""
        return queries.sources_with_jobs()

    @cached_property
    def stale_sources(self):
        return [source for source in self.sources if source.enabled and source.stale_since is not None]

    @property
    def has_slurm_source(self):
        return any(source.kind == TelemetrySource.Kind.SLURM for source in self.sources)

    # --- JSON for charts.js ---------------------------------------------------------------------

    def utilization_chart(self):
        return {
            "x": time_labels([p["time"] for p in self.series]),
            "series": [
                {"name": "mean utilization", "y": [p["util_mean"] for p in self.series]},
                {"name": "GPUs reporting", "y": [p["gpus_reporting"] for p in self.series], "axis": "y2"},
            ],
            "x_title": time_axis_title(self.span), "y_title": UTIL_TITLE, "y2_title": "GPUs reporting",
            "y_range": [0, 100], "stale_from": self.stale_from(),
        }

    def stale_from(self):
        """Where the time series stops being complete: the earliest point a stale source has data up to."""
        moments = [s.synced_until or s.stale_since for s in self.stale_sources]
        if not moments:
            return None
        first = min(moments)
        bucket = timezone.localdate(first) if self.span.daily else floor_hour(first)
        return time_label(max(bucket, self.series[0]["time"]))

    def heatmap_chart(self):
        data = self.heatmap
        return {
            "x": time_labels(data["times"]),
            "y": [row["name"] for row in data["rows"]],
            "z": data["values"],
            "x_title": time_axis_title(self.span), "z_title": "util. %",
        }

    def group_chart(self, group_by):
        groups = self.groups(group_by)
        return {
            "labels": [str(g["name"]) for g in groups],
            "series": [{"name": "mean utilization", "values": [g["util_mean"] for g in groups]}],
            "x_title": UTIL_TITLE, "x_range": [0, 100],
        }

    def queue_wait_chart(self):
        rows = self.queue_waits
        return {
            "labels": [r["partition"] or queries.NONE_LABEL for r in rows],
            "series": [
                {"name": "p50", "values": [r["p50_hours"] for r in rows]},
                {"name": "p95", "values": [r["p95_hours"] for r in rows]},
            ],
            "x_title": "queue wait (hours)",
        }

    def allocations_chart(self, chart):
        rows = self.allocations(chart)
        series = [{"name": "allocated", "values": [r["gpu_hours"] for r in rows]}]
        if chart == "allocations-by-partition":
            series.append({"name": "used (observed × utilization)", "values": [r["used_gpu_hours"] for r in rows]})
        return {"labels": [r["name"] for r in rows], "series": series, "x_title": "GPU-hours"}

    def chart_data(self):
        """Every chart's JSON, by the id of its ``json_script`` element."""
        data = {
            "utilization": self.utilization_chart(),
            "heatmap": self.heatmap_chart(),
            "queue-wait": self.queue_wait_chart(),
        }
        data.update({name: self.group_chart(group_by) for name, (group_by, _) in GROUP_CHARTS.items()})
        data.update({name: self.allocations_chart(name) for name in ALLOCATION_CHARTS})
        return data

    # --- CSV ------------------------------------------------------------------------------------

    def csv(self, chart):
        """``(header, rows)`` of a chart's figures; ``KeyError`` for an unknown chart."""
        currency = settings.COST_CURRENCY
        if chart == "utilization":
            return (["time", "mean_utilization_percent", "gpus_reporting"],
                    [[p["time"].isoformat(), p["util_mean"], p["gpus_reporting"]] for p in self.series])
        if chart == "heatmap":
            data = self.heatmap
            return ([self.heatmap_by, "time", "mean_utilization_percent"],
                    [[row["name"], t.isoformat(), value]
                     for row, values in zip(data["rows"], data["values"], strict=True)
                     for t, value in zip(data["times"], values, strict=True)])
        if chart in GROUP_CHARTS:
            group_by = GROUP_CHARTS[chart][0]
            return ([group_by, "gpus", "gpu_hours", "mean_utilization_percent", "idle_gpu_hours",
                     f"idle_cost_{currency}"],
                    [[g["name"], g["gpus"], g["gpu_hours"], g["util_mean"], g["idle_gpu_hours"], g["idle_cost"]]
                     for g in self.groups(group_by)])
        if chart == "queue-wait":
            return (["partition", "jobs", "p50_hours", "p95_hours"],
                    [[r["partition"], r["jobs"], r["p50_hours"], r["p95_hours"]] for r in self.queue_waits])
        if chart == "allocations-by-team":
            return (["team", "jobs", "allocated_gpu_hours"],
                    [[r["name"], r["jobs"], r["gpu_hours"]] for r in self.allocations_by_team])
        if chart == "allocations-by-partition":
            return (["partition", "jobs", "allocated_gpu_hours", "multi_node_gpu_hours", "multi_node_share_percent",
                     "observed_gpu_hours", "mean_utilization_percent", "used_gpu_hours"],
                    [[r["name"], r["jobs"], r["gpu_hours"], r["multi_node_gpu_hours"], r["multi_node_share"],
                      r["observed_gpu_hours"], r["util_mean"], r["used_gpu_hours"]]
                     for r in self.allocations_by_partition])
        if chart == "least-used":
            return (["node", "state", "site", "partition", "team", "gpus", "gpu_hours", "mean_utilization_percent",
                     "idle_gpu_hours", f"idle_cost_{currency}"],
                    [[n["name"], n["state"], n["site"], n["partition"], n["team"], n["gpus"], n["gpu_hours"],
                      n["util_mean"], n["idle_gpu_hours"], n["idle_cost"]]
                     for n in [*self.least_used, *self.not_in_service]])
        raise KeyError(chart)

    def csv_response(self, chart):
        header, rows = self.csv(chart)
        return csv_response(f"utilization-{chart}-{self.span.key}.csv", header, rows)


def gpu_lines_chart(data, span):
    """The node page's chart from ``gpu_health.gpu_series``: one line per GPU, gaps where a GPU did not report."""
    return {
        "x": time_labels(data["times"]),
        "series": [{"name": line["name"], "y": line["values"]} for line in data["lines"]],
        "x_title": time_axis_title(span), "y_title": UTIL_TITLE, "y_range": [0, 100],
    }


def gpu_lines_csv(node, data, span):
    rows = [[line["name"], t.isoformat(), value]
            for line in data["lines"] for t, value in zip(data["times"], line["values"], strict=True)]
    header = ["gpu", "time", "mean_utilization_percent"]
    return csv_response(f"{node.hostname}-gpu-utilization-{span.key}.csv", header, rows)
