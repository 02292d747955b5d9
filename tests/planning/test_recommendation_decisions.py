"""Recommendations decided: accepting one (a draft plan through the plan workflow, its bill the plan's recommended
option's) and dismissing one with a reason, on the pages and in the API; the list, the detail page, the home card."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from planning.models import CapacityPlan, Recommendation
from planning.plans import analysis
from planning.recommendations import store as rec_store
from tests.factories import make_gpu_model, make_node_model, make_site
from tests.planning.test_recommendations import END, add_partition, finding, idle_fleet

pytestmark = pytest.mark.django_db


# --- Accepting and dismissing -------------------------------------------------------------------------------


@pytest.fixture
def capacity_rec(db):
    """Partition p1's 16 GPUs 90 % busy with 20 GPUs' worth of jobs waiting: (14.4 + 20) / 0.8 − 16 = 27 GPUs more,
    4 nodes of 8."""
    node_model = make_node_model(name="Test B200 node", gpu_slots=8)
    site = make_site(name="Geneva")
    add_partition(site, "p1n", "p1", 2, node_model, make_gpu_model(name="B200 test"))
    measured = {"gpus": 16, "util_mean": 90.0, "gpus_waiting": 20.0, "target_util": 80.0, "gpu_slots": 8,
                "extra_gpus": 27.0, "gpus_out_of_service": 0, "returned_gpus": 0}
    rec_store.write([finding(title="Partition p1 is capacity-bound", node_model_id=node_model.pk, node_count=4,
                             node_price=Decimal("500000.00"), site_id=site.pk, measured=measured)], END)
    return Recommendation.objects.get()


def test_accepting_a_capacity_bound_one_makes_a_draft_plan_through_the_workflow(capacity_rec, manager, settings):
    settings.RENTAL_GPU_HOUR_COST = 20.0  # renting dear: owning the nodes is the plan's answer
    rec = rec_store.accept(capacity_rec, manager)
    plan = rec.plan
    assert rec.status == "accepted" and rec.decided_by == manager and rec.decided_at is not None
    assert plan.status == CapacityPlan.Status.DRAFT and plan.owner == manager
    assert plan.recommendations.get() == rec
    assert (plan.site_id, plan.node_model_id, plan.node_price) == (rec.site_id, rec.node_model_id, rec.node_price)
    assert "Partition p1 is capacity-bound" in plan.name and "Suggested action" in plan.description
    # The bill is the plan's recommended option's: the 4 nodes the recommendation asked for, at its price.
    an = analysis.analyse(plan)
    assert an.recommendation.scenario.nodes == 4
    nodes = plan.items.get(node_model_id=rec.node_model_id)
    assert (nodes.quantity, nodes.unit_cost) == (4, Decimal("500000.00"))
    events = list(plan.events.values_list("from_status", "to_status", "username", "comment"))
    assert events[0] == ("draft", "draft", manager.username,
                         f"Created from recommendation #{rec.pk} (Capacity-bound): Partition p1 is capacity-bound.")
    assert events[1][3].startswith("Bill of materials: the recommended option's")


def test_an_accepted_capacity_bound_one_that_renting_serves_buys_nothing_and_says_why(capacity_rec, manager):
    # At the default 2.50 per GPU-hour, renting the 27 GPUs costs less over the plan's 12 months than owning them.
    rec = rec_store.accept(capacity_rec, manager)
    an = analysis.analyse(rec.plan)
    assert an.recommendation.kind == "rent" and rec.plan.items.count() == 0
    assert rec.plan.events.last().comment == ("No bill of materials: Renting buys nothing: the rent scenario has no "
                                              "bill of materials. Choose expand, build or hybrid.")
    assert any("it rents up to 32 GPUs in place of buying (32 GPUs asked)" in note for note in an.notes)


def test_accepting_other_kinds_makes_a_plan_without_lines(db, manager):
    rec_store.write([finding("storage_bound")], END)
    rec = rec_store.accept(Recommendation.objects.get(), manager)
    assert rec.plan.items.count() == 0


def test_only_an_open_recommendation_is_decided(capacity_rec, manager):
    rec_store.accept(capacity_rec, manager)
    with pytest.raises(ValidationError, match="accepted"):
        rec_store.accept(capacity_rec, manager)
    with pytest.raises(ValidationError, match="accepted"):
        rec_store.dismiss(capacity_rec, manager, "no")


def test_dismissing_needs_a_reason(capacity_rec, manager):
    with pytest.raises(ValidationError, match="reason"):
        rec_store.dismiss(capacity_rec, manager, "  ")
    rec = rec_store.dismiss(capacity_rec, manager, "Rental covers it")
    assert (rec.status, rec.dismiss_reason, rec.plan) == ("dismissed", "Rental covers it", None)


# --- Pages ----------------------------------------------------------------------------------------------------

LIST = "/planning/recommendations/"


def test_list_shows_open_recommendations_most_severe_first(viewer_client, db):
    found = [finding(severity="low", title="Low one"), finding("storage_bound", severity="high", title="High one")]
    rec_store.write([*found, finding("memory_bound", title="Resolved one")], END)
    rec_store.write(found, END + timedelta(hours=1))
    response = viewer_client.get(LIST)
    assert response.status_code == 200
    text = response.content.decode()
    assert text.index("High one") < text.index("Low one")
    assert "Resolved one" not in text
    assert "Run analysis now" not in text  # viewers do not run it
    resolved = viewer_client.get(LIST + "?status=resolved").content.decode()
    assert "Resolved one" in resolved and "High one" not in resolved
    everything = viewer_client.get(LIST + "?q=").content.decode()  # the filters used, no status ticked: all
    assert "Resolved one" in everything and "High one" in everything


def test_detail_shows_evidence_chart_and_buttons_to_managers(manager_client, capacity_rec):
    response = manager_client.get(capacity_rec.get_absolute_url())
    text = response.content.decode()
    assert response.status_code == 200
    assert 'data-chart="hbar"' in text and 'id="recommendation-chart"' in text and "plotly.min.js" in text
    assert "<script>" not in text  # data through json_script only, no inline script
    assert 'id="accept"' in text and 'id="dismiss"' in text
    assert "4 × Test B200 node" in text


def test_viewers_see_no_buttons_and_cannot_decide(viewer_client, capacity_rec):
    text = viewer_client.get(capacity_rec.get_absolute_url()).content.decode()
    assert 'id="accept"' not in text and 'id="dismiss"' not in text
    url = capacity_rec.get_absolute_url()
    assert viewer_client.post(url + "accept/").status_code == 403
    assert viewer_client.post(url + "dismiss/", {"reason": "x"}).status_code == 403
    assert viewer_client.post(LIST + "run/").status_code == 403
    capacity_rec.refresh_from_db()
    assert capacity_rec.status == "open"


def test_manager_turns_a_capacity_bound_one_into_a_draft_plan(manager_client, capacity_rec):
    response = manager_client.post(capacity_rec.get_absolute_url() + "accept/")
    capacity_rec.refresh_from_db()
    assert response.status_code == 302 and response["Location"] == capacity_rec.plan.get_absolute_url()
    page = manager_client.get(response["Location"]).content.decode()
    assert "Test B200 node" in page  # the bill of materials line
    text = manager_client.get(capacity_rec.get_absolute_url()).content.decode()
    assert 'id="plan-link"' in text and 'id="accept"' not in text


def test_manager_dismisses_with_a_reason_only(manager_client, capacity_rec):
    url = capacity_rec.get_absolute_url()
    response = manager_client.post(url + "dismiss/", {"reason": " "}, follow=True)
    assert "Say why" in response.content.decode()
    capacity_rec.refresh_from_db()
    assert capacity_rec.status == "open"
    manager_client.post(url + "dismiss/", {"reason": "Rental booked"})
    capacity_rec.refresh_from_db()
    assert (capacity_rec.status, capacity_rec.dismiss_reason) == ("dismissed", "Rental booked")
    assert "Rental booked" in manager_client.get(url).content.decode()


def test_manager_runs_the_analysis_on_demand(manager_client, db):
    idle_fleet()
    text = manager_client.get(LIST).content.decode()
    assert "Run analysis now" in text
    # The button analyses the week before now; the simulator's week ends at END, so run at END.
    from django.utils import timezone

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(timezone, "now", lambda: END)
        response = manager_client.post(LIST + "run/", follow=True)
    assert "Analysis done" in response.content.decode()
    assert Recommendation.objects.filter(kind="scheduling_bound").exists()


def test_home_dashboard_card(viewer_client, capacity_rec):
    text = viewer_client.get("/").content.decode()
    assert 'id="recommendations"' in text and "Partition p1 is capacity-bound" in text


def test_nav_links_to_the_recommendations(viewer_client, db):
    assert 'href="/planning/recommendations/"' in viewer_client.get("/").content.decode()


# --- API ------------------------------------------------------------------------------------------------------

API = "/api/planning/recommendations/"


def test_api_lists_recommendations_with_evidence_and_filters(viewer_api, capacity_rec):
    rec_store.write([finding(title="Partition p1 is capacity-bound"), finding("storage_bound")],
                    END + timedelta(hours=1))
    body = viewer_api.get(API).json()
    assert body["count"] == 2
    rec = viewer_api.get(f"{API}{capacity_rec.pk}/").json()
    assert rec["kind"] == "capacity_bound" and rec["evidence"]["figures"][0]["label"] == "x"
    assert [r["kind"] for r in viewer_api.get(API, {"kind": "storage_bound"}).json()["results"]] == ["storage_bound"]


def test_api_accept_and_dismiss(manager_api, capacity_rec, settings):
    settings.RENTAL_GPU_HOUR_COST = 20.0  # owning wins: the plan buys the nodes
    other = Recommendation.objects.create(key="storage_bound:partition=p2", kind="storage_bound", title="Slow reads",
                                          summary="s", action="a")
    response = manager_api.post(f"{API}{capacity_rec.pk}/accept/", {"comment": "Go"})
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "accepted"
    plan = CapacityPlan.objects.get(pk=response.json()["plan"])
    assert plan.items.get(node_model_id=capacity_rec.node_model_id).quantity == 4 and "Go" in plan.description
    assert manager_api.post(f"{API}{capacity_rec.pk}/accept/").status_code == 400
    missing = manager_api.post(f"{API}{other.pk}/dismiss/", {})
    assert missing.status_code == 400 and "reason" in missing.json()
    dismissed = manager_api.post(f"{API}{other.pk}/dismiss/", {"reason": "Known: new scratch tier ordered"})
    assert dismissed.status_code == 200 and dismissed.json()["dismiss_reason"] == "Known: new scratch tier ordered"


def test_api_viewers_cannot_decide_or_create(viewer_api, capacity_rec):
    assert viewer_api.post(f"{API}{capacity_rec.pk}/accept/").status_code == 403
    assert viewer_api.post(f"{API}{capacity_rec.pk}/dismiss/", {"reason": "x"}).status_code == 403
    assert viewer_api.post(f"{API}run/").status_code == 403
    assert viewer_api.post(API, {"title": "x"}).status_code in (403, 405)
    assert viewer_api.delete(f"{API}{capacity_rec.pk}/").status_code in (403, 405)


def test_api_run(manager_api, db):
    assert manager_api.post(f"{API}run/").json() == {"created": 0, "updated": 0, "resolved": 0, "skipped": 0}


def test_admin_lists_recommendations(client, admin_user, capacity_rec):
    admin_user.is_staff = True
    admin_user.save()
    client.force_login(admin_user)
    assert "Partition p1 is capacity-bound" in client.get("/admin/planning/recommendation/").content.decode()


def test_schema_documents_the_endpoints(viewer_api):
    schema = viewer_api.get("/api/schema/", {"format": "json"}).json()
    assert {"get"} == set(schema["paths"][API]) and "post" in schema["paths"][f"{API}run/"]
    for action, body in (("accept", "Accept"), ("dismiss", "Dismiss")):
        operation = schema["paths"][f"{API}{{id}}/{action}/"]["post"]
        assert operation["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
            f"/Recommendation{body}Request")
    components = schema["components"]["schemas"]
    assert "ExpansionRecommendation" in components
    assert {"RecommendationKindEnum", "RecommendationStatusEnum", "RecommendationSeverityEnum"} <= set(components)
    assert components["RecommendationDismissRequest"]["required"] == ["reason"]
