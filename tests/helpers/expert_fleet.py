"""A small declarative fleet for the expert scenario library (``tests/planning/test_expert_scenarios*.py``).

A case describes its fleet — partitions of N nodes of a GPU model, the utilization of their node-hours, Slurm jobs
with their widths, states and waits, fabrics, warranty dates, lifecycle moves — and ``write`` sends the telemetry
and the jobs through the real pull path (``inventory.telemetry.pull.store`` of ``HourRecord``\\ s and of
``slurm.parse_jobs`` of ``sacct --json``-shaped rows), records the goodput interruptions as the task does, and
``findings`` runs the analysis (``planning.recommendations.store.run``) and reads back what it wrote.

Every figure a case gives is a level; ``random.Random(seed)`` adds the noise (utilization, memory, waits) so that
the written-down answer must hold for any seed. Hours are counted from the window's start (hour 0 is
``END - 7 days``; negative hours are history before the window).
"""

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.contrib.contenttypes.models import ContentType

from inventory.goodput import recording
from inventory.models import GPU, LifecycleState, Node, StateTransition, TelemetrySource
from inventory.telemetry import slurm
from inventory.telemetry.pull import store
from inventory.telemetry.records import Collected, HourRecord, SeriesKey
from planning.recommendations import store as rec_store
from planning.recommendations.models import Recommendation
from tests.factories import (
    build_gpu,
    build_node,
    make_attachment,
    make_fabric,
    make_gpu_model,
    make_node_model,
    make_site,
    make_switch,
)

END = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)  # a Monday morning, as the other recommendation tests
WINDOW = 168  # hours: the rules' 7-day window
S = LifecycleState
GPU_MEMORY = {"H100": 80, "A100": 80, "H200": 141, "L40S": 48}


@dataclass
class Cell:
    """One node-hour as DCGM would roll it up: mean and peak utilization (%), frame buffer used (share), XID."""

    util: float
    peak: float
    mem: float
    xid: int = 0


class ExpertFleet:
    """The builder. ``rng`` is the case's ``random.Random(seed)``."""

    def __init__(self, seed, end=END):
        self.rng = random.Random(seed)
        self.end, self.start = end, end - timedelta(hours=WINDOW)
        self.cells = {}  # (node id, hour) → Cell
        self.jobs = []  # sacct --json rows
        self.sites, self.gpu_models, self.node_models, self.site_names = {}, {}, {}, {}
        self.gpus = {}  # node id → [GPU]
        self.slots = {}
        self.xid_nodes = set()  # nodes whose gauge is reported (the others' XID fields stay empty: cheaper)

    # --- inventory -------------------------------------------------------------------------------------------

    def site(self, name="Zurich"):
        if name not in self.sites:
            self.sites[name] = make_site(name=name)
            self.site_names[self.sites[name].pk] = name
        return self.sites[name]

    def gpu_model(self, name):
        if name not in self.gpu_models:
            # named apart from the catalogue's models (a migration seeds some)
            self.gpu_models[name] = make_gpu_model(name=f"expert {name}", memory_gb=GPU_MEMORY.get(name, 80))
        return self.gpu_models[name]

    def partition(self, name, nodes=4, gpus=8, gpu="H100", site="Zurich", prefix=None, state=S.IN_SERVICE,
                  warranty_end=None, price=Decimal("300000"), first=1):
        """``nodes`` nodes of ``gpus`` GPUs of model ``gpu`` in Slurm partition ``name``, named ``prefix-NNN``."""
        if (gpus, gpu) not in self.node_models:
            self.node_models[(gpus, gpu)] = make_node_model(name=f"expert {gpus}× {gpu} node", gpu_slots=gpus,
                                                            list_price=price)
        node_model = self.node_models[(gpus, gpu)]
        prefix = prefix or name
        made = Node.objects.bulk_create(
            build_node(self.site(site), node_model, hostname=f"{prefix}-{i:03d}", partition=name, state=state,
                       warranty_end=warranty_end) for i in range(first, first + nodes))
        model = self.gpu_model(gpu)
        # UUIDs from the names: the DCGM series the pull matches them by
        made_gpus = GPU.objects.bulk_create(build_gpu(model, node=n, slot=s, state=S.IN_SERVICE,
                                                      uuid=f"GPU-{n.hostname}-{s}")
                                            for n in made for s in range(gpus))
        for n in made:
            self.gpus[n.pk] = [g for g in made_gpus if g.node_id == n.pk]
            self.slots[n.pk] = gpus
        return made

    def fabric(self, nodes, oversubscription=1.0, gbps_per_gpu=400, name="ib"):
        """The nodes on an InfiniBand leaf switch of that downlink:uplink ratio, ``gbps_per_gpu`` per GPU slot."""
        fabric = make_fabric(name=f"{name}-{nodes[0].hostname}")
        switch = make_switch(fabric=fabric, site=nodes[0].site, oversubscription_ratio=Decimal(str(oversubscription)))
        for n in nodes:
            make_attachment(node=n, fabric=fabric, switch=switch, ports=self.slots[n.pk], speed_gbps=gbps_per_gpu)

    def move(self, obj, to_state, days_ago, from_state=S.IN_SERVICE):
        """A lifecycle record of ``obj`` (node or GPU) moving to ``to_state`` ``days_ago`` days before the end (direct
        ORM: people and support write these, not the pull); the object takes the state when it is the latest."""
        StateTransition.objects.create(
            content_type=ContentType.objects.get_for_model(obj), object_id=obj.pk, from_state=from_state,
            to_state=to_state, username="ops", reason="expert case", created=self.end - timedelta(days=days_ago))

    def set_state(self, nodes, state, days_ago):
        """Nodes in ``state`` since ``days_ago`` days (their GPUs keep theirs, as a node's move does)."""
        for n in nodes:
            StateTransition.objects.filter(content_type=ContentType.objects.get_for_model(n), object_id=n.pk).delete()
            self.move(n, state, days_ago, from_state=S.DELIVERED if state == S.BURN_IN else S.IN_SERVICE)
        Node.objects.filter(pk__in=[n.pk for n in nodes]).update(state=state)

    # --- telemetry -----------------------------------------------------------------------------------------

    def load(self, nodes, util, hours=(0, WINDOW), peak=None, mem=None, noise=2.0):
        """The nodes' GPUs at ``util`` % (± noise) over ``hours`` (from, to): the base no job overrides. ``peak``:
        the hour's max (default util + 5, bursty loads give 95); ``mem``: frame buffer share (default: none used
        below 5 %, else 0.5)."""
        for n in nodes:
            for h in range(*hours):
                self.cells[(n.pk, h)] = self.cell(util, peak, mem, noise)

    def cell(self, util, peak=None, mem=None, noise=2.0):
        if not util and not peak:  # no process: nothing ran, nothing held in the frame buffer
            return Cell(0.0, 0.0, mem or 0.0)
        u = min(100.0, max(0.0, util + self.rng.uniform(-noise, noise)))
        top = min(100.0, max(u, (peak if peak is not None else util + 5) + self.rng.uniform(-2, 2)))
        m = mem if mem is not None else (0.0 if util < 5 else 0.5)
        return Cell(u, top, min(1.0, max(0.0, m + self.rng.uniform(-0.01, 0.01)) if m else 0.0))

    def xid(self, node, hours, code=79):
        """A hardware XID on the node's first GPU in each of ``hours`` (the DCGM gauge set, then cleared)."""
        self.xid_nodes.add(node.pk)
        for h in hours:
            self.cells[(node.pk, h)].xid = code

    # --- Slurm ---------------------------------------------------------------------------------------------

    def job(self, nodes, start, hours, util=90.0, peak=None, mem=0.5, wait=0.2, state="COMPLETED", account="team",
            gpus=None, noise=2.0):
        """A job on ``nodes`` from hour ``start`` for ``hours``, submitted ``wait`` h before (± 10 %); its node-hours
        run at ``util``. Ends after the window: RUNNING; starts after it: PENDING. Returns its end hour."""
        wait = max(0.0, wait * self.rng.uniform(0.9, 1.1))
        for n in nodes:
            for h in range(int(start), min(int(start + hours + 0.999), WINDOW)):
                self.cells[(n.pk, h)] = self.cell(util, peak, mem, noise)
        gpus = sum(self.slots[n.pk] for n in nodes) if gpus is None else gpus
        self.jobs.append(self.sacct(nodes, start - wait, start, start + hours, state, account, gpus))
        return start + hours

    def fill(self, nodes, hours=12, util=90.0, wait=0.2, account="team", span=(0, WINDOW), **kw):
        """Back-to-back single-node jobs of ``hours`` on each node over ``span`` (whole nodes)."""
        for n in nodes:
            t = span[0]
            while t < span[1]:
                t = self.job([n], t, min(hours, span[1] - t), util=util, wait=wait, account=account, **kw)

    def at(self, hour):
        return self.start + timedelta(hours=hour)

    def sacct(self, nodes, submit, start, end, state, account, gpus):
        """One job as ``sacct --json`` (data_parser v0.0.40) prints it, seen at the end of the window."""
        started, ended = start < WINDOW, end <= WINDOW
        state = state if ended else "RUNNING" if started else "PENDING"

        def ts(hour):
            return {"set": hour is not None, "infinite": False, "number": int(self.at(hour).timestamp()) if
                    hour is not None else 0}

        tres = [{"type": "node", "name": "", "id": 4, "count": len(nodes)},
                {"type": "gres", "name": "gpu", "id": 1001, "count": gpus}]
        return {
            "job_id": 1000 + len(self.jobs), "account": account, "user": f"{account}-user",
            "partition": nodes[0].partition, "cluster": "expert", "name": f"{account}-job",
            "allocation_nodes": len(nodes) if started else 0,
            "nodes": ",".join(n.hostname for n in nodes) if started else "None assigned",
            "state": {"current": [state], "reason": "None"},
            "time": {"submission": ts(submit), "start": ts(start if started else None),
                     "end": ts(end if ended else None),
                     "elapsed": int((min(end, WINDOW) - start) * 3600) if started else 0},
            "tres": {"allocated": tres if started else [], "requested": tres},
        }

    # --- the real chain ------------------------------------------------------------------------------------

    def hour_records(self):
        records = []
        for (node_id, h), c in sorted(self.cells.items()):
            for gpu in self.gpus[node_id]:
                # A GPU that ran nothing reads 0 on every GPU (no process: DCGM's utilization is exact there).
                u = min(100.0, max(0.0, c.util + self.rng.uniform(-1, 1))) if c.util else 0.0
                xid = c.xid if gpu.slot == 0 else 0
                gauge = {"xid_last": 0, "xid_max": xid, "xid_min": 0, "xid_changes": 2 if xid else 0} \
                    if node_id in self.xid_nodes else {}
                records.append(HourRecord(
                    series=SeriesKey(uuid=gpu.uuid), hour=self.at(h), util_mean=u, util_max=max(u, c.peak),
                    mem_used_mean_gb=round(c.mem * GPU_MEMORY.get(self.model_of(gpu), 80), 2), samples=60,
                    **gauge))
        return records

    def model_of(self, gpu):
        return next(name for name, m in self.gpu_models.items() if m.pk == gpu.gpu_model_id)

    def write(self):
        """Telemetry and jobs through the pull, then the interruptions recorded as the goodput task does."""
        exporter = TelemetrySource.objects.create(name="dcgm", kind="prometheus", url="http://prom:9090")
        store(exporter, Collected(hours=self.hour_records()), self.end)
        if self.jobs:
            jobs_source = TelemetrySource.objects.create(name="slurm", kind="slurm", url="http://slurm/jobs")
            document = {"jobs": self.jobs, "errors": [], "warnings": []}
            store(jobs_source, Collected(jobs=slurm.parse_jobs(document)), self.end)
        recording.record_interruptions(self.end - timedelta(days=8), self.end, self.end)

    def findings(self):
        """Run the analysis as the daily task does and read back the open recommendations: {(kind, scope): row},
        the scope being the key after the kind, with a site's id replaced by its name."""
        rec_store.run(self.end)
        found = {}
        for rec in Recommendation.objects.filter(status=Recommendation.Status.OPEN):
            scope = rec.key.split(":", 1)[1]
            for pk, name in self.site_names.items():
                scope = scope.replace(f"site={pk}", f"site={name}")
            found[(rec.kind, scope)] = rec
        return found


@dataclass
class Case:
    """One expert case, its answer written down before any rule runs.

    ``expect``: the findings, exactly, as (kind, scope) — scope as in the key, a site by its name
    (``partition=train``, ``idle:partition=spare``, ``site=Zurich``, ``team=vision``). ``figures``: per expected
    finding what must hold of it: ``node_count`` (exact), ``ruled_out`` (kinds its differential must contain),
    ``measured`` ({key: value or (low, high)}) and ``figure`` ({label: (low, high)}). ``allow``: findings that may
    appear only on a condition (a predicate of the row), for answers the expert leaves open. ``settings``: overrides.
    ``built``: whether the behaviour is built, in words, for the closing table."""

    name: str
    build: object
    expect: set
    figures: dict = field(default_factory=dict)
    allow: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    built: str = "built"

    def __str__(self):
        return self.name


def describe(found):
    return sorted(f"{kind} {scope} (nodes {rec.node_count}): {rec.title}" for (kind, scope), rec in found.items())


def in_range(value, want):
    if isinstance(want, tuple):
        return value is not None and want[0] <= value <= want[1]
    return value == want


def verify(case, seed, settings):
    """Build the case's fleet with ``seed`` (under the case's settings, on pytest-django's ``settings``), run the
    whole chain and compare what was written with the answer."""
    for name, value in case.settings.items():
        setattr(settings, name, value)
    fleet = ExpertFleet(seed)
    case.build(fleet)
    fleet.write()
    found = fleet.findings()
    missing = case.expect - found.keys()
    extra = {key for key, rec in found.items()
             if key not in case.expect and not (key in case.allow and case.allow[key](rec))}
    assert not missing and not extra, (f"{case.name} (seed {seed}): missing {sorted(missing)}, unexpected "
                                       f"{sorted(extra)}; found {describe(found)}")
    for key, rec in found.items():  # every finding says what else it checked, and why it was ruled out
        entries = rec.evidence.get("ruled_out", [])
        assert entries and all(e["label"] and e["why"] for e in entries), f"{key}: no differential"
    for key, want in case.figures.items():
        rec = found[key]
        if "node_count" in want:
            assert rec.node_count == want["node_count"], f"{key}: node_count {rec.node_count}; {rec.action}"
        kinds = {entry["kind"] for entry in rec.evidence.get("ruled_out", [])}
        assert set(want.get("ruled_out", ())) <= kinds, f"{key}: ruled_out has {sorted(kinds)}"
        measured = rec.evidence.get("measured", {})
        for name, value in want.get("measured", {}).items():
            assert in_range(measured.get(name), value), f"{key}: measured {name} = {measured.get(name)}, not {value}"
        figures = {f["label"]: f["value"] for f in rec.evidence.get("figures", [])}
        for label, value in want.get("figure", {}).items():
            assert in_range(figures.get(label), value), f"{key}: {label} = {figures.get(label)}, not {value}"
    return found


__all__ = ["END", "WINDOW", "Case", "Cell", "ExpertFleet", "describe", "verify"]
