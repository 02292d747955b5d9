"""Planning's side of goodput (issue 20): the checkpoint interval of a plan's workload in the estimate of what an
interruption lost, the reliability-bound recommendation, sizing on the measured interruption rate and a workload's
time to result (hand-built fleet of ``tests.helpers.goodput``)."""

import re

import pytest
from django.test.utils import override_settings

from inventory.goodput import recording
from inventory.goodput.models import Interruption
from planning.plans.forecast import add_months
from planning.plans.models import CapacityPlan
from planning.recommendations import gather, rules, store
from planning.recommendations.models import Recommendation
from planning.sizing import rates, sizing
from tests.factories import CapacityPlanFactory, PlanWorkloadFactory
from tests.helpers.goodput import MIN, H, add_job, make_goodput_fleet
from tests.helpers.telemetry import freeze_now

pytestmark = pytest.mark.django_db


@pytest.fixture
def now(monkeypatch):
    return freeze_now(monkeypatch)


@pytest.fixture
def fleet(now):
    return make_goodput_fleet(now)


def planned(account, status, checkpoint_hours=None, **extra):
    inputs = {"params_billion": 70, "tokens_billion": 2000}
    if checkpoint_hours is not None:
        inputs["checkpoint_interval_hours"] = checkpoint_hours
    return PlanWorkloadFactory(plan=CapacityPlanFactory(status=status), slurm_account=account, inputs=inputs,
                               **extra)


def lost(now):
    recording.record_interruptions(now - 48 * H, now + MIN, now)
    return {row.job.job_id: row for row in Interruption.objects.select_related("job")}


def test_an_interruption_of_a_planned_account_uses_the_plans_checkpoint_interval(fleet, now):
    planned("vision", CapacityPlan.Status.APPROVED, checkpoint_hours=0.5)
    planned("vision", CapacityPlan.Status.DRAFT, checkpoint_hours=3)  # a draft is no decided run: ignored
    rows = lost(now)
    # J1 ran 4.5 h: a checkpoint every 30 min, so no work lost, only the 1 h wait × 8 GPUs. J2 ran 4.25 h: 15 min
    # since the last checkpoint × 8 GPUs = 2, + 8 of wait.
    assert (rows["1"].checkpoint_minutes, rows["1"].lost_run_gpu_hours, rows["1"].lost_gpu_hours) == (30, 0.0, 8.0)
    assert (rows["2"].checkpoint_minutes, rows["2"].lost_run_gpu_hours, rows["2"].lost_gpu_hours) == (30, 2.0, 10.0)


def test_an_unplanned_account_or_a_plan_without_the_input_gets_the_defaults(fleet, now, settings):
    settings.GOODPUT_CHECKPOINT_MINUTES = 45
    planned("vision", CapacityPlan.Status.REJECTED, checkpoint_hours=0.5)
    assert lost(now)["1"].checkpoint_minutes == 45  # no approved plan: the portal's default
    Interruption.objects.all().delete()
    planned("vision", CapacityPlan.Status.APPROVED)  # no interval given: sizing's default, 1 h
    assert lost(now)["1"].checkpoint_minutes == 60


# --- reliability-bound ----------------------------------------------------------------------------------------


def reliability(now, **thresholds):
    recording.record_interruptions(now - 48 * H, now + MIN, now)
    t = rules.Thresholds(**thresholds)
    return [f for r in gather.reliability(now, t) if (f := rules.reliability_bound(r, t))]


@override_settings(IDLE_GPU_HOUR_COST=2.0, RELIABILITY_LOST_SHARE=0.02)
def test_reliability_bound_on_a_hand_built_partition(fleet, now):
    # Partition train (team vision) over the 7-day window: 130 allocated GPU-hours; J1's NODE_FAIL on n1 lost 4
    # GPU-hours of work (0.5 h × 8 since its last hourly checkpoint) and then waited 8 (1 h × 8) to restart, J2's
    # XID 79 on n2 lost 2 (0.25 h × 8) and waited 8: 6 of work lost, 6 / 130 = 4.6 % > 2 % (high: at least twice
    # the limit); goodput ratio (130 − 6) / 130 = 0.9538 = 1 − 4.6 %. The 16 GPU-hours of wait are shown apart;
    # the 22 together cost 44 USD at the default 2.0. Partition infer only had the users' failures: not raised.
    [found] = reliability(now)
    figures = {f["label"]: f for f in found.evidence["figures"]}
    assert (found.kind, found.key, found.partition, found.severity) == (
        "reliability_bound", "reliability_bound:partition=train", "train", "high")
    assert figures["Infrastructure interruptions"]["value"] == 2
    assert figures["Lost work (since the last checkpoint, estimate)"]["value"] == 6.0
    assert figures["Restart wait (not in the lost share)"]["value"] == 16.0
    assert figures["Allocated GPU-hours"]["value"] == 130.0
    assert (figures["Lost share of the allocated GPU-hours"]["value"],
            figures["Lost share of the allocated GPU-hours"]["rule"]) == (4.6, "> 2 %")
    assert figures["Goodput ratio"]["value"] == 95.4  # %
    assert figures["Cost of the lost work and the restart wait"]["value"] == 44.0
    assert [(n["hostname"], n["interruptions"], n["lost_work_gpu_hours"], n["restart_wait_gpu_hours"], n["lost_cost"],
             n["repeat_offender"]) for n in figures["Worst nodes"]["rows"]] == [
        ("n1", 1, 4.0, 8.0, 24.0, False), ("n2", 1, 2.0, 8.0, 20.0, False)]
    assert figures["Reasons"]["rows"] == [
        {"reason": "Node failure (Slurm NODE_FAIL)", "interruptions": 1},
        {"reason": "GPU fell off the bus (XID 79) near the end", "interruptions": 1}]
    assert [(m["gpu_model"], m["interruptions"], m["lost_work_gpu_hours"]) for m in figures["GPU models"]["rows"]] == [
        ("M1", 2, 6.0)]
    assert "every 60 min" in found.summary and "4.6 %" in found.summary and "goodput ratio 95.4 %" in found.summary
    [wait] = found.evidence["ruled_out"]
    assert (wait["kind"], wait["label"]) == ("restart_wait", "Restart wait after interruptions")
    assert wait["why"].startswith("Not counted as lost work") and "Capacity idle, not work redone" in wait["why"]
    assert [(f["value"], f["unit"]) for f in wait["figures"]] == [(16.0, "GPU-h"), (16.9, "%")]  # 22 / 130
    assert "Burn in" in found.action and "spare nodes" in found.action and "checkpoint interval" in found.action
    assert "repeat offenders" not in found.action  # one interruption per node: none repeats


@override_settings(IDLE_GPU_HOUR_COST=2.0)
def test_a_repeat_offender_is_named_for_replacement(fleet, now):
    # A third vision job on n1, −1 → −0.5 h, ended by a NODE_FAIL: n1 has 2 interruptions.
    at = fleet["h"]
    add_job(fleet["source"], "9", fleet["nodes"]["n1"], 8, at - H, at - H, at - H / 2, "NODE_FAIL")
    [found] = reliability(now)
    rows = {f["label"]: f for f in found.evidence["figures"]}["Worst nodes"]["rows"]
    assert [(n["hostname"], n["interruptions"], n["repeat_offender"]) for n in rows][0] == ("n1", 2, True)
    assert "replace or repair the repeat offenders n1" in found.action


def test_reliability_bound_is_never_raised_on_a_healthy_partition(fleet, now):
    # Under the limit (4.6 % of work lost ≤ 5 %): no finding for train, though work and restart wait together are
    # 16.9 % (the wait is idle capacity, not lost work); infer's only failures are the users'.
    assert reliability(now, reliability_lost_share=0.05) == []


@override_settings(RELIABILITY_LOST_SHARE=0.02)
def test_the_analysis_writes_the_reliability_recommendation(fleet, now):
    recording.record_interruptions(now - 48 * H, now + MIN, now)
    store.run(now)
    rec = Recommendation.objects.get(kind=Recommendation.Kind.RELIABILITY)
    measured = rec.evidence["measured"]
    assert (rec.partition, rec.status, measured["lost_run_gpu_hours"], measured["lost_wait_gpu_hours"],
            measured["lost_gpu_hours"], measured["lost_share"]) == ("train", "open", 6.0, 16.0, 22.0, 0.0462)
    assert not Recommendation.objects.filter(kind=Recommendation.Kind.RELIABILITY, partition="infer").exists()


# --- sizing on the fleet's measured interruption rate ---------------------------------------------------------

SIZING_API = "/api/planning/sizing/"
BODY = {"params_billion": 1, "tokens_billion": 30, "num_gpus": 64}


def test_sizing_uses_a_measured_rate_when_given(monkeypatch):
    monkeypatch.setattr(rates, "MIN_INTERRUPTIONS", 2)  # the 2 below, trusted here (sizing needs 10)
    gpus = {"G": sizing.GPU("G", 80, 989, 1979, 700, 900)}
    workload = sizing.Workload(gpu_model="G", **BODY)
    published = sizing.size(workload, gpus)["goodput"]
    measured = sizing.size(workload, gpus, rates={"G": sizing.MeasuredRate("G", 2, 130.0)}).figures["goodput"]
    # 2 interruptions / 130 GPU-hours × 64 GPUs × 0.31 h lost each (the published loss per interruption).
    lost = 64 * 2 / 130 * sizing.HOURS_LOST_PER_INTERRUPTION
    assert measured.value == pytest.approx(1 / (1 + lost))
    assert published == pytest.approx(1 / (1 + 64 * sizing.INTERRUPTIONS_PER_GPU_HOUR
                                           * sizing.HOURS_LOST_PER_INTERRUPTION))
    assert measured.explanation.startswith("Measured on your fleet: 0.37 interruptions per GPU-day over 130 "
                                           "GPU-hours of G")
    assert measured.source == "measured on your fleet: 2 interruptions over 130 GPU-hours"


@override_settings(SIZING_MEASURED_MIN_GPU_HOURS=100)
def test_sizing_api_uses_the_fleets_rate_for_a_model_with_history(fleet, now, viewer_api, monkeypatch):
    monkeypatch.setattr(rates, "MIN_INTERRUPTIONS", 2)  # the fleet's 2, trusted here (sizing needs 10)
    # Over 30 days M1 (n1, n2) held 130 allocated GPU-hours with 2 infrastructure interruptions: history enough
    # (≥ 100 here); M2 (n3) held 8: the published rate.
    recording.record_interruptions(now - 48 * H, now + MIN, now)
    m1 = viewer_api.post(SIZING_API, {"gpu_model": "M1", **BODY}, format="json").json()["figures"]["goodput"]
    assert m1["source"] == "measured on your fleet: 2 interruptions over 130 GPU-hours"
    assert "0.37 interruptions per GPU-day over 130 GPU-hours of M1" in m1["explanation"]
    assert m1["value"] == pytest.approx(1 / (1 + 64 * 2 / 130 * sizing.HOURS_LOST_PER_INTERRUPTION), abs=1e-4)
    m2 = viewer_api.post(SIZING_API, {"gpu_model": "M2", **BODY}, format="json").json()["figures"]["goodput"]
    assert m2["source"] == sizing.GOODPUT_SOURCE and m2["explanation"].startswith("Published runs")


def test_sizing_keeps_the_published_rate_without_enough_history(fleet, now, viewer_api, viewer_client):
    # 130 GPU-hours is far below the default 10,000: the published rate, on the API and on the page.
    recording.record_interruptions(now - 48 * H, now + MIN, now)
    m1 = viewer_api.post(SIZING_API, {"gpu_model": "M1", **BODY}, format="json").json()["figures"]["goodput"]
    assert m1["source"] == sizing.GOODPUT_SOURCE
    page = viewer_client.get("/planning/sizing/", {"gpu_model": "M1", **BODY}).content.decode()
    assert "Published runs: " in page and "Measured on your fleet" not in page


# --- time to result -----------------------------------------------------------------------------------------


@pytest.fixture
def timed_plan(fleet, now):
    """A plan from the month of the fleet's first job: vision (J1, J2, J5 ended; J6 running), speech (J3, J4
    ended), a workload without an account, and one of vision starting next month (no jobs yet)."""
    month = (fleet["h"] - 12 * H).date().replace(day=1)
    plan = CapacityPlanFactory(first_month=month, horizon_months=3)
    make = lambda name, account, start=month: PlanWorkloadFactory(  # noqa: E731
        plan=plan, name=name, slurm_account=account, start=start, gpu_model=fleet["models"][0])
    return plan, {"vision": make("vision run", "vision"), "speech": make("speech run", "speech"),
                  "none": make("no account", ""), "later": make("later", "vision", add_months(month, 1))}


def estimate_days(workload):
    return sizing.size(workload.workload(), sizing.catalog_gpus())["wall_clock_days"]


def test_time_to_result_on_the_plan_page_and_api(timed_plan, fleet, now, viewer_client, viewer_api):
    plan, w = timed_plan
    h = fleet["h"]
    # speech: first submit h − 4 (J3), last end h − 2 (J4): 2 h = 0.0833 days. vision: first submit h − 11 (J1),
    # J6 still runs: to now (h + 0.5), 11.5 h = 0.4792 days so far.
    speech_days, vision_days = 2 / 24, 11.5 / 24
    body = {row["name"]: row["time_to_result"]
            for row in viewer_api.get(f"/api/planning/plans/{plan.pk}/").json()["workloads"]}
    speech = body["speech run"]
    assert (speech["jobs"], speech["running"], speech["days"]) == (2, 0, round(speech_days, 3))
    assert speech["first_submit"].startswith((h - 4 * H).strftime("%Y-%m-%dT%H:%M"))
    assert speech["last_end"].startswith((h - 2 * H).strftime("%Y-%m-%dT%H:%M"))
    assert speech["estimate_days"] == pytest.approx(estimate_days(w["speech"]), abs=1e-3)
    assert speech["ratio"] == pytest.approx(speech_days / estimate_days(w["speech"]), abs=1e-4)  # 4 decimals
    vision = body["vision run"]
    assert (vision["jobs"], vision["running"], vision["days"], vision["last_end"]) == (
        4, 1, round(vision_days, 3), None)
    assert body["no account"] is None
    assert (body["later"]["jobs"], body["later"]["days"], body["later"]["ratio"]) == (0, None, None)
    html = viewer_client.get(plan.get_absolute_url()).content.decode()
    shown = re.search(rf'id="time-to-result-{w["speech"].pk}">([^<]*)<', html).group(1)
    assert shown == (f"Time to result: 0.1 days, first submit to last end of 2 jobs under speech against the "
                     f"plan&#x27;s {estimate_days(w['speech']):,.1f} days "
                     f"({speech_days / estimate_days(w['speech']):.2f}×).")
    assert "0.5 days so far (1 still running)" in re.search(
        rf'id="time-to-result-{w["vision"].pk}">([^<]*)<', html).group(1)
    assert f'id="time-to-result-{w["none"].pk}"' not in html


def test_time_to_result_reads_the_jobs_once_for_a_list_of_plans(timed_plan, viewer_api, django_assert_max_num_queries):
    viewer_api.get("/api/planning/plans/")
    for _ in range(3):
        PlanWorkloadFactory(plan=CapacityPlanFactory(), slurm_account="vision")
    with django_assert_max_num_queries(20) as few:
        viewer_api.get("/api/planning/plans/")
    for _ in range(3):  # three more plans with workloads: no more queries
        PlanWorkloadFactory(plan=CapacityPlanFactory(), slurm_account="speech")
    with django_assert_max_num_queries(len(few.captured_queries)):
        viewer_api.get("/api/planning/plans/")


@override_settings(RELIABILITY_LOST_SHARE=0.02)
def test_the_reliability_recommendations_page_shows_its_tables(fleet, now, viewer_client):
    recording.record_interruptions(now - 48 * H, now + MIN, now)
    store.run(now)
    rec = Recommendation.objects.get(kind=Recommendation.Kind.RELIABILITY)
    html = viewer_client.get(rec.get_absolute_url()).content.decode()
    assert "<h2>Nodes <span" in html and "<td>n1</td>" in html
    assert "<h2>Reasons <span" in html and "<td>Node failure (Slurm NODE_FAIL)</td>" in html
    assert "<h2>GPU models <span" in html and "<td>M1</td>" in html
