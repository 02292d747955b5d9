"""Issue 34 on the demo fleet (``seed_demo``, seeded once for this module's one test): every page and API answer
that shows a count of the same GPUs, a plan's answer or the rent of the same workload agrees with the others.

1. Each open capacity-bound recommendation: its evidence's "GPUs in service" (``measured.gpus``) is the capacity
   model's count of its partition, and its page shows the same count as ``/api/inventory/capacity/``.
2. Home's GPU tile is the API's fleet total; a recommendation accepted through the API makes a plan whose baseline
   states the same GPUs in service for its scope.
3. Every plan (the four seeded ones, and the capacity-bound and ageing findings accepted through the API): the plan
   page's answer (its summary), the API's ``recommendation`` and the scenario the table marks agree; no "No option"
   where an option serves all the demand. The accepted plans' bills are their recommended option's (its nodes, or
   none), never "No new capacity needed" above a bill that replaces nodes; the seeded plans' bills were filled from
   their answers too.
4. The sizing page each seeded plan's workload links to (one per GPU model: H200, H100, A100): its fleet card counts
   the GPU model as the capacity model and the API do, and its "Cost rented" is the plan API's
   ``workloads[i].rental_cost`` (or, where the plan states its own rental quote, the same GPU-hours at that quote).
   The link states the goodput the plan
   sized with: the sizing page would otherwise size with the fleet's measured interruption rate (the demo's A100s
   have one), which plans do not.

Figures are read from the pages' ``data-figure`` / ``data-value`` attributes, not from their words."""

import html
import re
from io import StringIO
from urllib.parse import parse_qsl, urlsplit

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from inventory import capacity
from inventory.models import GPU
from planning.models import CapacityPlan, Recommendation
from planning.plans.scope import Scope
from planning.sizing.sizing import rental_cost
from tests.helpers.accounts import token_client
from tests.planning.test_journey_counts_and_costs import figures

pytestmark = pytest.mark.django_db
STATES = ("in_service", "out_of_service", "burn_in", "total")
NO_OPTION = "No option"
NOTHING_NEEDED = "No new capacity needed"


@pytest.fixture
def demo(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    call_command("seed_demo", stdout=StringIO())
    manager = User.objects.get(username="manager")
    return manager, token_client(manager)


def page_counts(page):
    found = figures(page)
    return {state: int(found[f"gpus-{state.replace('_', '-')}"]) for state in STATES}


def api_counts(api, **scope):
    fleet = api.get("/api/inventory/capacity/", scope).json()["fleet"]
    return {state: fleet[state] for state in STATES}


def model_counts(count):
    return {state: getattr(count, state) for state in STATES}


def check_recommendations(client, api):
    """1: every open capacity-bound finding counts its partition's GPUs in service as the capacity model does, and
    its page shows the partition's GPUs as the API does; returns them by partition."""
    recs = Recommendation.objects.filter(kind=Recommendation.Kind.CAPACITY, status=Recommendation.Status.OPEN)
    found = {}
    for rec in recs:
        now = capacity.count(partition=rec.partition)
        assert rec.evidence["measured"]["gpus"] == now.in_service, rec.title
        page = client.get(rec.get_absolute_url()).content.decode()
        assert int(figures(page, "data-evidence")["gpus-in-service"]) == now.in_service, rec.title
        assert page_counts(page) == api_counts(api, partition=rec.partition) == model_counts(now), rec.title
        found[rec.partition] = model_counts(now)
    assert found, "the demo has a capacity-bound partition"
    return found


def accept(api, kind):
    """Accept the open recommendation of ``kind`` through the API, as the demo manager; returns it with its plan."""
    rec = Recommendation.objects.filter(kind=kind, status=Recommendation.Status.OPEN).order_by("pk").first()
    assert rec is not None, kind
    response = api.post(f"/api/planning/recommendations/{rec.pk}/accept/", {}, format="json")
    assert response.status_code == 200, response.content
    rec.refresh_from_db()
    return rec


def check_plan(plan, client, api):
    """3: one answer: the plan page's (its summary), the API's, the scenario the table marks; no "No option" where
    an option serves all the demand. Returns the API's analysis."""
    part = client.get(f"/planning/capacity-plans/{plan.pk}/analysis/", headers={"HX-Request": "true"})
    assert part.status_code == 200, plan.name
    part = part.content.decode()
    analysis = api.get(f"/api/planning/plans/{plan.pk}/analysis/").json()
    plan.refresh_from_db()  # the page stored the summary it shows
    answer, rec = plan.summary, analysis["recommendation"]
    assert (answer["recommended"], answer["headline"]) == (rec["kind"], rec["headline"]), plan.name
    assert html.escape(rec["headline"]) in part, plan.name
    marked = [s for s in analysis["scenarios"] if s["kind"] == rec["kind"]]
    if rec["kind"] is None:
        assert not marked and answer["nodes"] == answer["gpus_added"] == 0, plan.name
    else:
        (best,) = marked
        assert f'id="answer-option">Recommended: {best["label"].lower()}' in part, plan.name
        assert f'<th class="recommended">{best["label"]} <span' in part, plan.name
        assert (best["nodes"], best["met_from_month"], round(best["unmet_gpu_hours"], 1)) == (
            answer["nodes"], answer["met_from"], answer["unmet_gpu_hours"]), plan.name
    serves_all = [s["kind"] for s in analysis["scenarios"] if s["feasible"] and s["unmet_gpu_hours"] < 1]
    assert not (serves_all and (NO_OPTION in rec["headline"] or "No option recommended" in part)), (
        plan.name, rec["headline"], serves_all)
    return analysis


def check_bill(plan, analysis):
    """3: the plan's bill is its recommended option's (its nodes, or none)."""
    rec = analysis["recommendation"]
    nodes = {item.node_model.name: item.quantity for item in plan.items.select_related("node_model")
             if item.node_model_id}
    best = next((s for s in analysis["scenarios"] if s["kind"] == rec["kind"]), None)
    if best is not None and best["nodes"]:
        assert list(nodes.values()) == [best["nodes"]], (plan.name, nodes, rec["headline"])
        assert f"{best['nodes']:,} node" in rec["headline"], rec["headline"]
    else:
        assert not nodes, (plan.name, nodes, rec["headline"])
    assert not (nodes and NOTHING_NEEDED in rec["headline"]), (plan.name, nodes, rec["headline"])


def check_sizing(plan, analysis, client, api):
    """4: the sizing page each of the plan's workloads links to (one per GPU model): its fleet card counts the model
    as the capacity model and the API do, its "Cost rented" is the plan's ``workloads[i].rental_cost``."""
    page = client.get(plan.get_absolute_url()).content.decode()
    links = [html.unescape(url) for url in re.findall(r'href="(/planning/sizing/\?[^"]+)"', page)]
    rent = {w["name"]: w["rental_cost"] for w in analysis["workloads"]}
    checked = set()
    for workload in plan.workloads.select_related("gpu_model"):
        if workload.gpu_model_id in checked:
            continue
        checked.add(workload.gpu_model_id)
        wanted = {"gpu_model": workload.gpu_model.name, **{k: str(v) for k, v in workload.inputs.items()}}
        (url,) = [url for url in links if wanted.items() <= dict(parse_qsl(urlsplit(url).query)).items()]
        sizing = client.get(url).content.decode()
        now = capacity.count(gpu_model_id=workload.gpu_model_id)
        assert page_counts(sizing) == api_counts(api, gpu_model=workload.gpu_model_id) == model_counts(now)
        shown = figures(sizing)
        if plan.rental_gpu_hour_cost is None:  # the same rate: the same cost
            assert float(shown["rental_cost"]) == pytest.approx(rent[workload.name], rel=1e-9), (
                plan.name, workload.name, url)
        else:  # the plan's own quote prices the same GPU-hours the sizing page prices at the fleet's rate
            hours = next(w["gpu_hours"] for w in analysis["workloads"] if w["name"] == workload.name)
            fleet_rate = rental_cost(1.0).value
            assert float(shown["rental_cost"]) == pytest.approx(hours * fleet_rate, rel=1e-9), (plan.name, url)
            assert rent[workload.name] == pytest.approx(hours * float(plan.rental_gpu_hour_cost), rel=1e-9)
    return checked


def test_the_demo_agrees(demo, client):
    manager, api = demo
    client.force_login(manager)

    # 1. The capacity-bound findings and their pages.
    partitions = check_recommendations(client, api)

    # 2. Home's GPU tile is the API's fleet; an accepted finding's plan counts its scope's GPUs in service the same.
    tile = next(t for t in client.get("/").context["tiles"] if t.key == "gpus")
    fleet = api.get("/api/inventory/capacity/").json()["fleet"]
    assert (tile.value, tile.note) == (f"{fleet['total']:,}", fleet["says"]) and fleet["total"] == GPU.objects.count()
    capacity_bound = accept(api, Recommendation.Kind.CAPACITY)
    plan = capacity_bound.plan
    in_service = capacity.count(**Scope.of(plan).capacity_filters()).in_service
    assert plan.partition == capacity_bound.partition and in_service == partitions[plan.partition]["in_service"]
    analysis = api.get(f"/api/planning/plans/{plan.pk}/analysis/").json()
    assert f"Owned, in service: {in_service:,} GPUs." in analysis["capacity_sources"]
    ageing = accept(api, Recommendation.Kind.AGEING)

    # 3. Every plan gives one answer; the accepted ones' bills are their answers' (the seeded ones' were typed).
    plans = CapacityPlan.objects.select_related("site", "node_model").order_by("pk")
    assert plans.count() == 6
    analyses = {plan.pk: check_plan(plan, client, api) for plan in plans}
    for rec in (capacity_bound, ageing):
        check_bill(rec.plan, analyses[rec.plan.pk])

    # 3, the seeded plans: their bills were filled from their answers, as the accepted ones'.
    for plan in plans.filter(recommendations__isnull=True):
        check_bill(plan, analyses[plan.pk])

    # 4. The sizing page of the seeded plans' workloads.
    models = set()
    for plan in plans.filter(recommendations__isnull=True):
        models |= check_sizing(plan, analyses[plan.pk], client, api)
    assert len(models) == 3  # H200, H100, A100
