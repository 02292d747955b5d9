"""``manage.py seed_demo``: the demo fleet is realistic, valid, and seeding twice changes nothing."""

import re
from datetime import timedelta
from io import StringIO

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth import authenticate
from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db.models import Avg, Count, Max
from django.urls import reverse
from django.utils import timezone

from inventory.models import (
    GPU,
    Fabric,
    FabricAttachment,
    GPUDaily,
    GPUHourly,
    LifecycleState,
    Node,
    NodeHourly,
    Rack,
    Site,
    SlurmJob,
    StateTransition,
    StorageSystem,
    Switch,
    TelemetrySource,
)
from portal.roles import ADMIN, MANAGER, VIEWER

S = LifecycleState
PAST_PLAN = "Teams' recent pre-training runs"
UUID = re.compile(r"^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def seed():
    out = StringIO()
    call_command("seed_demo", stdout=out)
    return out.getvalue()


@pytest.fixture
def seeded():
    return seed()


# Time series the clock adds to: a second run backfills the hours (and Slurm jobs) since the first one.
TIME_SERIES = {"inventory.GPUHourly", "inventory.NodeHourly", "inventory.GPUDaily", "inventory.NodeDaily",
               "inventory.UsageDaily", "inventory.SlurmJob"}


def counts():
    return {model._meta.label: model._default_manager.count() for model in apps.get_models()
            if model._meta.label not in TIME_SERIES}


def test_fleet(seeded):
    assert set(Site.objects.values_list("name", flat=True)) == {"Zurich DC1", "Lyon DC2"}
    assert Node.objects.count() == 42  # 40 in racks + 2 delivered for the expansion, not racked yet
    assert set(Node.objects.annotate(n=Count("gpus")).values_list("n", flat=True)) == {8}
    assert GPU.objects.count() == 336
    assert set(Node.objects.filter(delivery_item=None).values_list("partition", flat=True)) == {
        "train-h100", "train-h200", "a100-legacy", "inference"}
    assert {"llm-pretrain", "vision", "speech", "platform"} == set(
        Node.objects.filter(delivery_item=None).values_list("owner_team", flat=True))
    mix = dict(Node.objects.values_list("node_model__name").annotate(n=Count("pk")).order_by())
    assert mix == {"DGX H100": 16, "DGX H200": 10, "DGX A100 640GB": 8, "SYS-821GE-TNHR (HGX H100 8-GPU)": 8}
    assert not GPU.objects.exclude(gpu_model__name__in=["H100 SXM 80GB", "H200 SXM 141GB", "A100 80GB SXM"]).exists()
    # every GPU's model matches its node (no H200 in a DGX H100)
    assert not GPU.objects.filter(node__node_model__name="DGX H200").exclude(gpu_model__name="H200 SXM 141GB").exists()
    created = seeded.split("Created: ")[1].split("\n")[0]
    assert "2 sites" in created and "5 teams" in created  # support's own team too


def test_everything_is_valid_and_placed(seeded):
    # clean() rules (placement, slots, sites); the unique constraints are the database's own
    for model in (Site, Rack, Node, GPU, Fabric, Switch, FabricAttachment, StorageSystem):
        for obj in model.objects.all():
            obj.full_clean(validate_constraints=False)
    racked = Node.objects.filter(delivery_item=None)  # the expansion's delivered nodes wait for a rack
    assert set(Node.objects.filter(rack=None).values_list("hostname", flat=True)) == {"zrh-h200-009", "zrh-h200-010"}
    assert not racked.filter(position=None).exists()
    assert Node.objects.exclude(serial="").count() == 42
    assert racked.exclude(asset_tag="").count() == 40
    assert not racked.filter(warranty_end=None).exists()
    assert 0 < sum(node.warranty_expired for node in Node.objects.all()) < 10
    uuids = list(GPU.objects.values_list("uuid", flat=True))
    assert all(UUID.match(u) for u in uuids)
    assert len(set(uuids)) == 336
    assert GPU.objects.exclude(serial="").count() == 336
    assert len(set(GPU.objects.values_list("serial", flat=True))) == 336
    assert len(set(Node.objects.values_list("serial", flat=True))) == 42
    assert set(GPU.objects.values_list("slot", flat=True)) == set(range(8))
    for rack in Rack.objects.annotate(n=Count("nodes")).filter(n__gt=0).prefetch_related("nodes__node_model"):
        assert sum(n.node_model.max_power_w for n in rack.nodes.all()) <= rack.power_budget_kw * 1000


def test_network_and_storage(seeded):
    for site in Site.objects.all():
        kinds = dict(site.fabrics.values_list("kind", "link_speed_gbps"))
        assert kinds[Fabric.Kind.INFINIBAND] == 400
        assert kinds[Fabric.Kind.ETHERNET] in (100, 200)
        assert site.switches.filter(name__contains="leaf").exists()
        assert site.switches.filter(name__contains="spine").exists()
        tiers = set(site.storage_systems.values_list("kind", "tier"))
        assert {("parallel_fs", "hot"), ("object", "archive")} <= tiers
    racked = Node.objects.filter(delivery_item=None)  # the expansion's delivered nodes are not cabled yet
    for node in racked.prefetch_related("fabric_attachments__fabric", "fabric_attachments__switch"):
        by_kind = {a.fabric.kind: a for a in node.fabric_attachments.all()}
        assert set(by_kind) == {Fabric.Kind.INFINIBAND, Fabric.Kind.ETHERNET}
        ib = by_kind[Fabric.Kind.INFINIBAND]
        assert (ib.ports, ib.speed_gbps, ib.fabric.site_id) == (8, 400, node.site_id)
        assert ib.switch.fabric_id == ib.fabric_id
        assert 1 <= by_kind[Fabric.Kind.ETHERNET].ports <= 2
    leaf = Switch.objects.get(name="zrh-ib-leaf-05")
    assert (leaf.ports, leaf.uplinks, leaf.oversubscription_ratio) == (64, 32, 1)
    assert leaf.attachments.count() == 4  # 4 nodes x 8 ports = the 32 downlinks
    # The H100 pod's leaves have half the uplinks: 2:1, what makes train-h100 network-bound.
    pod = Switch.objects.get(name="zrh-ib-leaf-01")
    assert (pod.uplinks, pod.oversubscription_ratio) == (16, 2)
    assert set(pod.attachments.values_list("node__partition", flat=True)) == {"train-h100"}


def test_the_demo_recommends_an_interconnect_upgrade_for_the_h100_pod(seeded):
    from planning.models import Recommendation

    rec = Recommendation.objects.get(key="network_bound:partition=train-h100", status="open")
    labels = rec.evidence["chart"]["data"]["labels"]
    utils = rec.evidence["chart"]["data"]["series"][0]["values"]
    assert labels == ["1 node", "2 nodes", "3–4 nodes"] and utils == sorted(utils, reverse=True)
    assert "zrh-ib-leaf-01 (2.00:1)" in rec.action and "lys-ib-leaf" not in rec.action
    assert not Recommendation.objects.filter(kind="network_bound").exclude(pk=rec.pk).exists()


def test_lifecycle_events_recorded(seeded):
    states = dict(Node.objects.values_list("state").annotate(n=Count("pk")).order_by())
    assert states[S.DEGRADED] >= 1 and states[S.IN_REPAIR] >= 1
    assert states[S.IN_SERVICE] >= 30
    assert GPU.objects.filter(state=S.DEGRADED).exists()
    node_type = ContentType.objects.get_for_model(Node)

    broken = Node.objects.filter(state__in=[S.DEGRADED, S.IN_REPAIR])
    for node in broken:
        reasons = StateTransition.objects.filter(content_type=node_type, object_id=node.pk, to_state=node.state)
        assert reasons.exclude(reason="").exists()
        assert reasons.first().username == "manager"
    xid = StateTransition.objects.get(to_state=S.DEGRADED, reason__startswith="XID 79", content_type=node_type)
    assert Node.objects.get(pk=xid.object_id).state == S.DEGRADED
    # every node and GPU has a starting record, then only allowed moves
    assert StateTransition.objects.filter(from_state="").count() == 378  # 360 + the expansion's 2 nodes, 16 GPUs
    repaired = Node.objects.get(hostname="lys-a100-008")
    assert [t.to_state for t in repaired.transitions.order_by("created", "pk")] == [
        S.IN_SERVICE, S.DEGRADED, S.IN_REPAIR, S.IN_SERVICE
    ]
    assert repaired.history.count() == 4  # created + three moves


def test_expansion_order_partly_delivered(seeded):
    from planning.models import Delivery, PurchaseOrder
    from planning.procurement.orders import lines_with_counts

    order = PurchaseOrder.objects.get(reference="NV-SO-2026-0311")
    assert order.contract.reference == "NV-EXP-2026-0007" and order.site.name == "Zurich DC1"
    assert order.status == PurchaseOrder.Status.PARTIAL
    lines = {(line.node_model or line.gpu_model).name: (line.delivered_count, line.quantity)
             for line in lines_with_counts().filter(order=order)}
    assert lines == {"DGX H200": (2, 4), "H200 SXM 141GB": (16, 32)}
    delivery = Delivery.objects.get(order=order)
    nodes = Node.objects.filter(delivery_item__delivery=delivery)
    assert set(nodes.values_list("hostname", "state")) == {("zrh-h200-009", S.DELIVERED), ("zrh-h200-010", S.DELIVERED)}
    gpus = GPU.objects.filter(delivery_item__delivery=delivery)
    assert gpus.count() == 16 and set(gpus.values_list("state", flat=True)) == {S.DELIVERED}
    assert {(g.node.hostname, g.slot) for g in gpus.select_related("node")} == {
        (h, slot) for h in ("zrh-h200-009", "zrh-h200-010") for slot in range(8)}
    node_type = ContentType.objects.get_for_model(Node)
    assert StateTransition.objects.filter(content_type=node_type, object_id__in=nodes.values("pk"),
                                          to_state=S.DELIVERED).count() == 2
    assert "1 purchase orders" in seeded and "1 deliveries" in seeded


def test_accounts(seeded):
    for username, password, role in (("admin", "demo-admin", ADMIN), ("manager", "demo-manager", MANAGER),
                                      ("viewer", "demo-viewer", VIEWER)):
        user = authenticate(username=username, password=password)
        assert user is not None, username
        assert list(user.groups.values_list("name", flat=True)) == [role]
    admin_user = User.objects.get(username="admin")
    assert admin_user.is_superuser and admin_user.is_staff
    assert not User.objects.get(username="manager").is_staff
    assert User.objects.get(username="manager").has_perm("inventory.change_node")
    assert not User.objects.get(username="viewer").has_perm("inventory.change_node")
    assert User.objects.get(username="viewer").has_perm("inventory.view_node")


def test_output_shows_progress_and_every_demo_login(seeded):
    """A line per step with its time, then every account the seed made with its password and role."""
    steps = re.findall(r"^Seeding (.+) … (\d+\.\d) s$", seeded, re.M)
    assert [what.split(":")[0] for what, _seconds in steps] == [
        "the fleet", "telemetry sources", "Slurm job history", "telemetry", "daily history", "planning", "support",
        "planning", "statements", "allocations"]
    assert "daily history: 25 months × 320 GPUs" in seeded
    logins = re.findall(r"^  (\S+) +(\S+) +(\S+)$", seeded.split("Demo logins (5, user / password / role):\n")[1], re.M)
    assert {username for username, _password, _role in logins} == set(User.objects.values_list("username", flat=True))
    for username, password, role in logins:
        user = authenticate(username=username, password=password)
        assert user is not None and list(user.groups.values_list("name", flat=True)) == [role], username


def test_simulator_port(db):
    call_command("seed_demo", "--simulator-port", "9411", verbosity=0)
    assert set(TelemetrySource.objects.values_list("url", flat=True)) == {
        "http://127.0.0.1:9411/metrics", "http://127.0.0.1:9411/slurmdb/v0.0.40/jobs"}


def test_second_run_changes_nothing(seeded):
    before = counts()
    from planning.models import CapacityPlan

    stamps = {m: dict(m.objects.values_list("pk", "updated"))
              for m in (Site, Rack, Node, GPU, Switch, StorageSystem, CapacityPlan)}
    passwords = dict(User.objects.values_list("username", "password"))
    assert before["inventory.HistoricalNode"] > 0 and before["inventory.StateTransition"] > 0

    out = seed()

    assert counts() == before
    assert {m: dict(m.objects.values_list("pk", "updated")) for m in stamps} == stamps
    assert dict(User.objects.values_list("username", "password")) == passwords
    assert "Created: nothing." in out and "Updated: nothing." in out


def test_rerun_repairs_drift_but_keeps_lifecycle(seeded):
    manager = User.objects.get(username="manager")
    manager.set_password("forgotten")
    manager.groups.clear()
    manager.save()
    site = Site.objects.get(name="Zurich DC1")
    site.power_capacity_kw = 1
    site.save()
    node = Node.objects.get(hostname="zrh-h100-007")
    assert node.state == S.DEGRADED
    node.state = S.IN_SERVICE  # as if repaired in the portal
    node.save()
    GPU.objects.filter(node__hostname="zrh-h100-001").first().delete()
    transitions = StateTransition.objects.count()

    out = seed()

    assert authenticate(username="manager", password="demo-manager") == manager
    assert manager.groups.filter(name=MANAGER).exists()
    site.refresh_from_db()
    assert site.power_capacity_kw == 600
    assert site.history.first().history_type == "~"
    assert Node.objects.get(hostname="zrh-h100-007").state == S.IN_SERVICE  # a repair is not undone
    assert GPU.objects.count() == 336
    assert StateTransition.objects.count() == transitions + 1  # the new GPU's starting state
    assert "Updated: 1 sites." in out and "Created: 1 GPUs." in out


def test_admin_pages_for_seeded_data(seeded, client, django_assert_max_num_queries):
    client.force_login(User.objects.get(username="admin"))
    for model in admin.site._registry:
        if model._meta.app_label not in ("inventory", "portal"):
            continue
        opts = model._meta
        with django_assert_max_num_queries(15):
            response = client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))
        assert response.status_code == 200, opts.label
        obj = model.objects.first()
        if obj is not None:
            response = client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk]))
            assert response.status_code == 200, opts.label
            response = client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_history", args=[obj.pk]))
            assert response.status_code == 200, opts.label
    node = Node.objects.get(hostname="zrh-h100-001")
    response = client.post(reverse("admin:inventory_node_changelist"), {
        "action": "move_to_degraded", "_selected_action": [node.pk],
    })
    assert response.status_code == 302
    node.refresh_from_db()
    assert node.state == S.DEGRADED
    assert node.transitions.first().username == "admin"
    assert node.transitions.first().created <= timezone.now()


def test_admin_issues_token_once(seeded, client):
    from portal.models import APIToken, hash_token

    admin_user = User.objects.get(username="admin")
    client.force_login(admin_user)
    response = client.post(reverse("admin:portal_apitoken_add"), {"user": admin_user.pk, "name": "procurement sync"},
                           follow=True)
    assert response.status_code == 200
    token = APIToken.objects.get(name="procurement sync")
    (message,) = [str(m) for m in response.context["messages"] if "copy it now" in str(m)]
    key = re.search(r": ([0-9a-f]{40}) ", message).group(1)
    assert token.key_hash == hash_token(key) and token.prefix == key[:8]


def test_telemetry_backfilled_from_the_simulator(seeded):
    exporter = TelemetrySource.objects.get(kind=TelemetrySource.Kind.EXPORTER)
    jobs = TelemetrySource.objects.get(kind=TelemetrySource.Kind.SLURM)
    assert exporter.url == "http://127.0.0.1:9400/metrics" and exporter.interval_seconds == 60
    assert jobs.url == "http://127.0.0.1:9400/slurmdb/v0.0.40/jobs" and jobs.interval_seconds == 300
    now = timezone.now()
    assert now - exporter.synced_until < timedelta(minutes=5) and jobs.synced_until is not None
    # 7 full days for every GPU that reports: not the nodes in repair; a GPU in repair (zrh-h100-007's GPU 3) until
    # it was moved there yesterday (issue 37)
    reporting = GPU.objects.filter(node__state__in=[S.IN_SERVICE, S.DEGRADED, S.BURN_IN])
    hours = dict(GPUHourly.objects.values_list("gpu").annotate(n=Count("pk")).order_by())
    assert set(hours) == set(reporting.values_list("pk", flat=True))
    in_repair = set(reporting.filter(state=S.IN_REPAIR).values_list("pk", flat=True))
    assert {n for gpu, n in hours.items() if gpu not in in_repair} == {168}
    assert in_repair and all(144 < hours[gpu] < 168 for gpu in in_repair)
    seeded_at = exporter.synced_until.replace(minute=0, second=0, microsecond=0)
    assert GPUHourly.objects.aggregate(last=Max("hour"))["last"] == seeded_at - timedelta(hours=1)  # complete hours
    assert NodeHourly.objects.values("hour").distinct().count() == 168 and GPUDaily.objects.exists()
    util = dict(NodeHourly.objects.filter(node__state=S.IN_SERVICE).values_list("node__partition")
                .annotate(u=Avg("util_mean")).order_by())
    assert util["train-h200"] > 85 and util["a100-legacy"] < 45  # saturated, storage-starved
    assert SlurmJob.objects.filter(source=jobs).count() > 300
    assert "GPU hours and" in seeded and "Slurm jobs backfilled" in seeded


def test_demo_dashboard_shows_the_rental_renewal_alert(db):
    """The demo rental ends within 60 days; its notice deadline is alerted at once, not after a day."""
    from django.core.management import call_command

    from planning.models import Contract, RenewalAlert

    call_command("seed_demo", verbosity=0)
    rental = Contract.objects.get(kind=Contract.Kind.RENTAL)
    assert RenewalAlert.objects.filter(contract=rental, notice_deadline=rental.notice_deadline).count() == 1


def test_sites_have_their_running_costs(seeded):
    zurich, lyon = Site.objects.get(name="Zurich DC1"), Site.objects.get(name="Lyon DC2")
    assert 1.1 < zurich.effective_pue < lyon.effective_pue < 1.6
    assert 0.1 < lyon.effective_energy_price < zurich.effective_energy_price < 0.4
    assert 1000 < lyon.effective_rack_cost < zurich.effective_rack_cost < 5000


def test_capacity_plans(seeded, client):
    from planning.models import CapacityPlan, PlanItem, PlanWorkload
    from planning.plans.forecast import months_between
    from planning.plans.views import workflow_actions, workload_rows

    plans = CapacityPlan.objects.select_related("site", "node_model").exclude(name=PAST_PLAN)  # its own test below
    by_status = {plan.status: plan for plan in plans}
    assert set(by_status) == {"draft", "submitted", "approved"} and len(plans) == 3 and "4 capacity plans" in seeded
    for obj in [*PlanWorkload.objects.all(), *PlanItem.objects.all()]:
        obj.full_clean()  # the models' own rules: sizing inputs, horizon, one of node / GPU model / description

    draft = by_status["draft"]
    assert draft.name == "2027 H200 expansion"
    assert (draft.site.name, draft.node_model.name) == ("Zurich DC1", "DGX H200")
    rows = workload_rows(draft)
    assert len(rows) == 3 and all(row.sizing for row in rows), [row.problem for row in rows]
    sized = {row.workload.name: row.sizing for row in rows}
    assert sized["Dense 70B pre-training"]["fit_class"] == "multi_node"
    assert sized["8x22B MoE pre-training"].workload.active_params_billion == 39
    assert 30 < sized["Dense 70B pre-training"]["wall_clock_days"] < 60  # within its deadline on 512 GPUs
    # Calendar months: the plan's 2nd, 3rd and 8th, in that order (workloads are listed by start).
    assert [(row.workload.name, months_between(draft.first_month, row.workload.start)) for row in rows] == [
        ("8B instruction tuning and evals", 1), ("Dense 70B pre-training", 2), ("8x22B MoE pre-training", 7)]

    manager, admin_user = User.objects.get(username="manager"), User.objects.get(username="admin")
    submitted = by_status["submitted"]
    assert submitted.submitted_by == admin_user and submitted.items.exists()
    assert [a for a, *_ in workflow_actions(submitted, manager)] == ["approve", "reject"]  # the demo manager decides
    assert list(submitted.events.values_list("username", "from_status", "to_status")) == [
        ("admin", "draft", "submitted")]

    approved = by_status["approved"]
    assert (approved.submitted_by, approved.decided_by) == (manager, admin_user)
    assert list(approved.events.values_list("username", "from_status", "to_status")) == [
        ("manager", "draft", "submitted"), ("admin", "submitted", "approved")]
    # Its bill is its answer's (the hybrid's owned nodes, their GPUs, leaf switches and storage) and the Lustre
    # appliance no scenario prices.
    lines = list(approved.items.values_list("node_model__name", "description"))
    what = {name or description[:11] for name, description in lines}
    assert what >= {"DGX H200", "Leaf switch", "Storage for"} and any("Lustre" in d for _, d in lines), what
    nodes = approved.items.get(node_model__name="DGX H200").quantity
    assert nodes == approved.summary["nodes"] > 0 and approved.summary["recommended"] == "hybrid"

    # The plan list's answers are there at once: every plan analysed by the seed, the draft's need recommended.
    assert all(plan.summary_at for plan in by_status.values())
    assert draft.summary["recommended"] and draft.summary["gpus_added"] > 0, draft.summary

    client.force_login(manager)  # the pages: the draft's edit buttons, the manager's approve button
    page = client.get(draft.get_absolute_url()).content.decode()
    assert "8x22B MoE pre-training" in page and "Add workload" in page and "multi node" in page
    page = client.get(submitted.get_absolute_url()).content.decode()
    assert f"/planning/capacity-plans/{submitted.pk}/approve/" in page and "Add workload" not in page
    page = client.get(approved.get_absolute_url()).content.decode()
    assert "Lustre" in page and "Approved within the 2026 budget." in page


def test_the_approved_plan_becomes_an_order(seeded):
    from planning.models import CapacityPlan
    from tests.helpers.accounts import token_client

    plan = CapacityPlan.objects.get(name="Zurich DC1 H200 pod 2")
    client = token_client(User.objects.get(username="admin"))
    bom = client.get(f"/api/planning/plans/{plan.pk}/bom/")
    assert bom.status_code == 200, bom.data
    lines = [{"node_model": line["node_model"], "gpu_model": line["gpu_model"], "description": line["description"],
              "quantity": line["quantity"], "unit_price": line["unit_cost"]} for line in bom.data["lines"]]
    response = client.post("/api/planning/purchase-orders/", {
        "plan": plan.pk, "vendor": "NVIDIA", "reference": "NV-PO-2026-0420", "site": plan.site_id, "currency": "USD",
        "lines": lines}, format="json")
    assert response.status_code == 201, response.data
    assert len(response.data["lines"]) == len(lines) == 5 and response.data["plan"] == plan.pk


def test_a_plan_changed_in_the_portal_is_not_undone(seeded):
    from planning.models import CapacityPlan, PlanEvent
    from planning.plans import workflow as plans

    submitted = CapacityPlan.objects.get(status="submitted")
    plans.approve(submitted, User.objects.get(username="manager"), "ok")
    draft = CapacityPlan.objects.get(status="draft")
    draft.workloads.first().delete()
    events, workloads = PlanEvent.objects.count(), draft.workloads.count()

    out = seed()

    submitted.refresh_from_db()
    assert submitted.status == "approved" and PlanEvent.objects.count() == events
    assert draft.workloads.count() == workloads and "Created: nothing." in out


def test_the_demo_calibrates_teams_on_their_slurm_jobs(seeded, client):
    """The past plan's workloads ran under three teams' Slurm accounts in the months of job history: each team's
    ratio is its jobs' GPU-hours in the window over the model's estimate, by hand here, the same on the page, in the
    API and as the sizing page's factor; a second seed writes no job of that history again."""
    from datetime import datetime, time

    from inventory.telemetry.models import AllocationExcess
    from planning.calibration.calibration import calibrate, times
    from planning.models import CapacityPlan
    from planning.plans.forecast import add_months
    from planning.sizing import sizing
    from planning.sizing.views import display
    from tests.helpers.accounts import token_client

    plan = CapacityPlan.objects.get(name=PAST_PLAN)
    assert plan.status == "approved" and plan.first_month == add_months(timezone.localdate(), -2)
    assert not AllocationExcess.objects.exists()  # no node is overbooked: per-job sums are the per-node ones

    def aware(day):
        return timezone.make_aware(datetime.combine(day, time.min))

    by_hand = {}
    for workload in plan.workloads.select_related("gpu_model"):
        figures = sizing.size(workload.workload(), sizing.catalog_gpus())
        assert figures["wall_clock_days"] < 28  # its window: its start month
        start, end = aware(workload.start), aware(add_months(workload.start, 1))
        realized = 0.0
        for job in SlurmJob.objects.filter(account=workload.slurm_account, start_time__lt=end):
            overlap = (min(job.end_time or job.running_until, end) - max(job.start_time, start)).total_seconds()
            realized += job.gpus * max(overlap, 0) / 3600
        by_hand[workload.slurm_account] = (figures["gpu_hours"], realized)
    assert set(by_hand) == {"vision", "llm-pretrain", "speech"}

    calibration = calibrate()
    ratios = {}
    for team, (estimate, realized) in by_hand.items():
        found = calibration.team(team)
        assert len(found.counted) == 1 and found.estimate == pytest.approx(estimate)
        assert found.realized == pytest.approx(realized) and realized > 10_000
        ratios[team] = found.ratio
        assert found.ratio == pytest.approx(realized / estimate)
    # Plausible and the teams' own: not 1, not alike.
    assert all(0.8 < ratio < 2.5 and abs(ratio - 1) > 0.02 for ratio in ratios.values()), ratios
    assert len({round(ratio, 2) for ratio in ratios.values()}) == 3

    manager = User.objects.get(username="manager")
    api = token_client(manager).get("/api/planning/calibration/").json()
    assert {row["team"]: row["ratio"] for row in api} == pytest.approx(ratios)
    client.force_login(manager)
    html = client.get(reverse("planning:calibration")).content.decode()
    for row in api:
        cells = re.findall(r'<td class="num">([^<]*)</td>',
                           re.search(rf'<tr id="team-{row["team"]}">.*?</tr>', html, re.S).group(0))
        assert cells == ["1 of 1", display(row["estimate_gpu_hours"]), display(row["realized_gpu_hours"]),
                         times(row["ratio"])]
    options = re.search(r'<select name="team".*?</select>', client.get(reverse("planning:sizing")).content.decode(),
                        re.S).group(0)
    for team, ratio in ratios.items():
        assert f"{team}: {ratio:.2f}× from 1 finished" in options

    week = SlurmJob.objects.order_by("-submit_time").first().submit_time - timedelta(days=7)
    history = SlurmJob.objects.filter(start_time__lt=week - timedelta(days=1)).count()
    assert history > 2000
    seed()
    assert SlurmJob.objects.filter(start_time__lt=week - timedelta(days=1)).count() == history
    assert {team.team: team.ratio for team in calibrate().teams} == pytest.approx(ratios)


def test_the_demo_shows_interruptions_and_what_they_cost(seeded):
    """The simulator's jobs end by hardware faults (killed 1–5 minutes after an XID 79 on one of their GPUs,
    NODE_FAIL, requeued after an XID 79) and by their users (failed, out of memory, cancelled, time limit), and
    ``seed_demo`` records their interruptions (issue 20)."""
    from inventory.goodput import queries
    from inventory.goodput.models import Interruption

    reasons = dict(Interruption.objects.values_list("reason").annotate(n=Count("pk")).order_by())
    assert {"xid_79", "node_fail", "failed", "oom", "cancelled", "timeout"} <= set(reasons)
    assert Interruption.objects.filter(state="REQUEUED", cause="infrastructure").exists()
    for row in Interruption.objects.filter(reason="xid_79").select_related("xid_event", "job"):
        assert row.xid_event.code == 79 and row.gpu_id == row.xid_event.gpu_id
        assert timedelta(minutes=1) <= row.ended_at - row.fault_ts <= timedelta(minutes=5, seconds=1)
        assert row.lost_run_gpu_hours <= row.job.gpus * (row.ended_at - row.started_at).total_seconds() / 3600
    teams = queries.goodput_by("team", "30d")
    assert any(team["interruptions"] for team in teams)
    assert all(0 <= team["goodput_ratio"] <= 1 for team in teams if team["goodput_ratio"] is not None)
