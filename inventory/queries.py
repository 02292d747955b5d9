"""Read-only summaries of the fleet for other apps and the home dashboard (set-based queries)."""

from collections import defaultdict
from datetime import timedelta

from django.db import connection
from django.db.models import Count, Exists, F, OuterRef, Sum
from django.utils import timezone

from portal.forms import object_id
from portal.search import search_kinds

from .lifecycle import state_since
from .models import GPU, GPUModel, LifecycleState, Node, Rack, Site, StorageSystem, Switch


def fleet_summary(by_model):
    """Counts and capacity for the home dashboard, in a handful of aggregate queries; ``by_model``: the capacity
    model's counts per GPU model (``capacity.count_by("gpu_model")``, which the dashboard reads with its others)."""
    today = timezone.localdate()
    sites = list(Site.objects.order_by("name").values_list("name", flat=True))
    states = LifecycleState.choices

    nodes_by_site_state = defaultdict(dict)
    for row in Node.objects.values("site__name", "state").annotate(n=Count("id")):
        nodes_by_site_state[row["site__name"]][row["state"]] = row["n"]
    nodes_by_state = {s: sum(by_state.get(s, 0) for by_state in nodes_by_site_state.values()) for s, _ in states}

    gpus_by_state = dict(GPU.objects.values_list("state").annotate(n=Count("id")))
    # GPUs by model as the capacity model counts them (its ``total``: neither the GPU nor its node retired), the
    # GPU tile's and the API's figure; memory and FLOP/s per site over the same GPUs (those in a node).
    gpus_by_model = sorted(({"name": name, "n": gpus.total} for name, gpus in by_model.items()
                            if name and gpus.total),
                           key=lambda row: (-row["n"], row["name"]))
    retired = LifecycleState.RETIRED
    capacity_by_site = {
        row["site"]: row
        for row in GPU.objects.filter(node__isnull=False).exclude(state=retired).exclude(node__state=retired)
        .values(site=F("node__site__name"))
        .annotate(gpus=Count("id"), memory_gb=Sum("gpu_model__memory_gb"), bf16_tflops=Sum("gpu_model__bf16_tflops"))
    }
    site_rows = []
    for name in sites:
        cap = capacity_by_site.get(name, {})
        site_rows.append({
            "name": name,
            "nodes": nodes_by_site_state.get(name, {}),
            "node_total": sum(nodes_by_site_state.get(name, {}).values()),
            "gpus": cap.get("gpus", 0),
            "memory_tb": (cap.get("memory_gb") or 0) / 1000,
            "bf16_pflops": float(cap.get("bf16_tflops") or 0) / 1000,
        })
    out_of_warranty = Node.objects.filter(warranty_end__lt=today).exclude(state=LifecycleState.RETIRED)
    return {
        "states": states,
        "sites": site_rows,
        "nodes_by_state": nodes_by_state,
        "node_total": sum(nodes_by_state.values()),
        "gpus_by_state": {s: gpus_by_state.get(s, 0) for s, _ in states},
        "gpu_total": sum(gpus_by_state.values()),
        "gpus_by_model": gpus_by_model,
        "memory_tb": sum(r["memory_tb"] for r in site_rows),
        "bf16_pflops": sum(r["bf16_pflops"] for r in site_rows),
        "out_of_warranty": out_of_warranty.count(),
        "storage_pb": float(StorageSystem.objects.aggregate(t=Sum("capacity_tb"))["t"] or 0) / 1000,
    }


def in_state_longer_than(nodes, days, now=None):
    """The ``nodes`` that entered their current state more than ``days`` days ago."""
    limit = (now or timezone.now()) - timedelta(days=days)
    return nodes.alias(entered_state=state_since(Node)).filter(entered_state__lt=limit)


# Where a node waits on people (the vendor, the burn-in) rather than on work: too long there, it is stuck.
WAITING_STATES = (LifecycleState.DELIVERED, LifecycleState.BURN_IN)


def stuck_nodes(days, now=None):
    """Nodes delivered or in burn-in for more than ``days`` days."""
    return in_state_longer_than(Node.objects.filter(state__in=WAITING_STATES), days, now)


# What the global search looks at (``portal.registry``): shown to the users who may view each kind.
SEARCH_LOOKS_AT = (
    ("node hostnames, serials and asset tags", "inventory.view_node"),
    ("GPU serials and UUIDs", "inventory.view_gpu"),
    ("sites", "inventory.view_site"),
    ("racks", "inventory.view_rack"),
    ("switches", "inventory.view_switch"),
    ("storage", "inventory.view_storagesystem"),
)


def search(term, user):
    """``portal.search`` groups of the kinds ``user`` may view, one query each: nodes by hostname, serial or asset
    tag, GPUs by serial or UUID, sites, racks, switches and storage by name; equal to the term (any case) is an
    exact match."""
    term = term.strip()
    if not term:
        return []
    return search_kinds(term, user, [  # title, permission, queryset, fields containing it, fields equal to it
        ("Sites", "inventory.view_site", Site.objects.all(), ["name", "location"], ["name"]),
        ("Racks", "inventory.view_rack", Rack.objects.select_related("site"), ["name"], ["name"]),
        ("Nodes", "inventory.view_node", Node.objects.all(), ["hostname", "serial", "asset_tag"],
         ["hostname", "serial", "asset_tag"]),
        ("GPUs", "inventory.view_gpu", GPU.objects.select_related("node"), ["serial", "uuid"], ["serial", "uuid"]),
        ("Switches", "inventory.view_switch", Switch.objects.all(), ["name", "serial"], ["name", "serial"]),
        ("Storage", "inventory.view_storagesystem", StorageSystem.objects.all(), ["name"], ["name"]),
    ])


def most_common_gpu_model():
    """The name of the GPU model with the most GPUs in service (ties: by name); None with none in service."""
    return (GPU.objects.filter(state=LifecycleState.IN_SERVICE).values(name=F("gpu_model__name"))
            .annotate(n=Count("id")).order_by("-n", "name").values_list("name", flat=True).first())


def partitions(site=None):
    """The partitions of the fleet's nodes (of one site), sorted: what a partition filter offers."""
    nodes = Node.objects.exclude(partition="")
    if site:
        nodes = nodes.filter(site=site)
    return list(nodes.order_by("partition").values_list("partition", flat=True).distinct())


def filter_choices(site=None, teams=True):
    """What a dashboard's filters offer, in one query: ``{"site": [(id, name)], "partition": [name],
    "gpu_model": [(id, name)], "team": [name]}``, each sorted by name: the sites, the partitions of the nodes of
    ``site`` (all when None), the GPU models the fleet has a GPU of (as ``fleet_gpu_models``) and the teams that
    own a node (``teams=False``: none read). The dashboard draws its filters on every request, and four queries
    compiled by the ORM cost it three times this one."""
    quote = connection.ops.quote_name
    table = {m: quote(m._meta.db_table) for m in (Site, Node, GPUModel, GPU)}

    def distinct(kind, field, where=""):  # a node field's values other than ""
        column = quote(Node._meta.get_field(field).column)
        return (f"SELECT DISTINCT '{kind}', CAST(NULL AS INTEGER), {column} FROM {table[Node]} "
                f"WHERE {column} <> ''{where}")

    selects = [
        f"SELECT 'site', id, name FROM {table[Site]}",
        distinct("partition", "partition", "" if site is None else f" AND {quote('site_id')} = %s"),
        f"SELECT 'gpu_model', m.id, m.name FROM {table[GPUModel]} m "
        f"WHERE EXISTS (SELECT 1 FROM {table[GPU]} g WHERE g.{quote('gpu_model_id')} = m.id)",
    ]
    if teams:
        selects.append(distinct("team", "owner_team"))
    choices = {"site": [], "partition": [], "gpu_model": [], "team": []}
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(selects) + " ORDER BY 1, 3, 2", [] if site is None else [site])
        for kind, key, label in cursor.fetchall():
            choices[kind].append(label if key is None else (key, label))
    return choices


def chosen_site(data):
    """The site id a filter's query string chooses (``?site=2``), or None: the partitions to offer follow it."""
    return object_id(data.get("site"))  # raw SQL takes it: no '²', nothing past a bigint


def unknown_partition(site, partition, known):
    """What a filter answers for a partition that no node of the chosen site is in (``known``: the site's): the
    list would be empty with no word why."""
    return f"No node of site {site} is in partition '{partition}'; its partitions: {', '.join(known) or 'none'}."


def fleet_gpu_models():
    """The GPU models of which the fleet has a GPU (the catalog lists many more): what a GPU model filter offers."""
    return GPUModel.objects.filter(Exists(GPU.objects.filter(gpu_model=OuterRef("pk")))).order_by("name")
