"""The under-used rules as a domain expert would judge them, each answer written down before the rule ran.

Idle nodes are reclaimed only when their idleness persists against their own history (the 4 weeks before the window,
from the daily rollups), not in a holiday week the whole fleet shares; a node new to the fleet is raised at medium at
most. A team is told to ask for fewer GPUs only for GPU-hours its jobs held with nothing running on them: a team
starved by storage (held, 15–30 % busy) is a performance case, not an over-allocated one."""

from dataclasses import replace
from datetime import timedelta

import pytest

from inventory.models import TelemetrySource
from inventory.telemetry import allocation, rollups
from inventory.telemetry.models import GPUDaily, GPUHourly, SlurmJob
from planning.models import Recommendation
from planning.recommendations import gather, rules
from planning.recommendations import store as rec_store
from planning.recommendations.rules import idle as idle_rule
from tests.factories import make_gpu_model, make_node_model, make_site
from tests.planning.test_recommendations import add_partition
from tests.planning.test_under_used import END, FIRST_DAY, days_at, fleet

pytestmark = pytest.mark.django_db
HISTORY_START = FIRST_DAY - timedelta(days=29)  # Oct 26: the window starts on Nov 23, 06:00; its 4 weeks before


@pytest.fixture(autouse=True)
def default_cost(settings):
    settings.IDLE_GPU_HOUR_COST = 2.0
    settings.COST_CURRENCY = "USD"


def history(node, weekly_utils):
    """The node's 4 weeks before the window, oldest first, one utilization per week, written as the pull writes
    them: hourly rows, then the daily rollups (``rollups.refresh``)."""
    hours = [HISTORY_START + timedelta(days=day, hours=hour) for day in range(28) for hour in range(24)]
    GPUHourly.objects.bulk_create(GPUHourly(gpu=gpu, hour=hour, util_mean=weekly_utils[(hour - HISTORY_START).days
                                                                                         // 7], util_max=100.0)
                                  for hour in hours for gpu in node.gpus.all())
    rollups.refresh(set(hours))


def by_figure(entry):
    return {f["label"]: f["value"] for f in entry["figures"]}


# --- Idle nodes: hand-made cases -----------------------------------------------------------------------------


def idle(name, weeks_idle, weeks_observed, shared_days=0, idle_days=4, partition="p"):
    return rules.IdleNode(hash(name) % 1000, name, partition, 1, idle_days, 192.0, 188.16, 2.0, 2.0, False,
                          weeks_observed=weeks_observed, weeks_idle=weeks_idle, shared_idle_days=shared_days,
                          others_idle_share=0.1, fleet_util=50.0, fleet_history_util=55.0)


@pytest.mark.parametrize(("weeks_idle", "weeks_observed", "shared_days", "expected"), [
    (4, 4, 0, idle_rule.CONFIRMED),  # idle for 5 weeks: its trend
    (3, 4, 4, idle_rule.CONFIRMED),  # one busy week allowed; the fleet's quiet days do not matter with history
    (2, 4, 0, idle_rule.BUSY_BEFORE),  # busy in 2 of the 4 weeks before: this week is a dip
    (0, 4, 0, idle_rule.BUSY_BEFORE),
    (0, 0, 0, idle_rule.UNCONFIRMED),  # a new node idle alone
    (1, 1, 0, idle_rule.UNCONFIRMED),  # one week of history: not enough to confirm, not enough to contradict
    (0, 0, 3, idle_rule.SHARED_DIP),  # a new fleet's holiday: 3 of its 4 idle days shared by most of the fleet
    (0, 0, 2, idle_rule.UNCONFIRMED),  # half of them shared is not most
])
def test_what_an_idle_nodes_history_says(weeks_idle, weeks_observed, shared_days, expected):
    assert idle_rule.verdict(idle("n", weeks_idle, weeks_observed, shared_days)) == expected


def test_high_only_with_three_confirmed_nodes_and_the_passed_over_are_named():
    nodes = [idle(f"n{i}", 4, 4) for i in (1, 2, 3)] + [idle("dip", 0, 4), idle("new", 0, 0)]
    (found,) = rules.idle_nodes(nodes)
    assert found.severity == "high" and found.node_count == 4  # n1–n3 and the new one; not "dip"
    assert "dip" not in found.action and "Ask the owners of new first" in found.action
    history, dip = found.ruled_out
    assert history["kind"] == "own_history" and dip["kind"] == "fleet_wide_dip"
    assert by_figure(history) == {
        "Nodes idle in earlier weeks too": 3, "Nodes with too little history": 1,
        "Nodes passed over: busy in earlier weeks": 1, "Fewest idle weeks before, of the nodes raised": 0}
    assert "Passed over dip: busy in the weeks before (dip idle in 0 of 4)" in history["why"]
    assert "Not ruled out for new: no daily history before the window" in history["why"]
    # Unconfirmed nodes alone never go above medium, however many.
    (unconfirmed,) = rules.idle_nodes([idle(f"new{i}", 0, 0) for i in range(5)])
    assert unconfirmed.severity == "medium"
    assert rules.idle_nodes([idle("dip", 0, 4), idle("holiday", 0, 0, shared_days=4)]) == []


# --- Idle nodes: end to end, through the rollups ---------------------------------------------------------


def test_a_holiday_week_across_the_whole_fleet_reclaims_nothing():
    nodes = fleet()
    for node in nodes:
        history(node, [60, 55, 65, 60])  # a busy fleet for 4 weeks…
        days_at(node, [1, 1, 1, 1, 1, 1])  # …then everyone on holiday
    idle_nodes = gather.under_used(END)[0]
    assert sorted((n.hostname, n.idle_days, n.weeks_observed, n.weeks_idle) for n in idle_nodes) == [
        (f"hnd-00{i}", 6, 4, 0) for i in (1, 2, 3, 4)]
    n = idle_nodes[0]
    assert (round(n.fleet_util, 2), round(n.fleet_history_util, 2)) == (1.0, 60.0)  # (60+55+65+60) / 4
    assert (n.shared_idle_days, n.others_idle_share) == (6, 1.0)
    assert rules.idle_nodes(idle_nodes) == []
    rec_store.run(END)
    assert not Recommendation.objects.filter(kind="under_used").exists()


def test_a_node_idle_for_five_weeks_is_reclaimed_and_one_idle_this_week_only_is_passed_over():
    lasting, dip, busy, busier = fleet()
    history(lasting, [1, 1, 2, 1])
    days_at(lasting, [1] * 6)
    history(dip, [60, 60, 60, 60])
    days_at(dip, [60, 60, 1, 1, 1, 60])  # 3 idle days: the old rule's "reclaim"
    for node in (busy, busier):
        history(node, [60, 60, 60, 60])
        days_at(node, [60] * 6)
    (found,) = rules.idle_nodes(gather.under_used(END)[0])
    assert (found.node_count, found.severity) == (1, "medium")
    assert "return hnd-001 to the shared pool" in found.action and "hnd-002" not in found.action
    assert "hnd-001 was idle in at least 3 of the 4 weeks before as well" in found.summary
    # 6 days × 24 h × 2 GPUs at 1 %: 288 × 0.99 = 285.12 idle GPU-hours, × 2.00 = 570.24 USD.
    figures = {f["label"]: f for f in found.figures}
    assert figures["Idle GPU-hours (on idle days)"]["value"] == 285.12
    assert figures["Idle nodes confirmed by their own history"]["value"] == 1
    assert figures["Nodes"]["rows"][0]["idle_weeks_before"] == "4 of 4"
    history_entry, dip_entry = found.ruled_out
    assert "Passed over hnd-002: busy in the weeks before (hnd-002 idle in 0 of 4)" in history_entry["why"]
    assert by_figure(history_entry)["Nodes passed over: busy in earlier weeks"] == 1
    # The fleet before: 3 nodes at 60 % and hnd-001 at 1.25 % → (180 + 1.25) / 4 = 45.31 %.
    assert by_figure(dip_entry)["Fleet utilization in the weeks before"] == 45.31
    assert dip_entry["why"].startswith("Ruled out: the fleet worked as in the weeks before")
    assert dip_entry["label"] == "A dip of the whole fleet or partition (holiday, maintenance)"


def test_a_new_fleet_raises_a_lone_idle_node_at_medium_and_says_it_is_unconfirmed():
    lone, *others = fleet()
    days_at(lone, [1] * 6)
    for node in others:
        days_at(node, [60] * 6)
    assert not GPUDaily.objects.filter(day__lt=FIRST_DAY.date()).exists()
    (found,) = rules.idle_nodes(gather.under_used(END)[0])
    assert found.severity == "medium" and "too little history to confirm it" in found.summary
    history_entry = found.ruled_out[0]
    assert "Not ruled out for hnd-001: no daily history before the window" in history_entry["why"]
    assert by_figure(found.ruled_out[1])["Fleet's other nodes idle on these nodes' idle days (mean)"] == 0.0


def test_a_new_fleets_holiday_is_a_shared_dip_and_reclaims_nothing():
    for node in fleet():
        days_at(node, [60, 1, 1, 1, 1, 60])
    idle_nodes = gather.under_used(END)[0]
    assert [n.shared_idle_days for n in idle_nodes] == [4, 4, 4, 4]
    assert rules.idle_nodes(idle_nodes) == []


def test_a_new_partition_nobody_uses_is_raised_unconfirmed_beside_a_busy_one():
    spare = add_partition(make_site(name="Spare"), "spr", "spare", 3, make_node_model(name="4-GPU", gpu_slots=4),
                          make_gpu_model(name="spare GPU"))
    for node in spare:
        days_at(node, [1] * 6)
    for node in fleet(4):
        days_at(node, [60] * 6)
    idle_nodes = gather.under_used(END)[0]
    # Each spare node: 2 of the fleet's 6 other nodes idle (33 %: no holiday), both of its partition's (100 %).
    assert {(n.hostname, round(n.others_idle_share, 3), n.partition_idle_share) for n in idle_nodes} == {
        (f"spr-00{i}", 0.333, 1.0) for i in (1, 2, 3)}
    (found,) = rules.idle_nodes(idle_nodes)
    assert (found.partition, found.node_count, found.severity) == ("spare", 3, "medium")  # 3 nodes, none confirmed
    dip = found.ruled_out[1]
    assert by_figure(dip)["Partition's other nodes idle on these nodes' idle days (mean)"] == 100.0
    assert "Not ruled out for spr-001, spr-002, spr-003: most of the partition was idle with them" in dip["why"]


# --- Teams -------------------------------------------------------------------------------------------------


def hours_at(node, days, util_mean, util_max, memory_gb, first=0):
    """Hourly rows of every GPU of ``node`` for ``days`` whole days from FIRST_DAY + ``first``."""
    GPUHourly.objects.bulk_create(
        GPUHourly(gpu=gpu, hour=FIRST_DAY + timedelta(days=first + day, hours=hour), util_mean=util_mean,
                  util_max=util_max, mem_used_mean_gb=memory_gb)
        for day in range(days) for hour in range(24) for gpu in node.gpus.all())


def job(node, account, days, gpus, job_id):
    """A job of ``account`` holding ``gpus`` GPUs of ``node`` for ``days`` days from FIRST_DAY, stored as a pull
    stores it (its per-node rows from the host list)."""
    source = TelemetrySource.objects.get_or_create(name="slurm", kind="slurm", url="http://sim/jobs")[0]
    stored = SlurmJob.objects.create(
        source=source, job_id=job_id, partition="hand", account=account, state="COMPLETED", submit_time=FIRST_DAY,
        start_time=FIRST_DAY, end_time=FIRST_DAY + timedelta(days=days), nodes=node.hostname, node_count=1, gpus=gpus)
    allocation.save_allocations([stored], {(job_id, FIRST_DAY): [node.hostname]})


def test_a_storage_starved_team_is_not_told_to_ask_for_fewer_gpus():
    n1, n2 = fleet(2)
    # Bursts of full speed between I/O stalls: mean 15–30 %, max 90 %, the model in memory, for 3 days.
    hours_at(n1, 1, 15.0, 90.0, 30.0)
    hours_at(n1, 2, 30.0, 90.0, 30.0, first=1)
    job(n1, "starved", 3, 2, "1")
    hours_at(n2, 3, 0.0, 0.0, 0.0)  # an unallocated node beside it, idle: not the team's
    (team,) = gather.under_used(END)[1]
    # Held 3 × 24 × 2 = 144 GPU-hours, all running at low utilization; busy 48 × 0.15 + 96 × 0.30 = 36.
    assert (team.held_gpu_hours, team.unused_gpu_hours, team.low_util_gpu_hours) == (144.0, 0.0, 144.0)
    assert round(team.busy_gpu_hours, 2) == 36.0 and team.idle_cost == 0.0
    assert rules.over_allocated([team]) == []
    # The old rule (busy < 40 % of held) would have raised it: 25 % busy.
    assert team.busy_gpu_hours / team.held_gpu_hours < 0.4


def test_a_team_holding_gpus_with_no_process_is_raised_with_figures_by_hand():
    whole, half = fleet(2)
    hours_at(whole, 2, 0.0, 0.0, 0.0)  # two days held with nothing running on it (no process, no memory)
    hours_at(whole, 1, 0.0, 0.5, 20.0, first=2)  # a day a process sat on the GPUs, memory held, computing nothing
    job(whole, "notebooks", 3, 2, "1")
    hours_at(half, 3, 0.0, 0.0, 0.0)  # both GPUs idle; the team held one of them
    job(half, "notebooks", 3, 1, "2")
    (team,) = gather.under_used(END)[1]
    # Held: 144 (whole) + 72 (one GPU of half) = 216. Ran nothing: 96 (whole, 2 days) + 72 (half: of its 2 idle GPUs
    # one was unallocated, counted first) = 168. A process computing nothing: 48 (whole, day 3): not unused.
    assert (team.held_gpu_hours, team.unused_gpu_hours, team.stalled_gpu_hours) == (216.0, 168.0, 48.0)
    (found,) = rules.over_allocated([team])
    figures = {f["label"]: f["value"] for f in found.figures}
    assert figures["Held GPU-hours that ran nothing (no process)"] == 168.0
    assert figures["Unused share of the held GPU-hours"] == 77.8  # 168 / 216
    assert figures["Cost of the held, unused GPU-hours"] == 336.0  # 168 × 2.00 USD
    assert found.severity == "high"  # ≥ 60 %
    assert found.measured["unused_gpu_hours"] == 168.0 and found.measured["stalled_gpu_hours"] == 48.0
    (entry,) = found.ruled_out
    assert entry["kind"] == "low_utilization_not_unused"
    assert by_figure(entry)["Held GPU-hours with a process that computed nothing"] == 48.0
    assert "Not counted as unused: 48 held GPU-hours" in entry["why"]


def test_team_thresholds_by_hand():
    starved = rules.TeamUse("starved", held_gpu_hours=500.0, busy_gpu_hours=110.0, low_util_gpu_hours=500.0)
    assert rules.over_allocated([starved]) == []
    mixed = rules.TeamUse("mixed", held_gpu_hours=500.0, busy_gpu_hours=150.0, unused_gpu_hours=140.0,
                          low_util_gpu_hours=200.0, idle_cost=280.0, partitions={"p": 500.0})
    assert rules.over_allocated([mixed]) == []  # 28 % ran nothing: below 30 %
    mixed.unused_gpu_hours = 150.0
    (found,) = rules.over_allocated([mixed])
    assert found.severity == "medium"  # 30 %: at the threshold, below twice it
    entry = found.ruled_out[0]
    assert by_figure(entry)["Held GPU-hours busy at low utilization"] == 200.0
    assert "storage" in entry["why"] and "fewer GPUs would not fix it" in entry["why"]
    few = replace(mixed, account="few", held_gpu_hours=90.0, unused_gpu_hours=90.0)
    assert rules.over_allocated([few]) == []  # below 100 held GPU-hours: too few to judge
