"""A plan's answer is one result: the headline, the plan list's summary, the API's recommendation, the scenario the
table marks and the pre-filled bill of materials agree, for plans made by hand and from recommendations (issue 34:
"an accepted 'Replace 1 node' becomes 'No new capacity needed' while its bill of materials holds the
replacement")."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from planning.models import CapacityPlan, PlanWorkload, Recommendation
from planning.plans import analysis, bom, summary
from planning.recommendations import gather, rules, store
from tests.factories import make_gpu_model, make_node_model, make_site
from tests.planning.test_plan_needs import TODAY, nodes_with_history

pytestmark = pytest.mark.django_db


def answers(plan, client):
    """(analysis, the API's analysis, the plan list's summary) of ``plan``."""
    an = analysis.analyse(plan, TODAY)
    api = client.get(f"/api/planning/plans/{plan.pk}/analysis/").json()
    return an, api, summary.summarise(an)


def assert_one_answer(an, api, short, plan):
    rec, best = an.recommendation, an.recommendation.scenario
    assert api["recommendation"]["kind"] == rec.kind == short["recommended"]
    assert api["recommendation"]["headline"] == rec.headline == short["headline"]
    marked = [s for s in api["scenarios"] if s["kind"] == rec.kind]
    if best is None:
        assert marked == [] and short["nodes"] == 0 and short["gpus_added"] == 0
        return
    (marked,) = marked
    assert marked["nodes"] == best.nodes == short["nodes"]
    assert marked["met_from_month"] == short["met_from"]
    assert round(marked["unmet_gpu_hours"], 1) == short["unmet_gpu_hours"]
    if best.nodes:
        bill = bom.derive(plan, today=TODAY, an=an)
        assert bill.kind == rec.kind and bill.lines[0].quantity == best.nodes
        assert f"{best.nodes:,} node" in rec.headline


@pytest.mark.parametrize("gpus, rate", [(64, None), (256, "20"), (512, "2.5"), (8, "20")])
def test_a_plan_made_by_hand_gives_one_answer(manager, manager_api, gpus, rate):
    site = make_site(name="Basel", power_capacity_kw=Decimal("5000"))
    h100 = make_gpu_model(name="H100 agree", memory_gb=80)
    model = make_node_model(name="HGX agree", gpu_slots=8, list_price=Decimal("300000"))
    nodes_with_history(2, 60.0, h100, site=site, node_model=model)
    plan = CapacityPlan.objects.create(name=f"run {gpus}", site=site, node_model=model, owner=manager,
                                       rental_gpu_hour_cost=Decimal(rate) if rate else None,
                                       first_month=TODAY.replace(day=1), horizon_months=12)
    PlanWorkload.objects.create(plan=plan, name="LLM", start=TODAY.replace(day=1) + timedelta(days=62),
                                gpu_model=h100, inputs={"params_billion": 70, "tokens_billion": 1000,
                                                        "num_gpus": gpus, "mfu": 0.4, "goodput": 1})
    an, api, short = answers(plan, manager_api)
    assert_one_answer(an, api, short, plan)


def ageing_plan(manager, warranty_end):
    """Four A100 nodes at Lyon, two of them ageing with faults spread over the model's fleet: accepted."""
    site, model = make_site(name="Lyon agree"), make_node_model(name="DGX A100 agree", list_price=Decimal("200000"))
    nodes = nodes_with_history(4, 60.0, make_gpu_model(name="A100 agree", memory_gb=80), site=site,
                               node_model=model)
    for node in nodes[:2]:
        node.warranty_end = warranty_end
        node.save()
    now = timezone.now()
    store.write(rules.ageing(gather.node_health(now), TODAY), now)
    rec = Recommendation.objects.get(kind="ageing")
    return store.accept(rec, manager), nodes


def test_an_accepted_replacement_shows_the_replacement(manager, manager_api):
    rec, _ = ageing_plan(manager, TODAY - timedelta(days=400))  # out of warranty: they leave now
    plan = rec.plan
    an, api, short = answers(plan, manager_api)
    assert_one_answer(an, api, short, plan)
    assert an.recommendation.kind is not None and "No new capacity needed" not in an.recommendation.headline
    # The bill filled on acceptance is the recommended option's, with the replacement's nodes.
    best = an.recommendation.scenario
    lines = {item.node_model.name: item.quantity for item in plan.items.select_related("node_model")
             if item.node_model_id}
    assert best.nodes == rec.node_count == 2 and lines == {"DGX A100 agree": 2}


def test_a_replacement_outside_the_plans_months_says_so_and_buys_nothing(manager, manager_api):
    # Faulting nodes whose warranty ends after the plan's months stay in service (the vendor repairs them) until
    # then: nothing leaves within the horizon, so nothing is bought, and the headline says why in the need's
    # terms, never "No new capacity needed" beside a bill that holds a replacement.
    from tests.planning.test_recommendations import degraded_on

    site, model = make_site(name="Bern agree"), make_node_model(name="DGX agree", list_price=Decimal("200000"))
    nodes = nodes_with_history(3, 60.0, make_gpu_model(name="A100 bern", memory_gb=80), site=site,
                               node_model=model)
    later = TODAY + timedelta(days=800)
    for node in nodes:  # faults spread over the whole fleet of the model: replace, not repair
        node.warranty_end = later
        node.save()
        degraded_on(node, TODAY - timedelta(days=40), TODAY - timedelta(days=20))
    now = timezone.now()
    findings = rules.ageing(gather.node_health(now), TODAY)
    store.write(findings, now)
    rec = store.accept(Recommendation.objects.get(kind="ageing"), manager)
    an, api, short = answers(rec.plan, manager_api)
    assert_one_answer(an, api, short, rec.plan)
    assert an.recommendation.kind is None and rec.plan.items.count() == 0
    assert an.recommendation.headline.startswith("No replacement needed within the plan's months: the 3 nodes")
    assert f"{later:%b %Y}" in an.recommendation.headline
