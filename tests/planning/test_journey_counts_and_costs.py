"""Issue 34, "one capacity model": a manager walks home → recommendation → accept → plan → sizing → API, and every
page and answer that shows a count of the same GPUs shows the same number, and the rent of the same workload at the
same rate costs the same on the sizing page and on the plan.

The fleet, written down before the code ran. Partition train, 8 HGX nodes of 8 H100:
- 5 in service, one GPU of the first degraded: 39 in service + 1 out of service;
- 1 in repair: 8 out of service; 1 in burn-in: 8 arriving; 1 retired: not counted.
So train has 39 in service + 9 out of service + 8 in burn-in = 56 GPUs. Partition inference: 2 nodes of 8 L40S in
service, so the fleet has 55 in service + 9 out of service + 8 in burn-in = 72. Every GPU of the in-service nodes
reports telemetry for the last 24 hours (the degraded one too: DCGM still sees it), train at 95 %, inference at
10 %; the queue of train (20 GPUs' worth waiting, p50 3 h) is given, the Slurm side is not what this test checks.

Figures are read from the pages' ``data-figure`` / ``data-value`` attributes, not from their words."""

import re
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from inventory.models import GPU, LifecycleState
from inventory.telemetry.models import GPUHourly, TelemetrySource
from inventory.telemetry.rollups import floor_hour
from planning.models import Recommendation
from planning.recommendations import gather, rules, store
from tests.factories import build_gpu, build_node, make_gpu_model, make_node_model, make_site

L = LifecycleState
pytestmark = pytest.mark.django_db
TRAIN = {"in_service": 39, "out_of_service": 9, "burn_in": 8, "total": 56}
FLEET = {"in_service": 55, "out_of_service": 9, "burn_in": 8, "total": 72}
SAYS = "39 in service + 9 out of service (degraded or in repair) + 8 delivered or in burn-in"


def figures(html, attribute="data-figure"):
    """{name: value} of the elements that carry ``attribute="name" data-value="value"``."""
    return {name: value for name, value in re.findall(rf'{attribute}="([^"]+)" data-value="([^"]*)"', html)}


def counts(html, attribute="data-figure"):
    found = figures(html, attribute)
    return {key: int(found[f"gpus-{key.replace('_', '-')}"]) for key in TRAIN}


@pytest.fixture
def fleet():
    site = make_site(name="zrh-journey")
    hgx = make_node_model(name="HGX H100 journey", gpu_slots=8, list_price=Decimal("300000.00"))
    l40s_node = make_node_model(name="L40S server journey", gpu_slots=8)
    h100 = make_gpu_model(name="H100 journey")
    l40s = make_gpu_model(name="L40S journey", memory_gb=48, bf16_tflops=Decimal("362"), fp8_tflops=Decimal("733"),
                          tdp_w=350, nvlink_gbs=0)
    now = timezone.now()
    hours = [floor_hour(now) - timedelta(hours=h) for h in range(1, 25)]
    reporting = []

    def node(state, partition, model, gpu_model, degraded_slot=None, util=95.0):
        n = build_node(site, model, state=state, partition=partition)
        n.save()
        gpus = GPU.objects.bulk_create(
            build_gpu(gpu_model, node=n, slot=slot, state=L.DEGRADED if slot == degraded_slot else L.IN_SERVICE)
            for slot in range(8))
        if state == L.IN_SERVICE:
            reporting.extend(GPUHourly(gpu=gpu, hour=hour, util_mean=util, util_max=100.0, samples=60)
                             for gpu in gpus for hour in hours)

    for i in range(5):
        node(L.IN_SERVICE, "train", hgx, h100, degraded_slot=3 if i == 0 else None)
    for state in (L.IN_REPAIR, L.BURN_IN, L.RETIRED):
        node(state, "train", hgx, h100)
    for _ in range(2):
        node(L.IN_SERVICE, "inference", l40s_node, l40s, util=10.0)
    GPUHourly.objects.bulk_create(reporting)
    TelemetrySource.objects.create(name="prom", kind="prometheus", url="http://prom:9090")
    return {"site": site, "h100": h100, "now": now}


def capacity_recommendation(now):
    """Train's finding as the daily analysis writes it: its counts from ``gather``, its queue given."""
    stats = {p.partition: p for p in gather.partition_stats(now)}
    train = replace(stats["train"], jobs_started=50, wait_p50_hours=3.0, wait_p95_hours=12.0, gpus_waiting=20.0)
    store.write([rules.capacity_bound(train)], now)
    return Recommendation.objects.get(kind=Recommendation.Kind.CAPACITY)


def test_every_page_and_answer_shows_the_same_count_and_the_same_rent(fleet, manager_client, manager_api):
    client = manager_client

    # Home: the GPU tile and the fleet panel count the fleet.
    home = client.get("/")
    tile = next(t for t in home.context["tiles"] if t.key == "gpus")
    assert tile.value == str(FLEET["total"])
    assert tile.note == "55 in service + 9 out of service (degraded or in repair) + 8 delivered or in burn-in"
    fleet_api = manager_api.get("/api/inventory/capacity/").json()["fleet"]
    assert {key: fleet_api[key] for key in FLEET} == FLEET and fleet_api["says"] == tile.note

    # The recommendation: its partition's GPUs now, and the evidence's "GPUs in service" as detected: the same.
    rec = capacity_recommendation(fleet["now"])
    page = client.get(rec.get_absolute_url()).content.decode()
    assert counts(page) == TRAIN and SAYS in page
    evidence = figures(page, "data-evidence")
    assert int(evidence["gpus-in-service"]) == TRAIN["in_service"], (
        "the capacity finding counts the GPUs that reported telemetry, not the partition's GPUs in service")
    assert int(evidence["gpus-out-of-service-degraded-or-in-repair"]) == TRAIN["out_of_service"]
    # (39 × 0.95 + 20) / 0.8 − 39 = 32.3 GPUs more; the 9 out of service returned and the 8 in burn-in first:
    # 15.3 GPUs, 2 nodes of 8.
    assert rec.node_count == 2

    # Accept: a draft plan scoped to train and H100, its baseline the same count.
    accepted = client.post(f"/planning/recommendations/{rec.pk}/accept/")
    rec.refresh_from_db()
    plan = rec.plan
    assert accepted.status_code == 302 and accepted.url == plan.get_absolute_url()
    assert client.get(plan.get_absolute_url()).status_code == 200
    analysis = client.get(f"/api/planning/plans/{plan.pk}/analysis/").json()
    sources = " ".join(analysis["capacity_sources"])
    assert f"Owned, in service: {TRAIN['in_service']} GPUs." in sources
    assert f"Out of service (degraded or in repair): {TRAIN['out_of_service']} GPUs" in sources
    # The plan's answer, its bill of materials and the recommendation name the same nodes.
    answer = next(s for s in analysis["scenarios"] if s["kind"] == analysis["recommendation"]["kind"])
    bom = {item.node_model.name: item.quantity for item in plan.items.select_related("node_model")
           if item.node_model_id}
    assert answer["nodes"] == bom["HGX H100 journey"] == rec.node_count

    # The sizing page: the fleet's H100s (all of them in train) and the cost of renting the whole run.
    query = {"params_billion": 7, "tokens_billion": 300, "gpu_model": "H100 journey", "num_gpus": 64}
    sizing_page = client.get("/planning/sizing/", query).content.decode()
    assert counts(sizing_page) == TRAIN
    assert 'data-fits="no"' in sizing_page  # 64 GPUs > the 56 the fleet has of the model
    sizing_api = manager_api.post("/api/planning/sizing/", query, format="json").json()
    assert {key: sizing_api["fleet"]["capacity"][key] for key in TRAIN} == TRAIN
    assert sizing_api["fleet"]["capacity"]["says"] == SAYS
    rent = float(figures(sizing_page)["rental_cost"])
    assert rent == pytest.approx(sizing_api["costs"]["rental_cost"]["value"], rel=1e-12)
    assert 'id="cost-quantity"' in sizing_page  # it says the plan's rent scenario rents only the shortfall

    # Add the workload to the plan from the sizing page: the plan sizes and prices it the same.
    added = client.post("/planning/sizing/?" + "&".join(f"{k}={v}" for k, v in query.items()),
                        {"plan": plan.pk, "name": "7B run", "start": f"{plan.first_month:%Y-%m}"})
    assert added.status_code == 302, added.content.decode()[:2000]
    analysis = client.get(f"/api/planning/plans/{plan.pk}/analysis/").json()
    workload = analysis["workloads"][0]
    assert workload["gpu_hours"] == pytest.approx(sizing_api["figures"]["gpu_hours"]["value"], rel=1e-9)
    assert workload["rental_cost"] == pytest.approx(rent, rel=1e-9), "the plan prices the workload's rent"

    # The capacity API for the partition and for the GPU model; the utilization page; the site and model pages.
    for scope in ({"partition": "train"}, {"gpu_model": fleet["h100"].pk}):
        answer = manager_api.get("/api/inventory/capacity/", scope).json()["fleet"]
        assert {key: answer[key] for key in TRAIN} == TRAIN and answer["says"] == SAYS
    utilization = client.get("/inventory/utilization/", {"partition": "train"}).content.decode()
    assert int(figures(utilization)["gpus-in-service"]) == TRAIN["in_service"]
    assert counts(client.get(fleet["h100"].get_absolute_url()).content.decode()) == TRAIN
    assert counts(client.get(fleet["site"].get_absolute_url()).content.decode()) == FLEET


@pytest.mark.parametrize(("gpus", "fits", "words"), [
    (39, "in_service", "The run's 39 GPUs fit in the 39 in service."),
    (56, "fleet", "The run's 56 GPUs exceed the 39 in service by 17: it needs those out of service, arriving"),
    (57, "no", "The run's 57 GPUs exceed all of them by 1: rent or buy the rest"),
])
def test_the_sizing_page_says_whether_the_run_fits_in_the_fleet(gpus, fits, words):
    from inventory.capacity import Capacity
    from planning.sizing.fleet import FleetFit

    fit = FleetFit("H100", gpus, Capacity(in_service=39, out_of_service=9, burn_in=8, retired=8))
    assert fit.fits == fits and words in fit.says
    assert fit.says.startswith(f"The fleet has 56 H100 GPUs: {SAYS}.")
