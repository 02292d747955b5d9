"""A plan made from a recommendation: scoped to what the recommendation measured, and its analysis shows the
recommendation's need with the same figures, for every kind (the demo raises capacity-, storage- and network-bound
and ageing; scheduling- and memory-bound are built here the same way), on the page and in the API alike."""

import html
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from inventory.models import GPUDaily, GPUModel
from planning.models import CapacityPlan, Recommendation
from planning.plans import analysis, capacity
from planning.plans.scope import Scope
from planning.recommendations import gather, rules, store
from tests.factories import (
    make_capacity_recommendation,
    make_gpu,
    make_gpu_model,
    make_node,
    make_node_model,
    make_site,
)

pytestmark = pytest.mark.django_db

TODAY = timezone.localdate()  # the pages and the API analyse as of today
HOURS = 730
NO_CAPACITY = "No new capacity needed"


def nodes_with_history(count, util, gpu_model, **node_kw):
    """``count`` nodes of 8 GPUs with 91 days of daily rollups at ``util`` % up to yesterday."""
    nodes, rows = [], []
    days = [TODAY - timedelta(days=i) for i in range(1, 92)]
    for _ in range(count):
        node = make_node(**{"state": "in_service", **node_kw})
        nodes.append(node)
        for _ in range(8):
            gpu = make_gpu(node=node, gpu_model=gpu_model)
            rows += [GPUDaily(gpu=gpu, day=day, hours=24, util_mean=util) for day in days]
    GPUDaily.objects.bulk_create(rows)
    return nodes


def nodes_added(an):
    return max(s.nodes for s in an.scenarios)


def page_and_api(client, plan):
    url = f"/planning/capacity-plans/{plan.pk}/analysis/"
    page = html.unescape(client.get(url, headers={"HX-Request": "true"}).content.decode())
    api = client.get(f"/api/planning/plans/{plan.pk}/analysis/").json()
    return page, api


# --- Capacity-bound -------------------------------------------------------------------------------------------


@pytest.fixture
def capacity_rec():
    """The factory's finding (32 GPUs at 91 %, 20 waiting: 4 nodes) over a partition that is really there, next to
    a quiet one that makes the fleet as a whole look roomy."""
    rec = make_capacity_recommendation(datetime(2026, 11, 20, tzinfo=UTC))
    h200 = make_gpu_model(name="H200 test", memory_gb=141)
    nodes_with_history(4, 91.0, h200, site=rec.site, node_model=rec.node_model, partition="train-h200")
    nodes_with_history(4, 5.0, make_gpu_model(name="L40S test", memory_gb=48), site=rec.site, partition="inference")
    return rec


def test_accept_scopes_the_plan_to_the_partition_and_its_gpu_model(capacity_rec, manager):
    plan = store.accept(capacity_rec, manager).plan
    assert (plan.partition, plan.gpu_model.name, plan.site, plan.node_model, plan.node_price) == (
        "train-h200", "H200 test", capacity_rec.site, capacity_rec.node_model, Decimal("380000.00"))
    assert capacity_rec.evidence["measured"]["gpus_waiting"] == 20.0


def test_capacity_bound_plan_adds_the_recommendations_nodes_where_the_fleet_sees_no_need(capacity_rec, manager):
    plan = store.accept(capacity_rec, manager).plan
    an = analysis.analyse(plan, TODAY)
    assert an.scope.label == "partition train-h200, GPU model H200 test"
    # History: the partition's 32 GPUs at 91 %, flat; capacity: its 32 GPUs, not the quiet partition's.
    assert an.forecast.mean[0] == pytest.approx(32 * 0.91 * HOURS)
    assert an.capacity.hours[0] == 32 * HOURS
    (queued,) = an.lines
    assert queued.name == f"Queued demand (recommendation #{capacity_rec.pk})"
    assert queued.per_month == [20 * HOURS] * plan.horizon_months
    # (29.1 busy + 20 waiting) / 80 % = 61.4 GPUs against 32: 29.4 GPUs short, 4 nodes of 8: the rule's count.
    assert nodes_added(an) == capacity_rec.node_count == 4
    assert an.recommendation.kind is not None and NO_CAPACITY not in an.recommendation.headline
    assert not any("The analysis adds" in note for note in an.notes)
    # The same fleet, unscoped and without the queue: it sees no need, which is what the scope fixes.
    fleet = CapacityPlan.objects.create(name="fleet")
    assert analysis.analyse(fleet, TODAY).recommendation.headline.startswith(NO_CAPACITY)


def test_a_different_node_count_says_why(capacity_rec, manager):
    plan = store.accept(capacity_rec, manager).plan
    make_node(site=capacity_rec.site, node_model=capacity_rec.node_model, partition="train-h200", state="burn_in")
    for _ in range(8):
        make_gpu(node=plan.site.nodes.filter(state="burn_in").get(), gpu_model=plan.gpu_model)
    an = analysis.analyse(plan, TODAY)
    assert nodes_added(an) == 3  # one node arrives from burn-in
    # At the default rental rate renting wins over the plan's 12 months: the note says so, and why fewer GPUs.
    assert an.recommendation.kind == "rent" and an.recommendation.scenario.peak_rented_gpus == 24
    assert (f"The recommended option (rent) buys 0 nodes where recommendation #{capacity_rec.pk} asked for 4: it "
            "rents up to 24 GPUs in place of buying (32 GPUs asked); the plan's capacity in scope reaches 40 GPUs") \
        in " ".join(an.notes)


# --- Ageing ---------------------------------------------------------------------------------------------------


def test_ageing_plan_loses_the_nodes_to_replace_and_adds_as_many(manager):
    site, model = make_site(name="Lyon test"), make_node_model(name="DGX A100 test", list_price=Decimal("200000"))
    a100 = make_gpu_model(name="A100 test", memory_gb=80)
    old = TODAY - timedelta(days=400)
    nodes = nodes_with_history(4, 60.0, a100, site=site, node_model=model)
    for node in nodes[:2]:
        node.warranty_end = old
        node.save()
    now = timezone.now()
    store.write(rules.ageing(gather.node_health(now), TODAY), now)
    rec = Recommendation.objects.get(kind="ageing")
    plan = store.accept(rec, manager).plan
    assert (plan.site, plan.gpu_model, plan.partition) == (site, a100, "")
    an = analysis.analyse(plan, TODAY)
    assert an.scope.label == "site Lyon test, GPU model A100 test"
    # Their 16 GPUs leave from the first month; 32 GPUs at 80 % is the capacity kept: 16 short, 2 nodes.
    assert an.capacity.gpus[0] == 16
    assert [line.name for line in an.lines] == [f"Capacity to keep (recommendation #{rec.pk})"]
    assert an.demand[0] == pytest.approx(32 * 0.8 * HOURS)
    assert nodes_added(an) == rec.node_count == 2
    assert an.recommendation.kind is not None
    first = an.months[0]
    assert (f"{nodes[0].hostname} from {first:%b %Y} (now: out of warranty since {old.isoformat()})"
            in " ".join(an.notes))


# --- Kinds whose need is not more GPUs -------------------------------------------------------------------------


def stats(partition, site, gpus=16, **kw):
    return rules.PartitionStats(partition=partition, gpus=gpus, gpu_hours=gpus * 168.0, site_id=site.pk,
                                site_name=site.name, **kw)


BOUND = {
    "storage_bound": (rules.storage_bound, dict(allocated_gpu_hours=0.9 * 16 * 168, util_mean=35.0, busy_util=40.0,
                                                stall_share=0.5, busy_hours=16 * 100.0), "storage"),
    "scheduling_bound": (rules.scheduling_bound, dict(allocated_gpu_hours=0.5 * 16 * 168, util_mean=40.0,
                                                      jobs_started=10, wait_p50_hours=3.0, wait_p95_hours=9.0),
                         "the queue policy"),
    "network_bound": (rules.network_bound, dict(
        widths=[rules.Width(1, 1, jobs=10, gpu_hours=100.0, util_sum=90.0 * 100),
                rules.Width(5, 8, jobs=6, gpu_hours=200.0, util_sum=60.0 * 200)],
        oversubscription=2.0, oversubscribed_switches={"leaf-1": 2.0}, fabrics=["ib-test"],
        fabric_gbps_per_gpu=400.0, multi_node_share=0.7), "the network"),
    "memory_bound": (rules.memory_bound, dict(memory_share=0.92, oom_jobs=2, ended_jobs=20, failed_jobs=3),
                     "GPU memory"),
}


@pytest.fixture(params=list(BOUND))
def bound_plan(request, manager):
    kind = request.param
    rule, values, bottleneck = BOUND[kind]
    site = make_site(name="Geneva test")
    gpu_model = make_gpu_model(name="A100 40GB test", memory_gb=40)
    nodes_with_history(2, 50.0, gpu_model, site=site, partition="p-test")
    store.write([rule(stats("p-test", site, **values))], timezone.now())
    rec = Recommendation.objects.get()
    assert rec.kind == kind
    return store.accept(rec, manager).plan, rec, bottleneck


def test_a_bottleneck_leads_the_analysis_and_no_more_gpus_are_asked_for(bound_plan):
    plan, rec, bottleneck = bound_plan
    assert (plan.partition, plan.gpu_model.name) == ("p-test", "A100 40GB test")
    an = analysis.analyse(plan, TODAY)
    assert an.need.statement.startswith(an.need.topic + ": " + rec.summary)
    assert f"Need from recommendation #{rec.pk}: {rec.action}" in an.need.statement
    assert an.recommendation.headline == (
        f"No more GPUs needed: the bottleneck is {bottleneck} (recommendation #{rec.pk}).")
    assert an.lines == [] and nodes_added(an) == 0
    if rec.kind == "memory_bound":  # the catalog's models with more than 40 GB
        larger = [f"{m.name} ({m.memory_gb} GB)" for m in GPUModel.objects.filter(memory_gb__gt=40)
                  .order_by("memory_gb", "name")]
        assert larger and ("GPU models with more memory", ", ".join(larger)) in an.need.figures


def test_page_and_api_show_the_same_need(bound_plan, manager_client):
    plan, rec, _ = bound_plan
    page, api = page_and_api(manager_client, plan)
    an = analysis.analyse(plan)
    assert api["recommendation"]["headline"] == an.recommendation.headline and an.recommendation.headline in page
    assert NO_CAPACITY not in page and NO_CAPACITY not in api["recommendation"]["headline"]
    assert api["scope"] == "Scope: partition p-test, GPU model A100 40GB test" and api["scope"] in page
    assert api["need"]["statement"] == an.need.statement and an.need.statement in page
    for figure in api["need"]["figures"]:
        assert f"<th>{figure['label']}</th><td>{figure['value']}</td>" in page


def test_page_and_api_show_the_same_queue_and_nodes(capacity_rec, manager, manager_client):
    plan = store.accept(capacity_rec, manager).plan
    page, api = page_and_api(manager_client, plan)
    assert api["scope"] == "Scope: partition train-h200, GPU model H200 test" and api["scope"] in page
    assert api["demand_lines"] == [{"name": f"Queued demand (recommendation #{capacity_rec.pk})",
                                    "gpu_hours": [20.0 * HOURS] * 12}]
    assert [m["recommendation_gpu_hours"] for m in api["months"]] == [20.0 * HOURS] * 12
    assert f"<th>Queued demand (recommendation #{capacity_rec.pk})</th>" in page
    assert page.count("<td>14,600</td>") == 12  # 20 GPUs × 730 h, each month
    # Expanding and building buy the queue's nodes; the hybrid may rent them instead.
    assert {s["nodes"] for s in api["scenarios"] if s["kind"] in ("expand", "build")} == {4}
    assert api["need"]["node_count"] == 4 and api["recommendation"]["headline"] in page


# --- The scope: capacity, form and API ---------------------------------------------------------------------


def test_baseline_counts_only_the_scope_and_the_nodes_leaving():
    site, other_site = make_site(), make_site()
    h200, a100 = make_gpu_model(), make_gpu_model()
    mine = [make_node(site=site, partition="p1", state="in_service") for _ in range(2)]
    for node in mine:
        for _ in range(4):
            make_gpu(node=node, gpu_model=h200)
    make_gpu(node=mine[0], gpu_model=a100)  # another model in the same node: not in a GPU-model scope
    make_gpu(node=make_node(site=other_site, partition="p2", state="in_service"), gpu_model=h200)
    first = TODAY.replace(day=1)
    assert capacity.baseline(first, 2, TODAY).gpus == [10, 10]
    scope = Scope(partition="p1", gpu_model_id=h200.pk, gpu_model_name="x")
    assert capacity.baseline(first, 2, TODAY, scope).gpus == [8, 8]
    leaving = capacity.baseline(first, 2, TODAY, scope, leaving={mine[1].pk: capacity.add_months(first, 1)})
    assert leaving.gpus == [8, 4] and "Leaving (replaced): 4 GPUs" in " ".join(leaving.sources)
    assert capacity.baseline(first, 1, TODAY, Scope(site_id=other_site.pk, site_name="o")).gpus == [1]


def test_the_scope_is_edited_on_the_form_and_in_the_api(manager_client, manager_api):
    form = manager_client.get("/planning/capacity-plans/add/").content.decode()
    assert 'name="partition"' in form and 'name="gpu_model"' in form and "Empty: the whole fleet." in form
    gpu_model = make_gpu_model()
    response = manager_api.post("/api/planning/plans/", {"name": "scoped", "partition": "train-h200",
                                                         "gpu_model": gpu_model.pk}, format="json")
    assert response.status_code == 201, response.json()
    plan = CapacityPlan.objects.get(name="scoped")
    assert (plan.partition, plan.gpu_model) == ("train-h200", gpu_model)
    assert response.json()["partition"] == "train-h200"
    bad = manager_api.patch(f"/api/planning/plans/{plan.pk}/", {"gpu_model": 999999}, format="json")
    assert bad.status_code == 400 and "gpu_model" in bad.json()
