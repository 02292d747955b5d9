"""The home page's health tiles and "awaiting your decision" (issue 37, item 1): each health figure matches the
hardware and telemetry made by hand and links to a GPU list of exactly the GPUs it counts; each decision line counts
what the rules let this user decide (the four-eyes rule on plans, the allocation request rule, Slurm syncs waiting,
recommendations new since the user's last look) and links to where it is decided; the page's queries stay constant."""

from datetime import date, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from inventory import capacity
from inventory.allocations import workflow as allocations
from inventory.allocations.models import AllocationRequest, SlurmSync
from inventory.allocations.policy import awaiting_decision
from inventory.models import GPU
from inventory.models import LifecycleState as L
from inventory.telemetry import remap
from inventory.telemetry.models import GPUHourly, HealthReading, XidEvent
from inventory.telemetry.rollups import floor_hour
from planning.models import CapacityPlan
from portal.roles import MANAGER, VIEWER
from tests.factories import CapacityPlanFactory, RecommendationFactory, make_gpu, make_node, make_team
from tests.helpers.accounts import make_user

pytestmark = pytest.mark.django_db
CHANGE = {"action": "set_limit", "cluster": "c", "account": "vision", "target": "account", "name": "vision",
          "field": "GrpTRES", "tres": "gres/gpu", "before": None, "after": 8, "details": {}, "overrides_drift": False}


def tiles(response):
    return {tile.key: tile for tile in response.context["tiles"]}


def listed(client, url):
    response = client.get(url)
    assert response.status_code == 200, url
    return sorted(row.serial for row in response.context["table"].data)


def xid(gpu, hours_ago, code, kind="hardware"):
    ts = timezone.now() - timedelta(hours=hours_ago)
    XidEvent.objects.create(gpu=gpu, ts=ts, hour=floor_hour(ts), code=code, kind=kind)


def ecc(gpu, hours_ago, sbe=0, dbe=0):
    GPUHourly.objects.create(gpu=gpu, hour=floor_hour(timezone.now()) - timedelta(hours=hours_ago), util_mean=50,
                             ecc_sbe_errors=sbe, ecc_dbe_errors=dbe)


@pytest.fixture
def faults(db):
    """A degraded node's GPU (a, itself in service) and a GPU in repair (b) are out of service, a retired GPU in the
    degraded node (c) and one in service (d) are not. a: XID 79 2 h ago and XID 48 (ECC) 3 h ago, a double-bit ECC
    error 5 h ago; b: 3 single-bit errors 2 h ago and a pending row remap; d: an application XID 1 h ago, an XID 79
    and 5 single-bit errors 30 h ago (outside the 24 h), a failed row remap."""
    degraded = make_node(hostname="n-degraded", state=L.DEGRADED)
    serving = make_node(hostname="n-serving", state=L.IN_SERVICE)
    gpus = {"a": make_gpu(node=degraded, serial="a", state=L.IN_SERVICE),
            "b": make_gpu(node=serving, serial="b", state=L.IN_REPAIR),
            "c": make_gpu(node=degraded, serial="c", state=L.RETIRED),
            "d": make_gpu(node=serving, serial="d", state=L.IN_SERVICE)}
    xid(gpus["a"], 2, 79)
    xid(gpus["a"], 3, 48)
    xid(gpus["d"], 1, 13, kind="application")
    xid(gpus["d"], 30, 79)
    ecc(gpus["a"], 5, dbe=1)
    ecc(gpus["b"], 2, sbe=3)
    ecc(gpus["d"], 30, sbe=5)
    now = timezone.now()
    HealthReading.objects.create(gpu=gpus["d"], kind=remap.FAILURE, value=1, ts=now)
    HealthReading.objects.create(gpu=gpus["b"], kind=remap.PENDING, value=1, ts=now)
    HealthReading.objects.create(gpu=gpus["a"], kind=remap.FAILURE, value=0, ts=now)  # read 0 again
    return gpus


def test_health_tiles_count_and_link_to_exactly_their_gpus(manager_client, faults):
    shown = tiles(manager_client.get("/"))
    out, xids, eccs, remaps = shown["gpus-out"], shown["xid-24h"], shown["ecc-24h"], shown["remap-failed"]
    assert (out.value, out.warn) == ("2", True)
    assert listed(manager_client, out.url) == ["a", "b"]
    assert (xids.value, xids.note) == ("2", "on 1 GPU, 1 of them ECC")
    assert listed(manager_client, xids.url) == ["a"]
    assert (eccs.value, eccs.note, eccs.warn) == ("4", "on 2 GPUs, 1 uncorrectable", True)
    assert listed(manager_client, eccs.url) == ["a", "b"]
    assert remaps.value == "1" and listed(manager_client, remaps.url) == ["d"]
    # The out-of-service figure is the capacity model's, as the GPU tile says it.
    assert "2 out of service (degraded or in repair)" in shown["gpus"].note


def test_health_tiles_say_zero_on_a_healthy_fleet(manager_client):
    make_gpu(node=make_node(state=L.IN_SERVICE), state=L.IN_SERVICE)
    shown = tiles(manager_client.get("/"))
    assert [(shown[key].value, shown[key].warn) for key in ("gpus-out", "xid-24h", "ecc-24h", "remap-failed")] == [
        ("0", False)] * 4


@pytest.mark.parametrize("state", list(capacity.STATES))
def test_the_capacity_filter_lists_what_the_capacity_model_counts(state):
    """Every combination of a GPU's and its node's states (and spares): the filter and the count agree."""
    for node_state in L.values:
        node = make_node(state=node_state)
        for gpu_state in L.values:
            make_gpu(node=node, state=gpu_state)
    for gpu_state in L.values:
        make_gpu(state=gpu_state)
    assert GPU.objects.filter(capacity.state_q(state)).count() == getattr(capacity.count(), state)


@pytest.fixture
def people(db):
    return {"max": make_user("max", MANAGER), "mia": make_user("mia", MANAGER), "vic": make_user("vic", VIEWER)}


def decisions(client, user):
    client.force_login(user)
    found = client.get("/").context["decisions"]
    return None if found is None else {line.key: line for line in found}


def test_plans_awaiting_a_second_manager(client, people):
    plan = CapacityPlanFactory(status=CapacityPlan.Status.SUBMITTED, submitted_by=people["max"])
    CapacityPlanFactory(status=CapacityPlan.Status.DRAFT)
    assert "plans" not in decisions(client, people["max"])  # four eyes: not the one who submitted it
    line = decisions(client, people["mia"])["plans"]
    assert (line.count, line.url, line.note) == (1, plan.get_absolute_url(), plan.name)
    CapacityPlanFactory(status=CapacityPlan.Status.SUBMITTED, submitted_by=people["max"])
    line = decisions(client, people["mia"])["plans"]
    assert line.count == 2 and len(client.get(line.url).context["table"].data) == 2
    assert decisions(client, people["vic"]) is None  # a viewer decides nothing: no tile
    assert 'id="awaiting-decision"' not in client.get("/").content.decode()


def test_allocation_requests_this_manager_may_decide(client, people, settings):
    settings.ALLOCATION_SECOND_APPROVAL_GPU_HOURS = 1000
    team = make_team("vision")
    big = AllocationRequest.objects.create(team=team, start=date(2027, 1, 1), end=date(2027, 1, 31), gpu_hours=5000,
                                           reason="x", requested_by=people["max"])
    AllocationRequest.objects.create(team=team, start=date(2027, 1, 1), end=date(2027, 1, 31), gpu_hours=10,
                                     reason="y", requested_by=people["mia"], kind=AllocationRequest.Kind.CHANGE)
    line = decisions(client, people["mia"])["allocation-requests"]
    assert (line.count, line.note) == (1, "1 new allocation")
    assert [r.pk for r in client.get(line.url).context["table"].data] == [big.pk]
    line = decisions(client, people["max"])["allocation-requests"]
    assert (line.count, line.note) == (1, "1 change")
    allocations.approve(big, people["mia"])  # the first of two approvals: still pending, no longer hers to decide
    assert "allocation-requests" not in decisions(client, people["mia"])
    for user in people.values():  # the line's query agrees with the rule, request by request
        mine = set(awaiting_decision(AllocationRequest.objects.all(), user))
        for request in AllocationRequest.objects.all():
            assert (request in mine) == user.has_perm("inventory.decide_allocation_request", request), (request, user)


def test_slurm_syncs_with_changes_to_apply(client, people):
    SlurmSync.objects.create(cluster="c", status=SlurmSync.Status.SUPERSEDED, changes=[CHANGE])
    look = SlurmSync.objects.create(cluster="c", changes=[CHANGE, CHANGE])
    SlurmSync.objects.create(cluster="d", status=SlurmSync.Status.IN_SYNC)
    line = decisions(client, people["mia"])["slurm-sync"]
    assert (line.count, line.note, line.url) == (1, "2 changes to Slurm's associations", look.get_absolute_url())
    assert client.get(line.url).status_code == 200


def test_recommendations_new_since_the_last_look(client, people):
    RecommendationFactory()
    RecommendationFactory()
    line = decisions(client, people["mia"])["recommendations"]
    assert (line.count, line.note) == (2, "you have not opened the list yet")
    assert len(client.get(line.url).context["table"].data) == 2  # the look is recorded
    assert "recommendations" not in decisions(client, people["mia"])
    new = RecommendationFactory()
    line = decisions(client, people["mia"])["recommendations"]
    assert line.count == 1 and line.note.startswith("since your last look on ")
    assert [r.pk for r in client.get(line.url).context["table"].data] == [new.pk]
    assert decisions(client, people["max"])["recommendations"].count == 3  # his own last look: never


def test_nothing_awaiting_says_so(client, people):
    client.force_login(people["mia"])
    html = client.get("/").content.decode()
    assert 'id="awaiting-decision"' in html and "Nothing awaits your decision." in html


def test_home_queries_stay_constant_with_faults_and_decisions(client, people, faults):
    client.force_login(people["mia"])
    client.get("/")
    with CaptureQueriesContext(connection) as few:
        client.get("/")
    team = make_team("nlp")
    for i in range(6):
        CapacityPlanFactory(status=CapacityPlan.Status.SUBMITTED, submitted_by=people["max"])
        RecommendationFactory()
        AllocationRequest.objects.create(team=team, start=date(2027, 1, 1), end=date(2027, 1, 31), gpu_hours=10,
                                         reason=str(i), requested_by=people["max"])
        SlurmSync.objects.create(cluster=f"c{i}", changes=[CHANGE])
        xid(faults["a"], 1 + i, 79)
    with CaptureQueriesContext(connection) as many:
        client.get("/")
    assert len(many) == len(few), [q["sql"] for q in many.captured_queries][len(few):]
