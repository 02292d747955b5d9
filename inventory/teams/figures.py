"""A team's figures (issue 20): a team is a Slurm account (a job's ``account``: goodput's and the allocations'
``team``) and owns nodes (``Node.owner_team``: utilization's ``team``), by its name. The team pages read every figure
from the existing queries (``goodput.queries.goodput_by``, ``telemetry.queries.utilization_by`` and
``allocations``), in a fixed number of queries whatever the number of teams, jobs or nodes."""

from django.db.models import Count
from django.utils import timezone

from inventory import capacity
from inventory.goodput import queries
from inventory.models import Node
from inventory.telemetry import queries as telemetry_queries
from inventory.telemetry import slurm_figures
from inventory.telemetry.models import SlurmJob

from .models import Team


def exists(name):
    """Whether ``name`` has figures: a node is owned by it or a job ran under it (ever). A Slurm account the
    accounting brought before anyone made its team has figures and no ``Team``."""
    return bool(name) and (
        Node.objects.filter(owner_team=name).exists() or SlurmJob.objects.filter(account=name).exists()
    )


def owned_nodes(name=None):
    """{owner team: {"nodes", "gpus", "says"}} of the nodes that have one (``name``: of that team only); two queries.
    Its GPUs are counted by the capacity model (``inventory.capacity``: not retired), as every page counts them."""
    nodes = Node.objects.exclude(owner_team=None)
    if name is not None:
        nodes = nodes.filter(owner_team=name)
    gpus = capacity.count_by("team")
    return {
        team: {"nodes": count, "gpus": gpus.get(team, capacity.Capacity()).total,
               "says": gpus.get(team, capacity.Capacity()).says()}
        for team, count in nodes.values_list("owner_team").annotate(n=Count("pk")).order_by()
    }


def team_figures(name, range_key, now=None, gpus=None, job_hours=24.0):
    """One team over the range: ``goodput`` (its ``goodput_by("team")`` row, None without a job, interruption or
    queue wait in the range), ``allocation`` (its ``allocations("account")`` row: GPU-hours, jobs), ``utilization``
    (its owned nodes' ``utilization_by("team")`` row, None when none reported) and ``owned`` (nodes, GPUs)."""
    now = now or timezone.now()
    filters = {"team": name}
    goodput = queries.goodput_by("team", range_key, filters, now=now, gpus=gpus, job_hours=job_hours)
    allocated = slurm_figures.allocations("account", range_key, filters, now=now)
    utilization = telemetry_queries.utilization_by("team", range_key, filters, now=now)
    return {
        "goodput": next((g for g in goodput if g["key"] == name), None),
        "allocation": next((g for g in allocated if g["key"] == name), None),
        "utilization": next((g for g in utilization if g["key"] == name), None),
        "owned": owned_nodes(name).get(name, {"nodes": 0, "gpus": 0}),
        "goodput_groups": goodput,
    }


def team_rows(range_key, now=None, gpus=None, job_hours=24.0):
    """Every team: the teams, the owner teams and the accounts with jobs (or interruptions) in the range, each
    with its goodput row's figures, its owned nodes' utilization and its nodes and GPUs, by name. One
    ``goodput_by("team")`` and one ``utilization_by("team")`` call for all of them."""
    now = now or timezone.now()
    goodput = {g["key"]: g for g in queries.goodput_by("team", range_key, now=now, gpus=gpus, job_hours=job_hours)}
    utilization = {g["key"]: g for g in telemetry_queries.utilization_by("team", range_key, now=now)}
    owned = owned_nodes()
    rows = []
    for name in sorted({*Team.objects.values_list("name", flat=True), *goodput, *owned} - {None, ""}):
        row = goodput.get(name) or {}
        used = utilization.get(name) or {}
        rows.append(
            {
                "name": name,
                "nodes": owned.get(name, {}).get("nodes", 0),
                "gpus": owned.get(name, {}).get("gpus", 0),
                "util_mean": used.get("util_mean"),
                "idle_gpu_hours": used.get("idle_gpu_hours"),
                "allocated_gpu_hours": row.get("allocated_gpu_hours", 0.0),
                "goodput_ratio": row.get("goodput_ratio"),
                "interruptions": row.get("interruptions", 0),
                "interruptions_per_1000_gpu_days": row.get("interruptions_per_1000_gpu_days"),
                "lost_gpu_hours": row.get("lost_gpu_hours", 0.0),
                "lost_cost": row.get("lost_cost", 0.0),
                "queue_wait_share": row.get("queue_wait_share"),
            }
        )
    return rows, list(goodput.values())
