"""Recommendation rules hold on variations of the same situation, not on one canned case (issue 14): the
storage-bound rule on bursty and on steadily starved GPUs (DCGM profiling), healthy partitions that must raise
nothing, host names as Slurm prints them against FQDNs in the inventory, and hardware tickets people filed
counted by the ageing rule. The fleets are the simulator's scenarios of ``test_recommendations``."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from django.db.models import F, Value
from django.db.models.functions import Concat, Upper

from inventory.models import Node
from planning import recommendations as recs
from support.models import Ticket
from tests.factories import make_ticket
from tests.test_recommendations import (  # noqa: F401  (module fixtures)
    SCENARIO_PARTITIONS,
    TODAY,
    gathered,
    gathered_scenarios,
    scenario_fleet,
    scenarios,
)


def test_storage_bound_on_bursty_and_on_steadily_starved_gpus(db, scenarios):  # noqa: F811
    bursty = scenarios["a100-legacy"]
    assert bursty.engine_hours == bursty.busy_hours  # the simulator reports DCGM profiling fields
    assert "bursts of full speed between stalls" in recs.storage_bound(bursty).summary
    # The same allocation, but steady utilization and a graphics engine active a fifth of the time.
    steady = replace(bursty, busy_util=82.0, stall_share=0.05, engine_active=0.2)
    finding = recs.storage_bound(steady)
    assert finding is not None and finding.severity == "high"  # 20 % < 0.7 × 35 %
    assert "graphics engines were active only 20 % of the time, steadily" in finding.summary
    figures = {f["label"]: f["value"] for f in finding.figures}
    assert figures["Graphics engine active (DCGM profiling)"] == 20.0
    assert recs.storage_bound(replace(steady, engine_active=0.3)).severity == "medium"


def test_storage_bound_not_on_healthy_or_thinly_measured_partitions(db, scenarios):  # noqa: F811
    bursty = scenarios["a100-legacy"]
    healthy = replace(bursty, busy_util=85.0, stall_share=0.1, engine_active=0.9)
    assert recs.storage_bound(healthy) is None
    # Low activity, but the profiling fields cover only a fifth of the GPU-hours: not enough to say.
    thin = replace(healthy, engine_active=0.2, engine_hours=0.2 * bursty.busy_hours)
    assert recs.storage_bound(thin) is None
    # Starved GPUs nobody holds are the scheduler's business, not the storage's.
    assert recs.storage_bound(replace(healthy, engine_active=0.2, allocated_gpu_hours=0.5 * bursty.gpu_hours)) is None
    for name in SCENARIO_PARTITIONS:  # and the simulator's healthy partitions stay quiet with both signs read
        if name != "a100-legacy":
            assert recs.storage_bound(scenarios[name]) is None, name


def test_allocated_share_never_exceeds_one(db, scenarios):  # noqa: F811
    p = scenarios["train-h200"]
    # Three times the observed GPU-hours allocated (GPUs that did not report): 100 %, not 300 %.
    assert replace(p, allocated_gpu_hours=3 * p.gpu_hours).allocated_share == 1.0


def fqdn_fleet_with_tickets():
    """The scenario fleet, then: the inventory holds the train-h100 nodes as ZRH-H100-00N.ZRH.EXAMPLE.ORG while
    Slurm's jobs still say zrh-h100-00N; lys-res-002 (one day moved to degraded: not repeated) gets a hardware
    ticket a person filed against one of its GPUs on another day, plus a telemetry ticket and a software ticket
    that must not count (a telemetry ticket's fault is already the move to degraded)."""
    scenario_fleet()
    Node.objects.filter(partition="train-h100").update(
        hostname=Concat(Upper(F("hostname")), Value(".ZRH.EXAMPLE.ORG")))
    gpu = Node.objects.get(hostname="lys-res-002").gpus.first()
    created = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
    for days, source, category in ((0, Ticket.Source.TELEMETRY, Ticket.Category.HARDWARE),
                                   (0, Ticket.Source.PERSON, Ticket.Category.SOFTWARE),
                                   (1, Ticket.Source.PERSON, Ticket.Category.HARDWARE)):
        ticket = make_ticket(gpu=gpu, category=category, source=source)
        Ticket.objects.filter(pk=ticket.pk).update(created=created + timedelta(days=days))


@pytest.fixture(scope="module")
def variant(django_db_setup, django_db_blocker):
    return gathered(django_db_blocker, fqdn_fleet_with_tickets)


def test_rules_match_slurm_short_names_to_fqdns_in_any_case(db, gathered_scenarios, variant):  # noqa: F811
    # The same jobs are measured (without matching, none would be); utilization within a point (the fleet is
    # built again, and the simulator's backfill differs a little from one build to the next).
    before = {w.label: (w.jobs, w.util) for w in gathered_scenarios[0]["train-h100"].widths}
    after = variant[0]["train-h100"]
    assert {w.label: w.jobs for w in after.widths} == {label: jobs for label, (jobs, _) in before.items()}
    for w in after.widths:
        assert w.util == pytest.approx(before[w.label][1], abs=1.0)
    assert recs.network_bound(after) is not None


def test_ageing_counts_hardware_tickets_people_filed(db, gathered_scenarios, variant):  # noqa: F811
    assert {n.hostname: n for n in gathered_scenarios[1]}["lys-res-002"].fault_days == 1
    health = {n.hostname: n for n in variant[1]}
    assert health["lys-res-002"].fault_days == 2
    assert any(recs.is_ageing(health["lys-res-002"], TODAY))
