"""The sizing page in the planning flow: its default GPU model is the fleet's, and it prices the run's GPU-hours
on the owned GPUs (from the contracts) and at the rental rate, the page and the API with the same figures."""

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from inventory.models import GPUModel, LifecycleState
from inventory.queries import most_common_gpu_model
from planning.models import Contract
from planning.sizing.views import display
from tests.factories import make_gpu, make_node, make_node_model, make_site

pytestmark = pytest.mark.django_db
H100 = "H100 SXM 80GB"
API = "/api/planning/sizing/"
QUERY = {"params_billion": 7, "tokens_billion": 2000, "gpu_model": H100, "mfu": 0.4, "goodput": 1}
TODAY = timezone.localdate()


def gpus(model, count, state=LifecycleState.IN_SERVICE, node=None):
    node = node or make_node()
    for _ in range(count):
        make_gpu(node=node, gpu_model=model, state=state)
    return node


def selected_gpu(client):
    html = client.get(reverse("planning:sizing")).content.decode()
    select = re.search(r'<select name="gpu_model".*?</select>', html, re.S).group(0)
    return re.findall(r'<option value="([^"]*)" selected>', select)


# --- the default GPU model ---

def test_default_gpu_model_is_the_fleets_most_common_in_service(viewer_client, django_assert_num_queries):
    catalog = list(GPUModel.objects.order_by("vendor", "name"))
    first, common, other = catalog[0], catalog[-1], catalog[1]
    gpus(first, 2)
    gpus(first, 6, state=LifecycleState.DELIVERED)  # not in service: does not count
    gpus(common, 3)
    with django_assert_num_queries(1):
        assert most_common_gpu_model() == common.name
    assert selected_gpu(viewer_client) == [common.name]
    gpus(other, 3)  # a tie is broken by name
    assert most_common_gpu_model() == min(common.name, other.name)


def test_without_gpus_in_service_the_catalogs_first_stays_the_default(viewer_client):
    gpus(GPUModel.objects.order_by("name").first(), 4, state=LifecycleState.DELIVERED)
    assert most_common_gpu_model() is None
    assert selected_gpu(viewer_client) == []  # none preselected: the browser shows the catalog's first


# --- the run's cost ---

@pytest.fixture
def priced_fleet(settings):
    """One node of 8 H100 (10.2 kW) bought for 560,640 over 48 months, and a rental contract at 3.00."""
    settings.ENERGY_PRICE_PER_KWH, settings.DEFAULT_PUE = 0.20, 1.3
    site = make_site()
    gpus(GPUModel.objects.get(name=H100), 8, node=make_node(site=site, node_model=make_node_model(max_power_w=10200)))
    purchase = Contract.objects.create(kind=Contract.Kind.PURCHASE, vendor="Acme", reference="PO-1",
                                       start=TODAY - timedelta(days=30), one_off_cost=Decimal("560640"),
                                       depreciation_months=48)
    purchase.sites.add(site)
    Contract.objects.create(kind=Contract.Kind.RENTAL, vendor="Cloud", reference="R-1",
                            start=TODAY - timedelta(days=30), gpu_hour_cost=Decimal("3.00"))
    # Owned: 560,640 / (48 × 730 × 8) = 2.00 amortisation + 10.2 kW / 8 × 1.3 × 0.20 = 0.3315 power = 2.3315.
    return Decimal("2.3315"), 3.00


def test_costs_hand_computed_with_sources_and_the_page_agrees(viewer_api, viewer_client, priced_fleet):
    owned_rate, rental_rate = priced_fleet
    body = viewer_api.post(API, QUERY, format="json").json()
    # 6 × 7e9 × 2e12 FLOP / (0.4 × 989.4e12 FLOP/s) / 3600 s = 58,958 GPU-hours.
    hours = body["figures"]["gpu_hours"]["value"]
    assert hours == pytest.approx(58_958, rel=1e-4)
    owned, rented = body["costs"]["owned_cost"], body["costs"]["rental_cost"]
    assert owned["value"] == pytest.approx(hours * float(owned_rate)) == pytest.approx(137_461, rel=1e-4)
    assert rented["value"] == pytest.approx(hours * rental_rate) == pytest.approx(176_874, rel=1e-4)
    assert owned["unit"] == rented["unit"] == "USD"
    assert "Acme PO-1" in owned["source"] and "PUE 1.3" in owned["source"] and "2.3315" in owned["explanation"]
    assert "Cloud R-1" in rented["source"] and "3.0000" in rented["explanation"]

    html = viewer_client.get(reverse("planning:sizing"), QUERY).content.decode()
    for key, figure in body["costs"].items():
        row = re.search(rf'<tr id="cost-{key}">.*?</tr>', html, re.S).group(0)
        assert f'data-figure="{key}" data-value="{figure["value"]}">{display(figure["value"])}</td>' in row
        assert "Acme PO-1" in html


def test_unknown_costs_are_said_never_zero(viewer_api, viewer_client, settings):
    settings.RENTAL_GPU_HOUR_COST = 2.5
    gpus(GPUModel.objects.get(name=H100), 8)  # owned by no contract
    costs = viewer_api.post(API, QUERY, format="json").json()["costs"]
    assert costs["owned_cost"]["value"] is None and costs["owned_cost"]["explanation"].startswith("Not known")
    assert costs["rental_cost"]["value"] == pytest.approx(58_958 * 2.5, rel=1e-4)
    assert "RENTAL_GPU_HOUR_COST" in costs["rental_cost"]["source"]
    html = viewer_client.get(reverse("planning:sizing"), QUERY).content.decode()
    assert re.search(r'<tr id="cost-owned_cost"><td>[^<]*</td><td class="num"[^>]*data-value="">unknown</td>', html)

    settings.RENTAL_GPU_HOUR_COST = 0
    rental = viewer_api.post(API, QUERY, format="json").json()["costs"]["rental_cost"]
    assert rental["value"] is None and rental["explanation"].startswith("Not known")
