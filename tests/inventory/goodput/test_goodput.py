"""Goodput on a hand-built fleet (``tests.helpers.goodput``): interruptions recorded and attributed, the lost
GPU-hours worked out by hand, the goodput figures per group, ``/api/inventory/goodput/`` and
``/api/inventory/interruptions/`` (filters, 400s, permissions, constant queries)."""


import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings
from rest_framework.test import APIClient

from inventory.goodput import hooks, queries, recording
from inventory.goodput.models import Interruption
from inventory.goodput.tasks import record_interruptions
from inventory.models import GPU
from tests.helpers.goodput import MIN, H, add_job, degrade, make_goodput_fleet, xid

GOODPUT = "/api/inventory/goodput/"
INTERRUPTIONS = "/api/inventory/interruptions/"

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet(now):
    return make_goodput_fleet(now)


def record(now):
    return recording.record_interruptions(now - 48 * H, now + MIN, now)


def rows():
    return {row.job.job_id: row for row in Interruption.objects.select_related("job")}


def test_each_job_is_attributed_as_the_issue_says(fleet, now):
    assert record(now) == {"interruptions": 4, "infrastructure": 2, "deleted": 0}
    found = rows()
    n1, n2 = fleet["nodes"]["n1"], fleet["nodes"]["n2"]
    # A NODE_FAIL: the infrastructure's, on the job's one node.
    assert (found["1"].cause, found["1"].reason, found["1"].node, found["1"].xid_event) == (
        "infrastructure", "node_fail", n1, None)
    # Killed 2 minutes after an XID 79 on its node: the infrastructure's, linked to the event, GPU and node.
    assert (found["2"].cause, found["2"].reason, found["2"].xid_event, found["2"].gpu, found["2"].node) == (
        "infrastructure", "xid_79", fleet["events"]["xid79"], GPU.objects.get(node=n2, slot=0), n2)
    assert found["2"].fault_ts == fleet["h"] - 4 * H - 2 * MIN
    # An OOM, and a failure on a healthy node (an application XID is the job's own): the user's, no estimate.
    assert (found["3"].cause, found["3"].reason, found["3"].lost_gpu_hours) == ("user", "oom", None)
    assert (found["4"].cause, found["4"].reason, found["4"].xid_event) == ("user", "failed", None)
    assert "5" not in found and "6" not in found  # completed, running


def test_lost_gpu_hours_by_hand(fleet, now):
    record(now)
    j2 = rows()["2"]
    # J2 ran 4 h 15 min (−8.25 h → −4 h); a checkpoint every 60 min: the last at 4 h, so 15 min lost × 8 GPUs = 2
    # GPU-hours. The team's next job on train (J6) started at −3 h: 1 h wait × 8 GPUs = 8. In all 10 GPU-hours.
    assert (j2.checkpoint_minutes, j2.lost_run_gpu_hours, j2.restart_wait_hours, j2.lost_wait_gpu_hours,
            j2.lost_gpu_hours) == (60, 2.0, 1.0, 8.0, 10.0)
    assert j2.next_start == fleet["h"] - 3 * H
    assert "Estimate" in j2.assumptions and "every 60 min" in j2.assumptions
    j1 = rows()["1"]  # 4.5 h → 0.5 h × 8 = 4, + J5 started 1 h after: 8
    assert (j1.lost_run_gpu_hours, j1.lost_wait_gpu_hours, j1.lost_gpu_hours) == (4.0, 8.0, 12.0)


def test_recording_again_gives_the_same_rows(fleet, now):
    record(now)
    first = list(Interruption.objects.order_by("pk").values())
    assert record(now)["interruptions"] == 4
    assert list(Interruption.objects.order_by("pk").values()) == first
    record_interruptions.run(hours=48)  # the task, over the last 48 hours up to now
    assert list(Interruption.objects.order_by("pk").values()) == first


def test_a_corrected_job_loses_its_row_and_a_requeued_runs_row_stays(fleet, now):
    record(now)
    jobs = fleet["jobs"]
    jobs["J4"].state = "COMPLETED"  # the source corrected it
    jobs["J4"].save()
    # J2's row now says another run (a source that rewrote the run under the same submit time; a requeue proper
    # is a new row, test_requeued_runs.py): the interruption recorded for the run that ended stays.
    jobs["J2"].state, jobs["J2"].start_time, jobs["J2"].end_time = "RUNNING", now - 10 * MIN, None
    jobs["J2"].save()
    assert record(now)["deleted"] == 1
    found = rows()
    assert "4" not in found and found["2"].reason == "xid_79" and found["2"].lost_gpu_hours == 10.0


def test_degraded_node_and_ecc_hour_and_requeue(fleet, now):
    h, source = fleet["h"], fleet["source"]
    n3 = fleet["nodes"]["n3"]
    add_job(source, "7", n3, 8, h - 2 * H, h - 2 * H, h - H, "FAILED", "bio", "train")
    moved = degrade(n3, h - H - 3 * MIN)
    n1_gpu = GPU.objects.get(node=fleet["nodes"]["n1"], slot=3)
    add_job(source, "8", fleet["nodes"]["n1"], 8, h - 50 * MIN, h - 50 * MIN, h - 20 * MIN, "REQUEUED", "bio",
            "train")
    n1_gpu.hourly.create(hour=h - H, ecc_dbe_errors=2)  # known to the hour (h − 1 → h): overlaps −30 min's window
    record(now)
    found = rows()
    assert (found["7"].reason, found["7"].transition, found["7"].node) == ("degraded", moved, n3)
    assert (found["8"].cause, found["8"].reason, found["8"].gpu, found["8"].state) == (
        "infrastructure", "ecc_dbe", n1_gpu, "REQUEUED")


def test_the_checkpoint_interval_comes_from_a_plan_when_one_is_registered(fleet, now, monkeypatch):
    monkeypatch.setattr(hooks, "_checkpoint_providers", [])
    hooks.register_checkpoint_provider(lambda accounts: {"vision": 30} if "vision" in accounts else {})
    record(now)
    # J1 ran 4.5 h: with a checkpoint every 30 min it lost no work, only the wait (8).
    assert (rows()["1"].checkpoint_minutes, rows()["1"].lost_run_gpu_hours, rows()["1"].lost_gpu_hours) == (
        30, 0.0, 8.0)


@override_settings(IDLE_GPU_HOUR_COST=2.0)
def test_goodput_by_team_by_hand(fleet, now):
    record(now)
    groups = {g["name"]: g for g in queries.goodput_by("team", "24h", now=now)}
    vision, speech = groups["vision"], groups["speech"]
    assert vision == {
        "key": "vision", "name": "vision", "allocated_gpu_hours": 130.0, "interruptions": 2, "user_interruptions": 0,
        "scheduler_interruptions": 0, "interruptions_per_1000_gpu_days": 369.23, "mtbi_hours": 8.12,
        "expected_restarts": 2.9538, "lost_gpu_hours": 22.0, "lost_run_gpu_hours": 6.0, "lost_wait_gpu_hours": 16.0,
        "lost_cost": 44.0, "lost_gpu_hours_at_default_cost": 22.0, "queue_wait_share": 0.1096,
        "goodput_ratio": 0.9538,
        # The losses by cause: J2's XID 79 (10) a GPU fault, J1's NODE_FAIL (12) a node's; 16 GPU-h queued.
        "lost_gpu_fault_gpu_hours": 10.0, "lost_node_fault_gpu_hours": 12.0, "lost_preemption_gpu_hours": 0.0,
        "lost_user_gpu_hours": 0.0, "queue_wait_gpu_hours": 16.0,
    }
    assert (speech["allocated_gpu_hours"], speech["interruptions"], speech["user_interruptions"],
            speech["interruptions_per_1000_gpu_days"], speech["mtbi_hours"], speech["goodput_ratio"],
            speech["queue_wait_share"]) == (8.0, 0, 2, 0.0, None, 1.0, 0.0)
    # Per node: n1 has J1 (12 lost, 4 of its work), n2 J2 (10, 2); per site both are alpha's; per model M1's.
    nodes = {g["name"]: g for g in queries.goodput_by("node", "24h", now=now)}
    assert (nodes["n1"]["allocated_gpu_hours"], nodes["n1"]["interruptions"], nodes["n1"]["lost_gpu_hours"]) == (
        68.0, 1, 12.0)
    assert (nodes["n2"]["allocated_gpu_hours"], nodes["n2"]["lost_gpu_hours"], nodes["n3"]["interruptions"]) == (
        62.0, 10.0, 0)
    sites = {g["name"]: g for g in queries.goodput_by("site", "24h", now=now)}
    assert (sites["alpha"]["allocated_gpu_hours"], sites["alpha"]["interruptions"], sites["alpha"]["goodput_ratio"],
            sites["beta"]["allocated_gpu_hours"]) == (130.0, 2, 0.9538, 8.0)
    models = {g["name"]: g for g in queries.goodput_by("gpu_model", "24h", now=now, gpus=16)}
    assert (models["M1"]["mtbi_hours"], models["M2"]["mtbi_hours"]) == (4.06, None)  # 130 / 2 / 16 = 4.0625
    # Filters: a site selects its nodes' jobs; a partition and team the jobs'.
    beta = fleet["sites"][1]
    assert [g["name"] for g in queries.goodput_by("team", "24h", {"site": beta.pk}, now=now)] == ["speech"]
    assert [g["name"] for g in queries.goodput_by("node", "24h", {"site": beta.pk}, now=now)] == ["n3"]
    assert queries.goodput_by("team", "24h", {"partition": "nowhere"}, now=now) == []


def test_a_group_with_interruptions_but_no_allocation_shows_null_not_zero(fleet, now):
    # A NODE_FAIL of a team whose job ended before the range and whose run lies wholly outside it: counted in
    # no group's allocation of the 24h range, yet it ended... at −30 h, so outside too. Use a job of no GPUs.
    add_job(fleet["source"], "9", fleet["nodes"]["n3"], 0, now - 2 * H, now - 2 * H, now - H, "NODE_FAIL", "ghost",
            "train")
    record(now)
    ghost = {g["name"]: g for g in queries.goodput_by("team", "24h", now=now)}["ghost"]
    assert (ghost["allocated_gpu_hours"], ghost["interruptions"], ghost["goodput_ratio"],
            ghost["interruptions_per_1000_gpu_days"], ghost["queue_wait_share"]) == (0.0, 1, None, None, None)


@override_settings(IDLE_GPU_HOUR_COST=2.0, COST_CURRENCY="EUR")
def test_goodput_api(fleet, now, viewer_api):
    record(now)
    body = viewer_api.get(GOODPUT, {"group_by": "team", "range": "24h"}).json()
    vision = next(g for g in body["groups"] if g["name"] == "vision")
    assert (vision["id"], vision["goodput_ratio"], vision["lost_gpu_hours"], vision["lost_cost"],
            vision["mtbi_hours"]) == (None, 0.9538, 22.0, 44.0, 8.12)
    assert body["cost_basis"] == "at 2 EUR per GPU-hour (no node in these figures has a cost from its contracts)"
    assert body["assumptions"].startswith("Estimate.") and body["gpus"] == 8
    node = viewer_api.get(GOODPUT, {"group_by": "node", "range": "24h", "gpus": 16}).json()
    assert {g["name"]: g["id"] for g in node["groups"]}["n1"] == fleet["nodes"]["n1"].pk
    assert node["groups"][0]["mtbi_hours"] is not None and node["gpus"] == 16


@pytest.mark.parametrize("params, field", [
    ({"range": "2d"}, "range"), ({"group_by": "rack"}, "group_by"), ({"gpus": 0}, "gpus"),
    ({"site": "x"}, "site"), ({"job_hours": -1}, "job_hours"),
])
def test_goodput_api_refuses_bad_parameters(viewer_api, params, field):
    response = viewer_api.get(GOODPUT, params)
    assert response.status_code == 400 and field in response.json()


def test_goodput_endpoints_need_a_token():
    assert APIClient().get(GOODPUT).status_code in (401, 403)
    assert APIClient().get(INTERRUPTIONS).status_code in (401, 403)


def test_interruptions_list_links_job_node_gpu_and_fault(fleet, now, viewer_api, monkeypatch):
    record(now)
    monkeypatch.setattr(hooks, "_ticket_finders", [])
    hooks.register_ticket_finder(lambda rows: {row.pk: {"id": 42, "title": "XID 79", "url": "/support/42/"}
                                               for row in rows if row.xid_event_id})
    body = viewer_api.get(INTERRUPTIONS, {"cause": "infrastructure"}).json()
    assert [row["job_id"] for row in body["results"]] == ["2", "1"]  # newest first
    j2 = body["results"][0]
    assert j2["node"].endswith(f"/api/inventory/nodes/{fleet['nodes']['n2'].pk}/")
    assert j2["job"].endswith(f"/api/inventory/slurm-jobs/{fleet['jobs']['J2'].pk}/")
    assert j2["gpu"].endswith(f"/api/inventory/gpus/{j2['gpu_id']}/")
    assert (j2["fault"]["kind"], j2["fault"]["code"], j2["ticket"]["id"]) == ("xid", 79, 42)
    assert body["results"][1]["fault"] is None and body["results"][1]["ticket"] is None
    assert [r["reason"] for r in viewer_api.get(INTERRUPTIONS, {"reason": "oom"}).json()["results"]] == ["oom"]
    assert len(viewer_api.get(INTERRUPTIONS, {"team": "speech", "range": "24h"}).json()["results"]) == 2
    n3 = fleet["nodes"]["n3"].pk
    assert len(viewer_api.get(INTERRUPTIONS, {"node": n3}).json()["results"]) == 2
    assert viewer_api.get(INTERRUPTIONS, {"cause": "martians"}).status_code == 400
    assert viewer_api.get(INTERRUPTIONS, {"range": "2d"}).status_code == 400


def more_interruptions(fleet, now, numbers):
    """More teams (``numbers``), each with a job killed by an XID 79 on n3 and its next job started."""
    gpu = GPU.objects.get(node=fleet["nodes"]["n3"], slot=1)
    for i in numbers:
        end = now - (2 * i + 3) * MIN - 30 * H
        add_job(fleet["source"], f"x{i}", fleet["nodes"]["n3"], 1, end - H, end - H, end, "FAILED", f"t{i}", f"p{i}")
        add_job(fleet["source"], f"y{i}", fleet["nodes"]["n3"], 1, end, end + MIN, end + H, "COMPLETED", f"t{i}",
                f"p{i}")
        xid(gpu, end - MIN, 79)


@pytest.mark.parametrize("path, params", [(GOODPUT, {"group_by": "team", "range": "7d"}),
                                          (GOODPUT, {"group_by": "gpu_model", "range": "7d"}),
                                          (INTERRUPTIONS, {})])
def test_constant_queries(fleet, now, viewer_api, path, params, django_assert_max_num_queries):
    more_interruptions(fleet, now, range(1))
    record(now)
    viewer_api.get(path, params)  # the token's first use is recorded once
    with CaptureQueriesContext(connection) as small:
        assert viewer_api.get(path, params).status_code == 200
    more_interruptions(fleet, now, range(1, 13))
    record(now)
    with django_assert_max_num_queries(len(small)):
        body = viewer_api.get(path, params).json()
    # The answer grew: 12 more teams' interruptions (the list's first page holds them all).
    assert len(body.get("groups") or body["results"]) >= (2 if "gpu_model" in str(params) else 14)


STATES = ["COMPLETED", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "CANCELLED", "TIMEOUT", "REQUEUED", "RUNNING"]


def test_lost_work_never_exceeds_the_interrupted_jobs_allocation_on_random_fleets(fleet, now):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from inventory.models import SlurmJob, XidEvent

    nodes = [fleet["nodes"]["n1"], fleet["nodes"]["n2"], fleet["nodes"]["n3"]]
    gpus = {node.pk: list(GPU.objects.filter(node=node)) for node in nodes}
    job = st.tuples(st.integers(0, 2), st.integers(0, 8), st.integers(0, 60 * 60), st.integers(0, 30 * 60),
                    st.sampled_from(STATES), st.sampled_from(["a", "b"]), st.integers(0, 30))
    fault = st.tuples(st.integers(0, 2), st.integers(0, 7), st.integers(0, 62 * 60), st.sampled_from([79, 48, 31]))
    faults_ = st.lists(fault, max_size=6, unique_by=lambda f: f[:3])

    @settings(max_examples=12, derandomize=True, database=None, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(st.lists(job, max_size=10), faults_, st.sampled_from([0, 17, 60]))
    def check(jobs, faults, checkpoint):
        SlurmJob.objects.all().delete()
        XidEvent.objects.all().delete()
        for number, (node, count, start, minutes, state, team, wait) in enumerate(jobs):
            begin = now - 62 * H + start * MIN
            end = None if state == "RUNNING" else min(begin + minutes * MIN, now)
            add_job(fleet["source"], f"r{number}", nodes[node], count, begin - wait * MIN, begin, end, state, team)
        for node, slot, minutes, code in faults:
            xid(gpus[nodes[node].pk][slot], now - 62 * H + minutes * MIN, code,
                kind="application" if code == 31 else "hardware")
        with override_settings(GOODPUT_CHECKPOINT_MINUTES=checkpoint):
            record(now)
        for row in Interruption.objects.select_related("job"):
            if row.cause == "infrastructure":
                assert 0 <= row.lost_run_gpu_hours <= row.job.gpu_hours(now) + 1e-6
        for group_by in ("team", "partition", "site", "gpu_model", "node"):
            for range_key in ("24h",):  # starts inside the jobs' 62 hours: lost work is clipped to it
                for group in queries.goodput_by(group_by, range_key, now=now):
                    assert group["goodput_ratio"] is None or 0.0 <= group["goodput_ratio"] <= 1.0
                    assert (group["goodput_ratio"] is None) == (not group["allocated_gpu_hours"])
                    assert group["lost_run_gpu_hours"] <= group["allocated_gpu_hours"] + 0.02
                    share = group["queue_wait_share"]
                    assert share is None or 0.0 <= share <= 1.0

    check()
