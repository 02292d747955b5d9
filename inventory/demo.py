"""The demo data (``manage.py seed_demo``): a realistic two-site demo fleet and the three demo accounts, then
every other app's demo (``<app>/demo.py``).

Idempotent: every row is matched by its natural key (hostname, name, site + rack name, node + fabric,
GPU UUID, username); missing rows are bulk-created, differing rows are updated, equal rows are left
alone, so a second run writes nothing (no new rows, no history rows). Lifecycle events (burn-in, faults,
repairs) go through ``inventory.lifecycle`` and are applied only to nodes created by this run, so a
repair made in the portal is not undone by seeding again. Demo passwords are reset on every run.

Telemetry: two sources point at the simulator that ``make demo`` starts (``manage.py simulate_telemetry``),
and the 7 days before now are backfilled from the same simulator model through the pull's write path, so
a fresh demo shows full charts at once; a later run backfills only what the sources lack since. Before
those 7 days, ``HISTORY_MONTHS`` of daily rows (``simulator.day_records``: growing demand with a yearly season)
give the demand forecast of capacity plans a history to fit; written once. The simulator's Slurm jobs of the
``JOB_HISTORY_MONTHS`` whole calendar months before this one (up to the backfilled week) are written once too,
through the same write path: the planning demo's finished workloads calibrate on them (``demo_telemetry``).
"""

import time
import uuid
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal as D
from importlib import import_module

from django.apps import apps
from django.contrib.auth.models import Group, User
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.db.models import Count
from django.utils import timezone
from django.utils.module_loading import module_has_submodule
from simple_history.utils import bulk_create_with_history

from inventory.allocations import demo as allocations_demo
from inventory.catalog import GPU_MODELS, NODE_MODELS
from inventory.demo_telemetry import (
    BACKFILL,
    HISTORY_MONTHS,
    JOB_HISTORY_MONTHS,
    backfill,
    daily_history,
    job_faults,
    job_history,
)
from inventory.lifecycle import bulk_transition, transition
from inventory.models import (
    GPU,
    Fabric,
    FabricAttachment,
    GPUModel,
    LifecycleState,
    Node,
    NodeModel,
    Rack,
    Site,
    StateTransition,
    StorageSystem,
    Switch,
)
from inventory.statements import demo as statements_demo
from inventory.teams.demo import sync_teams
from inventory.telemetry.models import (
    GPUDaily,
    GPUHourly,
    NodeHourly,
    SlurmJob,
    SlurmJobNode,
    TelemetrySource,
)
from portal.db import analyze
from portal.roles import ADMIN, MANAGER, VIEWER

S = LifecycleState
REASON = "Demo data (seed_demo)"
UUID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_DNS, "demo.cluster-portal.example")

ACCOUNTS = [
    # username, password, group, staff + superuser
    ("admin", "demo-admin", ADMIN, True),
    ("manager", "demo-manager", MANAGER, False),
    ("viewer", "demo-viewer", VIEWER, False),
]

SITES = [
    {
        "name": "Zurich DC1", "location": "Zurich, Switzerland", "power_capacity_kw": D("600.0"),
        "cooling_capacity_kw": D("550.0"), "pue": D("1.25"), "energy_price_per_kwh": D("0.2100"),
        "rack_cost_per_month": D("2400.00"),
        "description": "Main training site: H100 and H200 pods, rear-door heat exchangers, NDR fat tree.",
    },
    {
        "name": "Lyon DC2", "location": "Lyon, France", "power_capacity_kw": D("400.0"),
        "cooling_capacity_kw": D("380.0"), "pue": D("1.40"), "energy_price_per_kwh": D("0.1600"),
        "rack_cost_per_month": D("1600.00"),
        "description": "Second site: A100 legacy training and the H100 inference pool.",
    },
]


@dataclass(frozen=True)
class SiteNet:
    site: str
    code: str
    eth_gbps: int
    eth_leaf_model: str
    eth_spine_model: str
    rack_budgets: dict  # rack name → power budget (kW); "N01" holds the switches
    # The first leaves of the InfiniBand fabric cabled with half the uplinks (2:1 oversubscribed): Zurich's
    # H100 pod, where the network-bound scenario (train-h100) runs.
    ib_blocking_leaves: int = 0


@dataclass(frozen=True)
class NodeGroup:
    site: str
    hostname_prefix: str
    count: int
    node_model: str
    gpu_model: str
    racks: tuple  # 4 nodes per rack, in order
    assignments: tuple  # (partition, owner team, how many), in hostname order
    warranty: tuple  # (warranty end, how many), in hostname order
    node_serial_prefix: str
    gpu_serial_prefix: str


NETWORKS = [
    SiteNet("Zurich DC1", "zrh", 200, "NVIDIA SN3700", "NVIDIA SN4700",
            {"R01": D("44.0"), "R02": D("44.0"), "R03": D("44.0"), "R04": D("44.0"), "R05": D("44.0"),
             "R06": D("44.0"), "N01": D("15.0")}, ib_blocking_leaves=4),
    SiteNet("Lyon DC2", "lys", 100, "NVIDIA SN2700", "NVIDIA SN2700",
            {"R01": D("30.0"), "R02": D("30.0"), "R03": D("44.0"), "R04": D("44.0"), "N01": D("12.0")}),
]

NODE_GROUPS = [
    NodeGroup("Zurich DC1", "zrh-h100", 16, "DGX H100", "H100 SXM 80GB", ("R01", "R02", "R03", "R04"),
              (("train-h100", "llm-pretrain", 12), ("train-h100", "vision", 4)),
              ((date(2027, 9, 30), 16),), "16547223", "16529231"),
    NodeGroup("Zurich DC1", "zrh-h200", 8, "DGX H200", "H200 SXM 141GB", ("R05", "R06"),
              (("train-h200", "llm-pretrain", 8),),
              ((date(2028, 6, 30), 8),), "17232409", "17251240"),
    NodeGroup("Lyon DC2", "lys-a100", 8, "DGX A100 640GB", "A100 80GB SXM", ("R01", "R02"),
              (("a100-legacy", "vision", 4), ("a100-legacy", "speech", 4)),
              ((date(2024, 12, 31), 3), (date(2027, 6, 30), 5)), "14213021", "13242210"),
    NodeGroup("Lyon DC2", "lys-h100", 8, "SYS-821GE-TNHR (HGX H100 8-GPU)", "H100 SXM 80GB", ("R03", "R04"),
              (("inference", "platform", 4), ("train-h100", "speech", 4)),
              ((date(2027, 3, 31), 8),), "S4123098", "16530871"),
]
NODES_PER_RACK = 4
FIRST_U = 3  # U1-U2 stay free for PDUs and cable management
IB_NODES_PER_LEAF = 4  # 4 nodes x 8 NDR ports = 32 downlinks, 32 uplinks: non-blocking
IB_PORTS_PER_NODE = 8
ETH_PORTS_PER_NODE = 2
ETH_LEAVES = 2
ETH_LEAF_UPLINKS = 8

# Nodes created by the burn-in step start as delivered; all others start in service.
BURN_IN = {"zrh-h200-007", "zrh-h200-008"}
BURN_IN_REASON = "Acceptance: HPL, NCCL all-reduce and DCGM level 3 diagnostics"

# (hostname, GPU slot or None for the node, [(state, reason), ...]) applied to newly created nodes.
INCIDENTS = [
    ("zrh-h100-007", None, [(S.DEGRADED, "XID 79: GPU 3 fell off the bus; node drained")]),
    ("zrh-h100-007", 3, [(S.DEGRADED, "XID 79: GPU fell off the bus"),
                         (S.IN_REPAIR, "RMA opened with NVIDIA for the GPU")]),
    ("zrh-h100-012", 6, [(S.DEGRADED, "XID 63: ECC row remapping pending; reset at next drain")]),
    ("zrh-h200-003", None, [(S.DEGRADED, "XID 48: double-bit ECC error on GPU 5"),
                            (S.IN_REPAIR, "Row remap failed; GPU replacement scheduled")]),
    ("zrh-h200-003", 5, [(S.DEGRADED, "XID 48: double-bit ECC error"),
                         (S.IN_REPAIR, "Awaiting replacement GPU")]),
    ("lys-a100-002", None, [(S.DEGRADED, "PSU 2 failed: running without power redundancy")]),
    ("lys-a100-006", None, [(S.DEGRADED, "IB port mlx5_3 flapping (symbol errors)"),
                            (S.IN_REPAIR, "Replacing NDR cable and transceiver on mlx5_3")]),
    ("lys-a100-008", None, [(S.DEGRADED, "XID 74: NVLink error on GPU 2"),
                            (S.IN_REPAIR, "Reseating GPU 2 and NVSwitch tray"),
                            (S.IN_SERVICE, "Passed DCGM level 3 diagnostics after repair")]),
    ("lys-h100-004", 1, [(S.DEGRADED, "XID 94: contained ECC error; row remapping pending")]),
]

# The incidents happened yesterday, each step an hour after the one before: the week's telemetry shows the fault
# before the GPU went silent in repair, and the home page's last 24 hours count its XID (issue 37).
INCIDENTS_AGO = timedelta(hours=20)
INCIDENT_STEP = timedelta(hours=1)

# The simulator that ``manage.py simulate_telemetry`` (started by ``make demo``, on ``SIM_PORT``) serves, as two
# ordinary sources: the portal pulls the demo's live data through the same code as a real site's.
SIMULATOR_PORT = 9400


def telemetry_sources(port=SIMULATOR_PORT):
    simulator_url = f"http://127.0.0.1:{port}"
    return [
        {"name": "Demo DCGM exporter (simulator)", "kind": TelemetrySource.Kind.EXPORTER,
         "url": f"{simulator_url}/metrics", "interval_seconds": 60, "timeout_seconds": 5, "backfill_hours": 168,
         "enabled": True},
        {"name": "Demo Slurm accounting (simulator)", "kind": TelemetrySource.Kind.SLURM,
         "url": f"{simulator_url}/slurmdb/v0.0.40/jobs", "interval_seconds": 300, "timeout_seconds": 5,
         "backfill_hours": 168, "enabled": True},
    ]



STORAGE = [
    {"name": "zrh-lustre-scratch", "site": "Zurich DC1", "kind": StorageSystem.Kind.PARALLEL_FS,
     "tier": StorageSystem.Tier.HOT, "capacity_tb": D("2400.0"), "used_tb": D("1630.0"),
     "read_gbs": D("400.0"), "write_gbs": D("260.0")},
    {"name": "zrh-nfs-home", "site": "Zurich DC1", "kind": StorageSystem.Kind.NFS,
     "tier": StorageSystem.Tier.WARM, "capacity_tb": D("300.0"), "used_tb": D("185.5"),
     "read_gbs": D("20.0"), "write_gbs": D("12.0")},
    {"name": "zrh-s3-archive", "site": "Zurich DC1", "kind": StorageSystem.Kind.OBJECT,
     "tier": StorageSystem.Tier.ARCHIVE, "capacity_tb": D("12000.0"), "used_tb": D("7450.0"),
     "read_gbs": D("60.0"), "write_gbs": D("40.0")},
    {"name": "lys-lustre-scratch", "site": "Lyon DC2", "kind": StorageSystem.Kind.PARALLEL_FS,
     "tier": StorageSystem.Tier.HOT, "capacity_tb": D("1200.0"), "used_tb": D("910.0"),
     "read_gbs": D("200.0"), "write_gbs": D("130.0")},
    {"name": "lys-s3-archive", "site": "Lyon DC2", "kind": StorageSystem.Kind.OBJECT,
     "tier": StorageSystem.Tier.ARCHIVE, "capacity_tb": D("6000.0"), "used_tb": D("2890.0"),
     "read_gbs": D("30.0"), "write_gbs": D("20.0")},
]


def gpu_uuid(hostname, slot):
    """A stable nvidia-smi style UUID, so a second run finds the same GPU."""
    return f"GPU-{uuid.uuid5(UUID_NAMESPACE, f'{hostname}/{slot}')}"


def expand(pairs):
    """(value, n), (value, m) → value x n, value x m."""
    return [value for *value, n in pairs for _ in range(n)]


class Seeder:
    """Creates or updates rows by natural key and counts what it did; reports each step's time through ``report``
    (a callable taking a line, e.g. the command's output) and collects the demo logins the apps create."""

    def __init__(self, report=None):
        self.created, self.updated = Counter(), Counter()
        self.new = {}  # model → the objects created by this run
        self.report = report or (lambda line: None)
        self.logins = []  # (username, password, role) of every demo account, in the order they were synced

    @contextmanager
    def step(self, what):
        """``Seeding <what> … 12.3 s``, once the step is done: a whole line, which what the step itself prints (log
        lines; the renewal alert's mail where the console backend is in use, not in make demo) cannot cut in two."""
        started = time.monotonic()
        yield
        self.report(f"Seeding {what} … {time.monotonic() - started:.1f} s")

    def login(self, username, password, role):
        self.logins.append((username, password, role))

    def sync(self, model, key, rows, create_only=(), update=True):
        """Make ``rows`` (dicts of field name → value; objects for foreign keys) exist, matched on ``key``.

        Fields in ``create_only`` are set on creation and never compared afterwards (e.g. the lifecycle
        state, which only ``inventory.lifecycle`` changes). Returns {key tuple: object}.
        """
        if not rows:
            return {}
        fields = {name: model._meta.get_field(name) for name in rows[0]}

        def raw(name, value):  # what the row's column holds: the related key (a team's name for a node)
            return getattr(value, fields[name].target_field.attname) if fields[name].is_relation and value is not None \
                else value

        def row_key(row):
            return tuple(raw(name, row[name]) for name in key)

        existing = {
            tuple(getattr(obj, fields[name].attname) for name in key): obj
            for obj in model.objects.filter(**{f"{key[0]}__in": {row[key[0]] for row in rows}})
        }
        result, new = {}, []
        for row in rows:
            obj = existing.get(row_key(row))
            if obj is None:
                obj = model(**row)
                # Field rules and clean() per row; the unique constraints (serials, UUIDs, slots) are left to
                # the database at the bulk insert: checking them row by row costs a query each.
                obj.full_clean(validate_constraints=False)
                new.append(obj)
            elif update:
                changed = [
                    name for name, value in row.items()
                    if name not in create_only and getattr(obj, fields[name].attname) != raw(name, value)
                ]
                if changed:
                    for name in changed:
                        setattr(obj, name, row[name])
                    obj.full_clean()
                    obj._change_reason = REASON
                    obj.save()
                    self.updated[model._meta.verbose_name_plural] += 1
            result[row_key(row)] = obj
        if new:
            bulk_create_with_history(new, model, batch_size=500, default_change_reason=REASON)
            self.created[model._meta.verbose_name_plural] += len(new)
        self.new[model] = new
        return result


@transaction.atomic
def seed_demo(report=None, simulator_port=SIMULATOR_PORT):
    """Create (or bring back) the demo fleet, then the other apps' demos; returns a summary for the command.
    ``report(line)`` gets a line per step, with its time (``Seeder.step``)."""
    seeder = Seeder(report)
    nodes = sum(group.count for group in NODE_GROUPS)
    with seeder.step(f"the fleet: {len(SITES)} sites, {nodes} nodes, {nodes * 8} GPUs, network, storage, accounts"):
        users = seed_fleet(seeder)
    with seeder.step("telemetry sources"):
        sources = seeder.sync(TelemetrySource, ("name",), telemetry_sources(simulator_port))
        exporter, jobs_source = (sources[(row["name"],)] for row in telemetry_sources(simulator_port))
    gpus = GPU.objects.count()
    with seeder.step(f"Slurm job history: {JOB_HISTORY_MONTHS} months × {Node.objects.count()} nodes"):
        history_jobs = job_history(jobs_source)  # before the week: the week's pull then completes the jobs it cut
    with seeder.step(f"telemetry: {BACKFILL.days} days hourly × {gpus} GPUs, and Slurm jobs"):
        backfilled = backfill(exporter, jobs_source)
        job_faults(exporter)
    with seeder.step(f"daily history: {HISTORY_MONTHS} months × {gpus} GPUs"):
        backfilled = (backfilled[0], backfilled[1] + history_jobs, daily_history())
        analyze(Node, GPU, GPUHourly, NodeHourly, GPUDaily, SlurmJob, SlurmJobNode)  # the analyses below read them
    seed_other_apps(seeder, users)
    with seeder.step(f"statements: {statements_demo.SEEDS}"):
        issued = statements_demo.seed(seeder, {user.username: user for user in User.objects.all()})
    seeder.report(f"  {issued}")  # under its step's line, not above it
    with seeder.step(f"allocations: {allocations_demo.SEEDS}"):  # after support's researcher, who asks for one
        allocations_demo.seed(seeder, {user.username: user for user in User.objects.all()})
    return summary(seeder, backfilled)


def seed_fleet(seeder):
    """Accounts, sites, racks, network, storage, nodes and GPUs with their lifecycle events; returns the users."""
    users = sync_accounts(seeder)
    teams = sync_teams(seeder, users)
    gpu_models = seeder.sync(GPUModel, ("name",), GPU_MODELS, update=False)
    node_models = seeder.sync(NodeModel, ("name",), NODE_MODELS, update=False)
    sites = seeder.sync(Site, ("name",), SITES)
    site = {name: obj for (name,), obj in sites.items()}

    racks = seeder.sync(Rack, ("site", "name"), [
        {"site": site[net.site], "name": name, "height_u": 42, "power_budget_kw": budget}
        for net in NETWORKS for name, budget in net.rack_budgets.items()
    ])
    rack = {(name, rack_name): racks[(obj.pk, rack_name)] for name, obj in site.items()
            for net in NETWORKS if net.site == name for rack_name in net.rack_budgets}

    fabric_rows, switch_rows = [], []
    for net in NETWORKS:
        fabric_rows += site_fabrics(net, site[net.site])
    fabrics = seeder.sync(Fabric, ("name",), fabric_rows)
    fabric = {name: obj for (name,), obj in fabrics.items()}
    for net in NETWORKS:
        switch_rows += site_switches(net, site[net.site], rack[(net.site, "N01")], fabric)
    switches = seeder.sync(Switch, ("name",), switch_rows)
    switch = {name: obj for (name,), obj in switches.items()}
    seeder.sync(StorageSystem, ("name",), [{**row, "site": site[row["site"]]} for row in STORAGE])

    node_rows, gpu_rows, attachment_rows = [], [], []
    for group in NODE_GROUPS:
        node_rows += group_nodes(group, site[group.site], rack, node_models[(group.node_model,)], teams)
    nodes = seeder.sync(Node, ("hostname",), node_rows, create_only=("state",))
    node = {name: obj for (name,), obj in nodes.items()}
    for group in NODE_GROUPS:
        gpu_model = gpu_models[(group.gpu_model,)]
        for i in range(1, group.count + 1):
            hostname = f"{group.hostname_prefix}-{i:03d}"
            for slot in range(8):
                gpu_rows.append({
                    "node": node[hostname], "slot": slot, "gpu_model": gpu_model,
                    "serial": f"{group.gpu_serial_prefix}{i:04d}{slot}", "uuid": gpu_uuid(hostname, slot),
                    "state": node[hostname].state,
                })
    seeder.sync(GPU, ("uuid",), gpu_rows, create_only=("state",))
    for net in NETWORKS:
        attachment_rows += site_attachments(net, [n for n in node_rows if n["site"] == site[net.site]],
                                            node, fabric, switch)
    seeder.sync(FabricAttachment, ("node", "fabric"), attachment_rows)

    record_creation(seeder.new[Node] + seeder.new[GPU])
    apply_events({obj.hostname for obj in seeder.new[Node]}, node, users["manager"])
    return users


def seed_other_apps(seeder, users):
    """Apps that build on the inventory seed their demo data in ``<app>/demo.py`` (``seed(seeder, users)``),
    e.g. planning's contracts, in app order; then each app's optional ``finish()`` runs, once every app has
    seeded (planning's analysis reads support's tickets). The inventory does not import them."""
    demos = [(config.verbose_name, import_module(f"{config.name}.demo")) for config in apps.get_app_configs()
             if config.name != "inventory" and module_has_submodule(config.module, "demo")]
    for name, demo in demos:
        # SEEDS / FINISHES: what the app's steps write, for the progress lines.
        with seeder.step(f"{name.lower()}: {getattr(demo, 'SEEDS', 'demo data')}"):
            demo.seed(seeder, users)
    for name, demo in demos:
        if hasattr(demo, "finish"):
            with seeder.step(f"{name.lower()}: {getattr(demo, 'FINISHES', 'analyses')}"):
                demo.finish()


# --- accounts ----------------------------------------------------------------------------------
def sync_accounts(seeder):
    users = {}
    for username, password, role, is_admin in ACCOUNTS:
        seeder.login(username, password, role)
        user, created = User.objects.get_or_create(
            username=username, defaults={"email": f"{username}@demo.example.org"}
        )
        dirty = created
        for attr, value in (("is_staff", is_admin), ("is_superuser", is_admin), ("is_active", True)):
            if getattr(user, attr) != value:
                setattr(user, attr, value)
                dirty = True
        if created or not user.check_password(password):
            user.set_password(password)
            dirty = True
        if dirty:
            user.save()
        group, _ = Group.objects.get_or_create(name=role)
        user.groups.set([group])
        users[username] = user
    return users


# --- layout ------------------------------------------------------------------------------------
def site_fabrics(net, site):
    return [
        {"name": f"{net.code}-ib-ndr", "kind": Fabric.Kind.INFINIBAND, "link_speed_gbps": 400, "site": site,
         "description": "Compute fabric: NDR 400 Gb/s two-level fat tree, 8 rails per node, "
                        + (f"2:1 oversubscribed under leaves 01–{net.ib_blocking_leaves:02d} (the H100 pod), "
                           "non-blocking elsewhere." if net.ib_blocking_leaves else "non-blocking.")},
        {"name": f"{net.code}-eth-{net.eth_gbps}g", "kind": Fabric.Kind.ETHERNET,
         "link_speed_gbps": net.eth_gbps, "site": site,
         "description": f"Front-end and storage network: {net.eth_gbps} GbE leaf/spine, 2 bonded ports per node."},
    ]


def site_node_count(net):
    return sum(g.count for g in NODE_GROUPS if g.site == net.site)


def site_switches(net, site, rack, fabric):
    code, serial = net.code, 10001 if net.code == "zrh" else 20001
    nodes = site_node_count(net)
    ib_leaves = -(-nodes // IB_NODES_PER_LEAF)
    ib_leaf_uplinks = IB_NODES_PER_LEAF * IB_PORTS_PER_NODE
    ib_spines = -(-ib_leaves * ib_leaf_uplinks // 64)
    eth_down = -(-nodes // ETH_LEAVES) * ETH_PORTS_PER_NODE
    rows = []

    def add(name, fabric_name, model, ports, uplinks, ratio):
        nonlocal serial
        rows.append({"name": name, "fabric": fabric[fabric_name], "site": site, "rack": rack, "model": model,
                     "serial": f"MT2318X{serial:05d}", "ports": ports, "uplinks": uplinks,
                     "oversubscription_ratio": ratio})
        serial += 1

    for i in range(1, ib_leaves + 1):
        blocking = i <= net.ib_blocking_leaves
        add(f"{code}-ib-leaf-{i:02d}", f"{code}-ib-ndr", "NVIDIA QM9700", 64,
            ib_leaf_uplinks // 2 if blocking else ib_leaf_uplinks, D("2.00") if blocking else D("1.00"))
    for i in range(1, ib_spines + 1):
        add(f"{code}-ib-spine-{i:02d}", f"{code}-ib-ndr", "NVIDIA QM9700", 64, 0, D("1.00"))
    eth = f"{code}-eth-{net.eth_gbps}g"
    for i in range(1, ETH_LEAVES + 1):
        add(f"{code}-eth-leaf-{i:02d}", eth, net.eth_leaf_model, 32, ETH_LEAF_UPLINKS,
            (D(eth_down) / ETH_LEAF_UPLINKS).quantize(D("0.01")))
    add(f"{code}-eth-spine-01", eth, net.eth_spine_model, 32, 0, D("1.00"))
    return rows


def group_nodes(group, site, rack, node_model, teams):
    assignments = expand(group.assignments)
    warranties = expand(group.warranty)
    asset_base = {"zrh": 10000, "lys": 20000}[group.hostname_prefix[:3]]
    offset = sum(g.count for g in NODE_GROUPS[:NODE_GROUPS.index(group)] if g.site == group.site)
    rows = []
    for i in range(1, group.count + 1):
        hostname = f"{group.hostname_prefix}-{i:03d}"
        partition, team = assignments[i - 1]
        (warranty_end,) = warranties[i - 1]
        rows.append({
            "hostname": hostname, "serial": f"{group.node_serial_prefix}{i:04d}",
            "asset_tag": f"{group.hostname_prefix[:3].upper()}-{asset_base + offset + i:05d}",
            "site": site, "rack": rack[(group.site, group.racks[(i - 1) // NODES_PER_RACK])],
            "position": FIRST_U + ((i - 1) % NODES_PER_RACK) * node_model.height_u,
            "node_model": node_model, "partition": partition, "owner_team": teams[team], "warranty_end": warranty_end,
            "state": S.DELIVERED if hostname in BURN_IN else S.IN_SERVICE,
        })
    return rows


def site_attachments(net, node_rows, node, fabric, switch):
    """Every node: 8 x 400G to its InfiniBand leaf, 2 x Ethernet to its front-end leaf."""
    code, eth = net.code, f"{net.code}-eth-{net.eth_gbps}g"
    per_eth_leaf = -(-len(node_rows) // ETH_LEAVES)
    rows = []
    for k, row in enumerate(node_rows):
        obj = node[row["hostname"]]
        rows.append({"node": obj, "fabric": fabric[f"{code}-ib-ndr"],
                     "switch": switch[f"{code}-ib-leaf-{k // IB_NODES_PER_LEAF + 1:02d}"],
                     "ports": IB_PORTS_PER_NODE, "speed_gbps": 400})
        rows.append({"node": obj, "fabric": fabric[eth],
                     "switch": switch[f"{code}-eth-leaf-{k // per_eth_leaf + 1:02d}"],
                     "ports": ETH_PORTS_PER_NODE, "speed_gbps": net.eth_gbps})
    return rows


# --- lifecycle ---------------------------------------------------------------------------------
def record_creation(objs):
    """One lifecycle record per new node and GPU: its starting state."""
    StateTransition.objects.bulk_create(
        StateTransition(content_type=ContentType.objects.get_for_model(obj), object_id=obj.pk, from_state="",
                        to_state=obj.state, username="seed_demo", reason="Initial state (demo data)")
        for obj in objs
    )


def apply_events(new_hostnames, node, user):
    burn_in = sorted(BURN_IN & new_hostnames)
    for hostname in burn_in:
        transition(node[hostname], S.BURN_IN, user=user, reason=BURN_IN_REASON)
    if burn_in:
        bulk_transition(GPU.objects.filter(node__hostname__in=burn_in), S.BURN_IN, user=user,
                        reason=BURN_IN_REASON)
    began = timezone.now() - INCIDENTS_AGO
    for hostname, slot, steps in INCIDENTS:
        if hostname not in new_hostnames:
            continue
        obj = node[hostname] if slot is None else GPU.objects.get(node=node[hostname], slot=slot)
        records = StateTransition.objects.filter(content_type=ContentType.objects.get_for_model(obj), object_id=obj.pk)
        records.filter(from_state="").update(created=began - INCIDENT_STEP)  # it was there before its incident
        for step, (state, reason) in enumerate(steps):
            transition(obj, state, user=user, reason=reason)
            # Dated when it happened: the simulator's GPU reports until it went to repair, its fault on its gauge.
            records.filter(pk=records.order_by("-pk").values("pk")[:1]).update(created=began + step * INCIDENT_STEP)


# --- output ------------------------------------------------------------------------------------
def summary(seeder, backfilled):
    states = dict(Node.objects.values_list("state").annotate(n=Count("pk")).order_by())
    label = dict(S.choices)
    fleet = ", ".join(f"{states[s]} {label[s].lower()}" for s in S.values if s in states)
    created = ", ".join(f"{n} {name}" for name, n in seeder.created.items()) or "nothing"
    updated = ", ".join(f"{n} {name}" for name, n in seeder.updated.items()) or "nothing"
    return (
        f"Demo fleet: {Site.objects.count()} sites, {Node.objects.count()} nodes ({fleet}), "
        f"{GPU.objects.count()} GPUs, {Switch.objects.count()} switches, "
        f"{StorageSystem.objects.count()} storage systems.\n"
        f"Created: {created}.\nUpdated: {updated}.\n"
        f"Telemetry from the simulator: {backfilled[0]} GPU hours and {backfilled[1]} Slurm jobs backfilled, "
        f"{backfilled[2]} daily GPU rows of history "
        "(live data: manage.py simulate_telemetry, started by make demo).\n\n"
        + logins_table(seeder.logins)
    )


def logins_table(logins):
    """The demo logins the seed created (every app's), one a line: user, password, role."""
    width = max(len(username) for username, _password, _role in logins)
    pw_width = max(len(password) for _username, password, _role in logins)
    lines = [f"  {username:<{width}}  {password:<{pw_width}}  {role}" for username, password, role in logins]
    return f"Demo logins ({len(logins)}, user / password / role):\n" + "\n".join(lines)
