"""Under-used recommendations (reclaim before you buy): idle nodes, teams holding GPUs they do not use, nodes stuck
before service; figures worked out by hand, accepting one makes a plan that says to reclaim, not buy."""

from dataclasses import replace
from datetime import timedelta

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.test.utils import CaptureQueriesContext

from inventory.models import LifecycleState, Node, StateTransition, TelemetrySource
from inventory.telemetry import allocation
from inventory.telemetry.models import GPUHourly, SlurmJob
from planning.models import Recommendation
from planning.plans import needs
from planning.recommendations import gather, rules
from planning.recommendations import store as rec_store
from tests.factories import make_gpu, make_gpu_model, make_node, make_node_model, make_site
from tests.planning.test_recommendations import END, add_partition

S = LifecycleState
pytestmark = pytest.mark.django_db
FIRST_DAY = END.replace(hour=0) - timedelta(days=6)  # Nov 24, 00:00 UTC: six whole days in the window


@pytest.fixture(autouse=True)
def default_cost(settings):
    settings.IDLE_GPU_HOUR_COST = 2.0  # no contract covers these nodes: the default prices them
    settings.COST_CURRENCY = "USD"


def fleet(count=4):
    return add_partition(make_site(name="Hand"), "hnd", "hand", count, make_node_model(name="2-GPU", gpu_slots=2),
                         make_gpu_model(name="hand GPU"))


def days_at(node, utils):
    """One GPUHourly row per GPU and hour for each whole day, at the day's utilization (``utils``: one per day)."""
    GPUHourly.objects.bulk_create(
        GPUHourly(gpu=gpu, hour=FIRST_DAY + timedelta(days=day, hours=hour), util_mean=util, util_max=util)
        for day, util in enumerate(utils) for hour in range(24) for gpu in node.gpus.all())


def test_idle_nodes_two_vs_three_days_and_four_vs_six_percent():
    three_at_4, two_at_4, three_at_6, busy = fleet()
    days_at(three_at_4, [4, 4, 4, 50, 50, 50])
    days_at(two_at_4, [4, 4, 50, 50, 50, 50])
    days_at(three_at_6, [6, 6, 6, 6, 50, 50])
    days_at(busy, [60] * 6)
    idle, _, _ = gather.under_used(END)
    assert [(n.hostname, n.idle_days) for n in idle] == [("hnd-001", 3)]
    (found,) = rules.idle_nodes(idle)
    figures = {f["label"]: f for f in found.figures}
    # 3 days × 24 h × 2 GPUs = 144 GPU-hours at 4 %: 144 × 0.96 = 138.24 idle GPU-hours, × 2.00 = 276.48 USD.
    assert figures["Idle GPU-hours (on idle days)"]["value"] == 138.24
    assert figures["Cost of the idle GPU-hours"]["value"] == 276.48
    assert "default 2.00 USD per GPU-hour" in figures["Cost of the idle GPU-hours"]["rule"]
    assert (found.key, found.partition, found.node_count) == ("under_used:idle:partition=hand", "hand", 1)
    assert "return hnd-001 to the shared pool" in found.action and "276 USD" in found.summary
    # Two idle days count with a threshold of two.
    loose = replace(rules.THRESHOLDS, idle_days=2)
    assert sorted(n.hostname for n in gather.under_used(END, loose)[0]) == ["hnd-001", "hnd-002"]


def test_a_day_with_few_readings_is_not_idle_and_nodes_out_of_service_do_not_count():
    sparse, repaired = fleet(2)
    GPUHourly.objects.bulk_create(  # 11 hours of readings a day: below the 12 needed
        GPUHourly(gpu=gpu, hour=FIRST_DAY + timedelta(days=day, hours=hour), util_mean=0, util_max=0)
        for day in range(6) for hour in range(11) for gpu in sparse.gpus.all())
    days_at(repaired, [0] * 6)
    Node.objects.filter(pk=repaired.pk).update(state=S.IN_REPAIR)
    assert gather.under_used(END)[0] == []


def test_the_idle_cost_says_what_priced_it():
    node = rules.IdleNode(1, "n1", "p", 1, 3, 100.0, 90.0, 10.0, 3.5, True)
    other = rules.IdleNode(2, "n2", "p", 1, 4, 100.0, 10.0, 90.0, 2.0, False)
    (found,) = rules.idle_nodes([node, other])
    cost = {f["label"]: f for f in found.figures}["Cost of the idle GPU-hours"]
    assert cost["value"] == 90 * 3.5 + 10 * 2.0  # 335.0
    assert cost["rule"].startswith("each node's cost per GPU-hour from its contracts (90 % of the GPU-hours)")


def jobs_on(node, account, utils, job_id):
    """A job of ``account`` holding ``node`` whole over the days, its GPUs at the days' utilization."""
    days_at(node, utils)
    source = TelemetrySource.objects.get_or_create(name="slurm", kind="slurm", url="http://sim/jobs")[0]
    job = SlurmJob.objects.create(
        source=source, job_id=job_id, partition="hand", account=account, state="COMPLETED",
        submit_time=FIRST_DAY, start_time=FIRST_DAY, end_time=FIRST_DAY + timedelta(days=len(utils)),
        nodes=node.hostname, node_count=1, gpus=2)
    allocation.save_allocations([job], {(job_id, FIRST_DAY): [node.hostname]})


def test_a_team_holding_gpus_that_ran_nothing_is_raised_one_running_slowly_or_healthily_never():
    n1, n2, n3, n4 = fleet()
    jobs_on(n1, "vision", [20, 20, 20], "1")  # held 3 × 24 × 2 = 144 GPU-h, all busy at 20 %: slow, not unused
    jobs_on(n2, "nlp", [60, 60, 60], "2")  # 60 %: healthy
    jobs_on(n3, "tiny", [0], "3")  # 48 GPU-h that ran nothing: too few GPU-hours to judge
    jobs_on(n4, "idlers", [0, 0, 60], "4")  # 144 GPU-h held, 96 of them ran nothing (two days × 24 h × 2 GPUs)
    teams = {t.account: t for t in gather.under_used(END)[1]}
    assert (teams["vision"].held_gpu_hours, round(teams["vision"].busy_gpu_hours, 2)) == (144.0, 28.8)
    assert (teams["vision"].unused_gpu_hours, teams["vision"].low_util_gpu_hours) == (0.0, 144.0)
    assert (teams["nlp"].held_gpu_hours, round(teams["nlp"].busy_gpu_hours, 2)) == (144.0, 86.4)
    assert (teams["idlers"].unused_gpu_hours, teams["idlers"].low_util_gpu_hours) == (96.0, 0.0)
    (found,) = rules.over_allocated(teams.values())
    figures = {f["label"]: f["value"] for f in found.figures}
    assert found.key == "under_used:team=idlers" and found.partition == "hand"
    assert figures["Unused share of the held GPU-hours"] == 66.7  # 96 / 144
    assert figures["Cost of the held, unused GPU-hours"] == 96 * 2.0  # 192.0
    assert found.severity == "high"  # ≥ 60 %: twice the 30 % threshold
    assert "shared partition" in found.action


def test_nodes_in_burn_in_for_3_vs_30_days():
    site = make_site(name="Basel")
    recent, stuck = (make_node(site=site, hostname=name, state=S.BURN_IN) for name in ("bsl-new", "bsl-old"))
    for slot in range(4):
        make_gpu(node=stuck, slot=slot)
    node_type = ContentType.objects.get_for_model(Node)
    for node, days in ((recent, 3), (stuck, 30)):  # the record of the move to burn-in, dated back
        StateTransition.objects.filter(content_type=node_type, object_id=node.pk).delete()
        StateTransition.objects.create(content_type=node_type, object_id=node.pk, from_state=S.DELIVERED,
                                       to_state=S.BURN_IN, username="ops", created=END - timedelta(days=days))
    stuck_nodes = gather.under_used(END)[2]
    assert [(n.hostname, n.days, n.gpus) for n in stuck_nodes] == [("bsl-old", 30, 4)]
    (found,) = rules.stuck_nodes(stuck_nodes)
    figures = {f["label"]: f["value"] for f in found.figures}
    assert figures["GPU-hours unused since"] == 4 * 30 * 24  # 2,880
    assert figures["Cost of those GPU-hours"] == 2880 * 2.0
    assert "bsl-old (burn-in for 30 days)" in found.summary and "Chase the vendor" in found.action


def test_under_used_reads_a_constant_number_of_queries():
    nodes = fleet(2)
    days_at(nodes[0], [1, 1, 1])
    jobs_on(nodes[1], "vision", [10, 10, 10], "1")
    ContentType.objects.clear_cache()
    with CaptureQueriesContext(connection) as few:
        gather.under_used(END)
    more = add_partition(nodes[0].site, "hnx", "hand2", 6, nodes[0].node_model, nodes[0].gpus.first().gpu_model)
    for k, node in enumerate(more):
        days_at(node, [1, 1, 1]) if k % 2 else jobs_on(node, f"team{k}", [10, 10, 10], f"x{k}")
    ContentType.objects.clear_cache()
    with CaptureQueriesContext(connection) as many:
        idle, teams, _ = gather.under_used(END)
    assert len(idle) == 4 and len(teams) == 4
    assert len(many) == len(few)


def test_run_writes_it_and_accepting_makes_a_plan_that_reclaims_not_buys(manager, manager_client):
    (node,) = fleet(1)
    days_at(node, [2, 2, 2, 2])
    rec_store.run(END)
    rec = Recommendation.objects.get(kind="under_used")
    page = manager_client.get(rec.get_absolute_url()).content.decode()
    assert "Under-used" in page and "Idle gpu hours" in page and "hnd-001" in page
    rec = rec_store.accept(rec, manager)
    assert rec.plan.items.count() == 0  # nothing to buy
    need = needs.need_for(rec, END.date().replace(day=1), 12)
    assert need.topic == "Reclaim, not buy" and need.node_count == 0
    assert "reclaim them first" in need.headline(None)
    analysis = manager_client.get(f"{rec.plan.get_absolute_url()}analysis/").content.decode()
    assert "Reclaim, not buy: " in analysis and "reclaim them first" in analysis


def test_dismissing_an_under_used_one(manager):
    (node,) = fleet(1)
    days_at(node, [0, 0, 0])
    rec_store.run(END)
    rec = rec_store.dismiss(Recommendation.objects.get(kind="under_used"), manager, "Reserved for a launch")
    assert rec.status == "dismissed"
    assert rec_store.run(END + timedelta(hours=1))["skipped"] == 1
