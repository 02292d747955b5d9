"""The inventory's parts of the portal's frames (registered in ``InventoryConfig.ready``): the home dashboard's
tiles (fleet, last 7 days of utilization), the least-used nodes and the fleet panel; the global search is
``queries.search``."""

import json

from django.conf import settings
from django.db.models import Count
from django.urls import reverse
from django.utils.http import urlencode

from portal.registry import Decision, Tile

from . import capacity, queries
from .allocations.models import AllocationRequest, SlurmSync
from .allocations.policy import awaiting_decision
from .partitionmoves.models import PartitionMove
from .telemetry import recent_faults, summary
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


def health_tiles(request):
    """Broken hardware first (issue 37): GPUs out of service (degraded or in repair: the capacity model's count, the
    GPU tile's), hardware XID events and ECC errors of the last 24 hours, GPUs whose row remap failed; each links to
    the GPU list filtered to exactly the GPUs it counts."""
    if not request.user.has_perm("inventory.view_gpu"):
        return None
    out = _capacity(request)[None].out_of_service
    found, window = recent_faults.counts(), str(recent_faults.HOURS)
    tiles = [Tile("gpus-out", "GPUs degraded / in repair", f"{out:,}",
                  _url("inventory:gpu_list", capacity="out_of_service"), note="the GPU or its node", warn=bool(out))]
    if not request.user.has_perm(VIEW_TELEMETRY):
        return tiles
    xid_note = f"on {found['xid_gpus']} GPU{'s' if found['xid_gpus'] != 1 else ''}"
    if found["ecc_xid_events"]:
        xid_note += f", {found['ecc_xid_events']} of them ECC"
    ecc_note = f"on {found['ecc_gpus']} GPU{'s' if found['ecc_gpus'] != 1 else ''}"
    if found["ecc_double_bit"]:
        ecc_note += f", {found['ecc_double_bit']:,} uncorrectable"
    return tiles + [
        Tile("xid-24h", "hardware XID events, 24 h", f"{found['xid_events']:,}",
             _url("inventory:gpu_list", xid_hours=window), note=xid_note, warn=bool(found["xid_events"])),
        Tile("ecc-24h", "ECC errors, 24 h", f"{found['ecc_errors']:,}", _url("inventory:gpu_list", ecc_hours=window),
             note=ecc_note, warn=bool(found["ecc_double_bit"])),
        Tile("remap-failed", "GPUs with a failed row remap", str(found["remap_failed"]),
             _url("inventory:gpu_list", row_remap_failed="true"), note="replace them (RMA)",
             warn=bool(found["remap_failed"])),
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


def allocation_decisions(request):
    """The home page's "awaiting your decision", the allocations' part: the requests (new, change, renewal) this
    manager may decide (``allocations.policy.awaiting_decision``: the decision rule as a query), and the looks at
    Slurm whose changes wait to be applied (the latest proposal of each cluster). None for a user who may do
    neither."""
    user = request.user
    lines = []
    if user.has_perm("inventory.decide_allocation_request"):
        kinds = dict(awaiting_decision(AllocationRequest.objects.all(), user).order_by()
                     .values_list("kind").annotate(n=Count("pk")))
        labels = dict(AllocationRequest.Kind.choices)
        note = ", ".join(f"{n} {labels[kind].lower()}" for kind, n in sorted(kinds.items()))
        lines.append(Decision("allocation-requests", sum(kinds.values()), "allocation and change requests to decide",
                              _url("inventory:allocationrequest_list", awaiting_me="true"), note=note))
    if user.has_perm("inventory.decide_partition_move"):  # four eyes: those others proposed
        moves = PartitionMove.objects.filter(status=PartitionMove.Status.PROPOSED).exclude(proposed_by=user)
        lines.append(Decision("partition-moves", moves.count(), "moves between partitions to approve",
                              _url("inventory:partitionmove_list", status="proposed")))
    if user.has_perm("inventory.apply_slurm_sync"):
        looks = list(SlurmSync.objects.filter(status=SlurmSync.Status.PROPOSED).only("pk", "cluster", "changes"))
        changes = sum(len(look.changes) for look in looks)
        url = looks[0].get_absolute_url() if len(looks) == 1 else reverse("inventory:slurmsync_latest")
        lines.append(Decision("slurm-sync", len(looks), "Slurm syncs with changes to apply", url,
                              note=f"{changes} change{'s' if changes != 1 else ''} to Slurm's associations"
                              if looks else ""))
    return lines if lines else None
