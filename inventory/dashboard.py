"""The inventory's parts of the portal's frames (registered in ``InventoryConfig.ready``): the home dashboard's
tiles (fleet, last 7 days of utilization), the least-used nodes and the fleet panel; the global search is
``queries.search``."""

import json

from django.conf import settings
from django.urls import reverse
from django.utils.http import urlencode

from portal.registry import Tile

from . import capacity, queries
from .telemetry import summary
from .telemetry.queries import idle_cost_basis

VIEW_TELEMETRY = "inventory.read_telemetry"


def _fleet_summary(request):
    """``queries.fleet_summary``, read once per request: the tiles and the fleet panel both show it."""
    if not hasattr(request, "_fleet_summary"):
        request._fleet_summary = queries.fleet_summary(_capacity(request)["gpu_model"])
    return request._fleet_summary


def _capacity(request):
    """The capacity model's counts (``inventory.capacity``) of the fleet (key None), per site and per GPU model, read
    once per request in one query: the GPU tile, the fleet panel's sites and its GPUs by model show them."""
    if not hasattr(request, "_capacity"):
        request._capacity = capacity.count_each(["site", "gpu_model"])
    return request._capacity


def _week(request):
    if not hasattr(request, "_last_week"):
        request._last_week = summary.last_week()
    return request._last_week


def _url(name, **query):
    url = reverse(name)
    return f"{url}?{urlencode(query, doseq=True)}" if query else url


def _percent(value):
    return "—" if value is None else f"{value:.1f} %"


def fleet_tiles(request):
    """Nodes, GPUs, nodes out of warranty and nodes stuck in delivered / burn-in. An account without a role sees no
    fleet data."""
    if not request.user.has_perm("inventory.view_node"):
        return None
    fleet, days = _fleet_summary(request), settings.STUCK_NODE_DAYS
    stuck = queries.stuck_nodes(days).count()
    gpus = _capacity(request)[None]
    return [
        Tile("nodes", "nodes", f"{fleet['node_total']:,}", _url("inventory:node_list")),
        Tile("gpus", "GPUs", f"{gpus.total:,}", _url("inventory:gpu_list"), note=gpus.says(),
             warn=bool(gpus.out_of_service)),
        Tile("warranty", "nodes out of warranty", str(fleet["out_of_warranty"]),
             _url("inventory:node_list", warranty_expired="true"), warn=bool(fleet["out_of_warranty"])),
        Tile("stuck", "nodes stuck delivered / in burn-in", str(stuck),
             _url("inventory:node_list", state=list(queries.WAITING_STATES), in_state_days=days),
             note=f"for more than {days} days", warn=bool(stuck)),
    ]


def utilization_tiles(request):
    """The last 7 days: utilization against its target, allocated against used GPU-hours, idle GPU-hours and their
    cost, stale telemetry sources."""
    if not request.user.has_perm(VIEW_TELEMETRY):
        return None
    week = _week(request)
    week_url = _url("inventory:utilization", range=summary.RANGE)
    change = week["util_change"]
    trend = "no data the 7 days before" if change is None else f"{change:+.1f} pts on the 7 days before"
    tiles = [Tile("utilization", f"GPU utilization, 7 days (target {week['target']:g} %)",
                  _percent(week["util_mean"]), week_url, note=trend,
                  warn=week["util_mean"] is not None and week["util_mean"] < week["target"])]
    if week["partitions_compared"]:
        share = 100 * week["used_gpu_hours"] / week["allocated_gpu_hours"] if week["allocated_gpu_hours"] else None
        note = f"of {week['allocated_gpu_hours']:,.0f} allocated by Slurm ({_percent(share)} used)"
        if week["partitions_compared"] < week["partitions_with_jobs"]:
            note += f"; {week['partitions_compared']} of {week['partitions_with_jobs']} partitions have telemetry"
        beyond = week["used_beyond_allocation"]  # busy outside Slurm, or jobs missing from its accounting
        if beyond:
            note += f"; more used than allocated in {', '.join(beyond)}"
        tiles.append(Tile("allocated", "GPU-hours used (DCGM)", f"{week['used_gpu_hours']:,.0f}",
                          f"{week_url}#allocations-by-partition", note=note, warn=bool(beyond)))
    else:
        note = "no partition with both jobs and telemetry" if week["has_jobs"] else "no Slurm jobs in 7 days"
        tiles.append(Tile("allocated", "allocated vs used GPU-hours", "—", f"{week_url}#allocations-by-partition",
                          note=note))
    currency = week["currency"]
    # The utilization page's own wording of what priced the idle hours (contracts, the default rate or both).
    priced = idle_cost_basis(week["totals"]) if week["idle_gpu_hours"] else "nothing idle to price"
    tiles += [
        Tile("idle-hours", "idle GPU-hours, 7 days", f"{week['idle_gpu_hours']:,.0f}", f"{week_url}#least-used",
             note=f"of {week['gpu_hours']:,.0f} observed"),
        Tile("idle-cost", "idle cost, 7 days", f"{week['idle_cost']:,.0f} {currency}", f"{week_url}#least-used",
             note=priced),
        Tile("stale", "stale telemetry sources", str(week["stale_sources"]),
             _url("inventory:telemetrysource_list", stale="true", enabled="true"), warn=bool(week["stale_sources"])),
    ]
    return tiles


def least_used_panel(request):
    """The five in-service nodes least used over the last 7 days, each linked to its page."""
    if not request.user.has_perm(VIEW_TELEMETRY):
        return None
    nodes = [{**node, "url": reverse("inventory:node_detail", args=[node["key"]])}
             for node in _week(request)["least_used"]]
    return {"least_used": nodes, "utilization_url": _url("inventory:utilization", range=summary.RANGE)}


def fleet_panel(request):
    """The fleet by state and site, GPUs by model, capacity. An account without a role sees no fleet data."""
    if not request.user.has_perm("inventory.view_node"):
        return None
    fleet, counts = _fleet_summary(request), _capacity(request)
    return {
        "summary": fleet,
        "capacity_by_site": [(site["name"], counts["site"].get(site["name"], capacity.Capacity()), site)
                             for site in fleet["sites"]],
        "capacity": counts[None],
        "gpus_by_model_chart": json.dumps({
            "x": [row["name"] for row in fleet["gpus_by_model"]],
            "y": [row["n"] for row in fleet["gpus_by_model"]],
        }),
        "nodes_by_state_chart": json.dumps({
            "sites": [site["name"] for site in fleet["sites"]],
            "series": [
                {"state": label, "key": key, "counts": [site["nodes"].get(key, 0) for site in fleet["sites"]]}
                for key, label in fleet["states"]
            ],
        }),
    }



def capacity_object_panel(request, obj):
    """A site's or GPU model's GPUs by the capacity model, on its page. An account without a role sees none."""
    if not request.user.has_perm("inventory.view_node"):
        return None
    scope = {"site_id": obj.pk} if obj._meta.model_name == "site" else {"gpu_model_id": obj.pk}
    query = {"site": obj.pk} if "site_id" in scope else {"gpu_model": obj.pk}
    return {"capacity": capacity.count(**scope), "api_url": _url("inventory-api:capacity", **query)}
