"""A bill of materials a purchaser can read (issue 37, item 6): each line named by its catalog item (never a whole
sentence; how it was derived is its note), every price a rule derived flagged as an estimate until someone confirms
it, and the total saying how much of it is estimated, on the plan page, the fill confirmation and the API."""

import re
from datetime import date
from decimal import Decimal

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import Client

from planning.models import PlanItem
from planning.plans import bom
from planning.plans import workflow as plans
from portal.roles import MANAGER, PROCUREMENT, VIEWER
from tests.helpers.accounts import make_user, token_client
from tests.helpers.plans import bom_plan

pytestmark = pytest.mark.django_db

TODAY = date(2026, 12, 2)


@pytest.fixture(autouse=True)
def shares(settings):
    settings.NETWORK_SHARE_OF_NODE_PRICE = 0.15
    settings.STORAGE_SHARE_OF_NODE_PRICE = 0.10
    settings.BUILD_COST_PER_KW = 10000.0
    settings.COST_CURRENCY = "USD"
    settings.RENTAL_GPU_HOUR_COST = 2.50


@pytest.fixture
def plan(db):
    """Two in-service nodes of 8 H100s on QM9700 leaves; a plan short of 30 nodes (as ``test_plan_bom``), priced at
    the catalog's list price (indicative: an estimate too)."""
    return bom_plan(build_lead_months=1)


def test_lines_are_named_by_their_item_and_explained_in_a_note(plan):
    bill = bom.derive(plan, "build", today=TODAY)
    names = [line.item for line in bill.lines]
    assert names == ["HGX H100 test", "H100 SXM 80GB", "Leaf switch NVIDIA QM9700",
                     "Storage for the planned workloads", "New cluster facility (power, cooling, space)"]
    for line in bill.lines:  # a name, not a sentence: no derivation, no figures, no colon
        assert ":" not in line.item and len(line.item) <= 60 and not re.search(r"\d+ ×", line.item)
    switches = bill.lines[2]
    assert switches.description.startswith("Leaf switch NVIDIA QM9700, 64 ports (32 to nodes")  # the note
    # Every price a rule derived is an estimate: the list price, the shares, the cost per kW; the GPUs are in the
    # node price (0), nothing to confirm.
    assert [line.estimated for line in bill.lines] == [True, False, True, True, True]
    assert bill.estimated == bill.total - bill.lines[1].total == bill.total


def test_fill_stores_name_note_and_the_estimate_flag(plan):
    bill, _ = bom.fill(plan, "build", today=TODAY)
    items = list(plan.items.order_by("pk"))
    assert [(i.what, i.price_estimated) for i in items] == [(line.item, line.estimated) for line in bill.lines]
    storage = next(i for i in items if i.description == "Storage for the planned workloads")
    assert storage.note.startswith("Storage for the planned workloads: ") and "% of the node price" in storage.note
    assert storage.unit_cost == Decimal("750000.00") and storage.price_confirmed_at is None
    # A node or GPU line is named by its catalog model, its description left empty.
    assert items[0].node_model.name == "HGX H100 test" and items[0].description == ""


def test_a_price_a_person_stated_is_no_estimate(plan):
    plan.node_price = Decimal("240000")
    plan.save()
    bill = bom.derive(plan, "expand", today=TODAY)
    assert bill.lines[0].item == "HGX H100 test" and not bill.lines[0].estimated
    assert [line.estimated for line in bill.lines[2:]] == [True, True]  # switches and storage still are


def test_confirm_records_who_and_when_and_refuses_twice(plan):
    bom.fill(plan, "build", today=TODAY)
    storage = plan.items.get(description="Storage for the planned workloads")
    viewer = make_user("val", VIEWER)
    with pytest.raises(PermissionDenied):
        bom.confirm_price(storage, viewer)
    buyer = make_user("pat", PROCUREMENT)  # procurement holds the quotes
    confirmed = bom.confirm_price(storage, buyer)
    assert (confirmed.price_estimated, confirmed.price_confirmed_by, confirmed.unit_cost) == (
        False, buyer, Decimal("750000.00"))
    assert confirmed.price_confirmed_at is not None
    record = PlanItem.history.filter(id=storage.pk).latest("history_date")
    assert record.history_change_reason == "Price confirmed at 750,000.00 USD" and not record.price_estimated
    with pytest.raises(ValidationError, match="not an estimate: confirmed by pat on"):
        bom.confirm_price(storage, make_user("ana", MANAGER))


def test_confirming_at_another_price_needs_a_draft(plan):
    bom.fill(plan, "expand", today=TODAY)
    switches = plan.items.get(description="Leaf switch NVIDIA QM9700")
    manager = make_user("ana", MANAGER)
    assert bom.confirm_price(switches, manager, Decimal("120000")).unit_cost == Decimal("120000.00")
    storage = plan.items.get(description="Storage for the planned workloads")
    plans.submit(plan, manager)
    with pytest.raises(ValidationError, match="only a draft plan can be changed"):
        bom.confirm_price(storage, manager, Decimal("1"))
    assert bom.confirm_price(storage, manager).unit_cost == Decimal("750000.00")  # as it stands: allowed


def totals_cell(html):
    return re.search(r'class="estimated-share" data-currency="USD">([^<]*)<', html).group(1)


def test_plan_page_flags_estimates_and_confirm_button(plan):
    bom.fill(plan, "build", today=TODAY)
    manager = make_user("ana", MANAGER)
    client = Client()
    client.force_login(manager)
    html = client.get(plan.get_absolute_url()).content.decode()
    storage = plan.items.get(description="Storage for the planned workloads")
    row = re.search(rf'<tr id="item-{storage.pk}"[^>]*>(.*?)</tr>', html, re.S).group(1)
    assert '<td class="item-name">Storage for the planned workloads</td>' in row
    assert 'data-price="estimate">Estimate</span>' in row and "Confirm price" in row
    assert "% of the node price per node" in row  # the note column
    # 30 nodes at 250,000 + 8 switches + storage + facility: all estimates; the GPUs at 0.
    assert totals_cell(html) == "of which 12,435,000.00 USD estimated, not confirmed"

    url = f"/planning/capacity-plans/{plan.pk}/items/{storage.pk}/confirm-price/"
    answer = client.post(url, HTTP_HX_REQUEST="true")
    part = answer.content.decode()
    assert "Confirmed the price of Storage for the planned workloads: 750,000.00 USD." in part
    row = re.search(rf'<tr id="item-{storage.pk}"[^>]*>(.*?)</tr>', part, re.S).group(1)
    assert re.search(r'data-price="confirmed">Confirmed by ana on \d{4}-\d\d-\d\d \d\d:\d\d', row)
    assert totals_cell(part) == "of which 11,685,000.00 USD estimated, not confirmed"
    again = client.post(url, follow=True)
    assert "not an estimate: confirmed by ana" in again.content.decode()

    viewer = Client()
    viewer.force_login(make_user("val", VIEWER))
    assert "Confirm price" not in viewer.get(plan.get_absolute_url()).content.decode()
    other = plan.items.get(description="Leaf switch NVIDIA QM9700")
    assert viewer.post(f"/planning/capacity-plans/{plan.pk}/items/{other.pk}/confirm-price/").status_code == 403
    assert PlanItem.objects.get(pk=other.pk).price_estimated


def test_fill_confirmation_page_shows_names_notes_and_the_estimated_total(plan):
    client = Client()
    client.force_login(make_user("ana", MANAGER))
    html = client.get(f"/planning/capacity-plans/{plan.pk}/bom/fill/?scenario=expand").content.decode()
    assert "<td>Leaf switch NVIDIA QM9700</td>" in html and '<span class="badge estimate">Estimate</span>' in html
    assert "of which 9,375,000.00 estimated until someone confirms the prices" in html


def test_api_bom_says_what_is_estimated(plan):
    manager = make_user("ana", MANAGER)
    bom.fill(plan, "expand", today=TODAY)
    storage = plan.items.get(description="Storage for the planned workloads")
    bom.confirm_price(storage, manager)
    plans.submit(plan, manager)
    plans.approve(plan, make_user("mia", MANAGER), "go")
    data = token_client(make_user("pat", PROCUREMENT)).get(f"/api/planning/plans/{plan.pk}/bom/").json()
    assert data["totals"] == {"USD": "9375000.00"} and data["estimated"] == {"USD": "8625000.00"}
    by_item = {line["item"]: line for line in data["lines"]}
    assert by_item["Storage for the planned workloads"]["price_estimated"] is False
    assert by_item["Storage for the planned workloads"]["price_confirmed_by"] == "ana"
    assert by_item["Leaf switch NVIDIA QM9700"]["price_estimated"] is True
    assert by_item["Leaf switch NVIDIA QM9700"]["note"].startswith("Leaf switch NVIDIA QM9700, 64 ports")


def test_api_confirms_a_price(plan):
    bom.fill(plan, "expand", today=TODAY)
    switches = plan.items.get(description="Leaf switch NVIDIA QM9700")
    url = f"/api/planning/plans/{plan.pk}/items/{switches.pk}/confirm-price/"
    assert token_client(make_user("val", VIEWER)).post(url, {}, format="json").status_code == 403
    buyer = token_client(make_user("pat", PROCUREMENT))
    answer = buyer.post(url, {"unit_cost": "130000.00"}, format="json")
    assert answer.status_code == 200, answer.data
    assert (answer.data["price_estimated"], answer.data["price_confirmed_by"], answer.data["unit_cost"]) == (
        False, "pat", "130000.00")
    again = buyer.post(url, {}, format="json")
    assert again.status_code == 400 and "not an estimate: confirmed by pat" in again.data["detail"]
    other = f"/api/planning/plans/{plan.pk}/items/999999/confirm-price/"
    assert buyer.post(other, {}, format="json").status_code == 404
