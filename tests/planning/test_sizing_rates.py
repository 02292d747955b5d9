"""The fleet's measured interruption rate in sizing (``planning.sizing.rates``): the Poisson interval, when the rate
is trusted, and the demo's simulated rate within the published range."""

import html
import math

import pytest
from django.urls import reverse

from planning.sizing import rates, sizing

pytestmark = pytest.mark.django_db

# Published interruption rates per GPU-day: Llama 3 (Dubey et al. 2024, §3.3.4: 419 in 54 days on 16,384 H100 =
# 0.00047) and Meta's research clusters (Kokolis et al. 2024: a few per 1,000 GPU-days), with some room either side.
PUBLISHED_RANGE = (0.0002, 0.005)


def test_the_demos_interruption_rate_is_within_the_published_range(settings, monkeypatch):
    """The inventory's part of ``seed_demo`` (fleet, two months of Slurm jobs, the week's telemetry, the faults and
    the interruptions they caused); the rate is counted from the rows it wrote, as the goodput page counts it."""
    from inventory import demo
    from inventory.goodput import queries

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    monkeypatch.setattr(demo, "seed_other_apps", lambda seeder, users: None)  # contracts, tickets, plans: not needed
    demo.seed_demo()
    rows = queries.goodput_by("gpu_model", "1y")
    interruptions = sum(row["interruptions"] for row in rows)
    gpu_days = sum(row["allocated_gpu_hours"] for row in rows) / 24
    assert interruptions >= 30 and gpu_days > 10_000  # enough for the rate to mean something
    assert PUBLISHED_RANGE[0] <= interruptions / gpu_days <= PUBLISHED_RANGE[1], (interruptions, gpu_days)


# --- the exact Poisson interval -----------------------------------------------------------------------------------


def poisson_tail(mean, low_end, high_end):
    """P(low_end ≤ X ≤ high_end) for X ~ Poisson(mean), summed term by term."""
    term, total = math.exp(-mean), 0.0
    for j in range(high_end + 1):
        if j >= low_end:
            total += term
        term *= mean / (j + 1)
    return total


@pytest.mark.parametrize("events, low, high", [
    (0, 0.0, 3.689),  # e^−μ = 0.025: μ = ln 40
    (3, 0.619, 8.767),
    (10, 4.795, 18.390),
    (100, 81.364, 121.627),
])
def test_exact_poisson_intervals(events, low, high):
    """The Garwood bounds as tables give them (e.g. Ulm 1990), and their definition: at the lower bound k or more
    events have a 2.5 % chance, at the upper bound k or fewer."""
    found = rates.poisson_interval(events)
    assert found == pytest.approx((low, high), abs=0.0006)
    if events:
        assert 1 - poisson_tail(found[0], 0, events - 1) == pytest.approx(0.025, abs=1e-9)
    assert poisson_tail(found[1], 0, events) == pytest.approx(0.025, abs=1e-9)
    assert rates.poisson_interval(0)[1] == pytest.approx(math.log(40))


def test_the_threshold_keeps_the_interval_within_a_factor_of_four():
    """Why 10 (module docstring): from there the 95 % interval's upper / lower bound is under 4."""
    ratio = [(high / low) for low, high in map(rates.poisson_interval, range(1, 30))]
    assert min(k for k, r in enumerate(ratio, start=1) if r < 4) == rates.MIN_INTERRUPTIONS == 10
    assert ratio[2] == pytest.approx(14.17, abs=0.01)  # 3 interruptions: the rate is known within 14×


# --- sizing with a measured rate: too few interruptions, enough ------------------------------------------------

H100 = "H100 SXM 80GB"
QUERY = {"params_billion": 7, "tokens_billion": 2000, "gpu_model": H100, "num_gpus": 512}
GPU_DAYS = 12_700
FEW, MANY = rates.MeasuredRate(H100, 3, GPU_DAYS * 24), rates.MeasuredRate(H100, 50, GPU_DAYS * 24)


def with_rate(monkeypatch, measured):
    """The fleet's measured rate of H100, as ``planning.goodput.measured_rates`` would give it."""
    from planning.sizing import views
    from planning.sizing.api import views as api_views

    for module in (views, api_views):
        monkeypatch.setattr(module, "measured_rates", lambda: {H100: measured})


def test_three_interruptions_keep_the_published_rate_and_say_why():
    catalog = sizing.catalog_gpus()
    figure = sizing.size(sizing.Workload(**QUERY), catalog, rates={H100: FEW}).figures["goodput"]
    published = sizing.size(sizing.Workload(**QUERY), catalog).figures["goodput"]
    assert figure.value == published.value and figure.source == sizing.GOODPUT_SOURCE
    assert figure.explanation.startswith("Published runs: 0.00047 interruptions per GPU-day × 512 GPUs")
    # 3 / 12,700 GPU-days; Garwood: 0.619 / 12,700 = 0.000049 to 8.767 / 12,700 = 0.00069.
    assert ("Only 3 interruptions measured on your fleet's H100 SXM 80GB (0.00024 per GPU-day, 95 % CI "
            "0.000049–0.00069, 3 interruptions over 12,700 GPU-days): too few to trust (at least 10 needed); using "
            "the published rate.") in figure.explanation


def test_fifty_interruptions_are_used_with_their_interval():
    figure = sizing.size(sizing.Workload(**QUERY), sizing.catalog_gpus(), rates={H100: MANY}).figures["goodput"]
    # 50 / 12,700 GPU-days = 0.0039; 512 GPUs × 0.0039 / 24 per GPU-hour × 0.309 h lost each.
    assert figure.value == pytest.approx(1 / (1 + 512 * 50 / (GPU_DAYS * 24) * sizing.HOURS_LOST_PER_INTERRUPTION))
    assert figure.source == "measured on your fleet: 50 interruptions over 304,800 GPU-hours"
    # Garwood for 50: 37.111 and 65.919 → 0.0029 and 0.0052 per GPU-day.
    assert figure.explanation.startswith("Measured on your fleet: 0.0039 interruptions per GPU-day over 304,800 "
                                         "GPU-hours of H100 SXM 80GB (95 % CI 0.0029–0.0052, 50 interruptions over "
                                         "12,700 GPU-days)")


def test_the_page_and_the_api_say_the_published_rate_is_used_for_three(monkeypatch, manager_client, manager_api):
    with_rate(monkeypatch, FEW)
    page = manager_client.get(reverse("planning:sizing"), QUERY)
    note = page.context["rate_basis"]["note"]
    assert note.startswith("Interruption rate: 0.00047 per GPU-day, published (Dubey et al. 2024")
    assert "Only 3 interruptions measured" in note and note.endswith("using the published rate.")
    assert f'<p class="muted wrap" id="interruption-rate">{note}</p>' in html.unescape(page.content.decode())
    assert page.context["add_form"].goodput_basis["measured"] is False  # a plan keeps the published basis
    body = manager_api.post("/api/planning/sizing/", QUERY, format="json").json()
    rate = body["interruption_rate"]
    assert (rate["used"], rate["measured"]["trusted"], rate["measured"]["interruptions"]) == ("published", False, 3)
    assert rate["per_gpu_day"] == pytest.approx(sizing.INTERRUPTIONS_PER_GPU_HOUR * 24)
    assert rate["note"] == note and rate["min_interruptions"] == 10
    assert body["figures"]["goodput"]["source"] == sizing.GOODPUT_SOURCE


def test_the_page_and_the_api_show_the_measured_rate_and_its_interval_for_fifty(monkeypatch, manager_client,
                                                                                  manager_api):
    with_rate(monkeypatch, MANY)
    page = manager_client.get(reverse("planning:sizing"), QUERY)
    text = "0.0039 per GPU-day (95 % CI 0.0029–0.0052, 50 interruptions over 12,700 GPU-days)"
    assert page.context["rate_basis"]["note"] == f"Interruption rate: {text}, measured on your fleet's {H100}."
    assert text in page.content.decode() and page.context["add_form"].goodput_basis["measured"] is True
    rate = manager_api.post("/api/planning/sizing/", QUERY, format="json").json()["interruption_rate"]
    low, high = rates.poisson_interval(50)
    assert rate["used"] == "measured" and rate["per_gpu_day"] == pytest.approx(50 / GPU_DAYS)
    assert rate["measured"]["ci95_per_gpu_day"] == pytest.approx([low / GPU_DAYS, high / GPU_DAYS])
    assert (rate["measured"]["trusted"], rate["measured"]["gpu_days"]) == (True, GPU_DAYS)
