"""The fleet's measured interruption rate in sizing (``planning.sizing.rates``): the Poisson interval, when the rate
is trusted, and the demo's simulated rate within the published range."""

import pytest

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
