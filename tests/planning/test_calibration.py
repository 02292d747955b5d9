"""Calibration from the fleet's own history: per team (Slurm account), the GPU-hours its finished planned workloads
really took against the sizing estimate, on the Calibration page, in the API and on the plan page, and the ratio as
the team's sizing factor on the sizing page and API. Every figure hand-computed.

The catalog gets a GPU of exactly 1,000 dense BF16 TFLOP/s; at MFU 0.5 and goodput 1 a workload of 1B parameters
and D billion tokens is 6 × 1e9 × D·1e9 / 5e14 / 3600 = D × 10/3 GPU-hours: 30B tokens = 100 GPU-hours, 60B = 200.
On one GPU that is 4.2 or 8.3 days: each workload's window is its start month.
"""

import re
from datetime import datetime, time, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from inventory.models import TelemetrySource
from inventory.telemetry.models import AllocationExcess, SlurmJobNode
from planning.calibration.calibration import calibrate, times
from planning.plans.forecast import add_months
from planning.plans.models import CapacityPlan, PlanWorkload
from planning.sizing.views import display
from tests.factories import SlurmJobFactory, TelemetrySourceFactory, make_gpu_model, make_node

pytestmark = pytest.mark.django_db
API = "/api/planning/calibration/"
SIZING_API = "/api/planning/sizing/"
THIS_MONTH = timezone.localdate().replace(day=1)
W1, W2, W3 = (add_months(THIS_MONTH, -k) for k in (4, 3, 2))  # finished windows: whole months before this one


def at(day, hours=0):
    return timezone.make_aware(datetime.combine(day, time.min)) + timedelta(hours=hours)


def inputs(tokens_billion):
    return {"params_billion": 1, "tokens_billion": tokens_billion, "mfu": 0.5, "goodput": 1, "num_gpus": 1}


def workload(plan, name, account, start, tokens_billion=30, **extra):
    return PlanWorkload.objects.create(
        plan=plan, name=name, slurm_account=account, gpu_model=plan.gpu, inputs=extra.pop("inputs", None)
        or inputs(tokens_billion), start=start.replace(day=1), **extra)


def job(account, start, hours, gpus, **extra):
    return SlurmJobFactory(source=extra.pop("source"), account=account, submit_time=start, start_time=start,
                           end_time=None if hours is None else start + timedelta(hours=hours), gpus=gpus, **extra)


@pytest.fixture
def history():
    """Approved plan: ml-research ran A (W1, est. 100) and B (W2, est. 200), C runs this month, D cannot be sized;
    vision ran V (W1, est. 100); quiet ran Q (W1) with no jobs. A draft plan's vision workload does not count."""
    gpu = make_gpu_model(name="Round 1000", bf16_tflops=1000, fp8_tflops=2000, tdp_w=1000)
    plan = CapacityPlan.objects.create(name="2025 runs", first_month=add_months(THIS_MONTH, -6),
                                       status=CapacityPlan.Status.APPROVED)
    draft = CapacityPlan.objects.create(name="what-if", first_month=plan.first_month)
    plan.gpu = draft.gpu = gpu
    made = {
        "A": workload(plan, "A", "ml-research", W1),
        "B": workload(plan, "B", "ml-research", W2, tokens_billion=60),
        "C": workload(plan, "C", "ml-research", THIS_MONTH),
        "D": workload(plan, "D", "ml-research", W1, inputs={"params_billion": 1}),  # no tokens: cannot be sized
        "V": workload(plan, "V", "vision", W1),
        "Q": workload(plan, "Q", "quiet", W1),
        "draft": workload(draft, "what-if", "vision", W1),
    }
    source = TelemetrySourceFactory(kind=TelemetrySource.Kind.SLURM)
    job("ml-research", at(W1, -30), 10, 8, source=source)  # before A's window: not counted
    job("ml-research", at(W1, 48), 10, 8, source=source)  # in A: 80
    job("ml-research", at(W2, -2), 6, 4, source=source)  # straddles A | B: 4 × 2 = 8 in A, 4 × 4 = 16 in B
    listed = job("ml-research", at(W2, 100), 100, 2, source=source)  # in B: 200 ...
    node = make_node()
    allocation = SlurmJobNode.objects.create(job=listed, host=node.hostname, node=node, gpus=2)
    AllocationExcess.objects.create(allocation=allocation, node=node, start=at(W2, 110), end=at(W2, 120), gpus=1)
    # ... less 1 GPU × 10 h its node could not give: 190 in B
    job("ml-research", at(W3, 24), 5, 1, source=source)  # the month after B: 5, not counted, said
    running = job("ml-research", timezone.now() - timedelta(hours=2), None, 4, source=source)
    running.running_until = timezone.now()
    running.save()
    job("vision", at(W1, 24), 8, 16, source=source)  # in V: 128
    job("other", at(W1, 24), 8, 16, source=source)  # another account: nobody's
    return made


# A: 88 / 100; B: (16 + 190) / 200 = 206 / 200; ml-research: 294 / 300 = 0.98. vision: 128 / 100 = 1.28.


def test_realized_against_estimate_per_workload_and_team(history):
    calibration = calibrate()
    ml, quiet, vision = calibration.teams
    assert [t.team for t in calibration.teams] == ["ml-research", "quiet", "vision"]
    runs = calibration.runs
    a, b, c, d = (runs[history[k].pk] for k in "ABCD")
    assert (a.estimate, a.realized, a.jobs, a.status) == (pytest.approx(100), pytest.approx(88), 2, "finished")
    assert (b.estimate, b.realized, b.jobs) == (pytest.approx(200), pytest.approx(206), 2)
    assert a.ratio == pytest.approx(0.88) and b.ratio == pytest.approx(1.03)
    assert (ml.estimate, ml.realized, ml.ratio) == (pytest.approx(300), pytest.approx(294), pytest.approx(0.98))
    assert len(ml.counted) == 2 and vision.ratio == pytest.approx(1.28) and len(vision.counted) == 1
    assert history["draft"].pk not in runs  # a draft plan's workloads do not calibrate
    # What does not count says why.
    assert c.status == "running" and c.ratio is None and "not over" in c.notes[0]
    assert d.status == "unsized" and "Missing sizing inputs: tokens_billion" in d.notes[0]
    assert "5 GPU-hours of 1 job(s) under account ml-research in the month after its window" in " ".join(b.notes)
    q = runs[history["Q"].pk]
    assert q.status == "no_jobs" and q.realized is None and quiet.ratio is None and quiet.factor is None
    assert f"No jobs found under account quiet in {W1:%Y-%m}: not counted (not a ratio of 0)" in q.notes[0]
    assert calibration.factors["ml-research"].factor == pytest.approx(0.98)
    assert set(calibration.factors) == {"ml-research", "vision"}


def test_queries_stay_constant_however_many_workloads(history, django_assert_max_num_queries):
    # The workloads, the catalog; the rollup's days and hours, whether any run is unsettled, the open hour's jobs
    # (three) and the jobs counted per window.
    with django_assert_max_num_queries(9):
        calibrate()
    plan = history["A"].plan
    for n in range(20):
        workload(plan, f"more {n}", f"team-{n % 3}", W1)
    with django_assert_max_num_queries(9):
        assert len(calibrate().teams) == 6


def test_api_and_page_agree(history, viewer_api, viewer_client):
    teams = viewer_api.get(API).json()
    ml = teams[0]
    assert ml["team"] == "ml-research" and ml["finished_workloads"] == 2
    assert (ml["estimate_gpu_hours"], ml["realized_gpu_hours"]) == (pytest.approx(300), pytest.approx(294))
    assert ml["ratio"] == pytest.approx(0.98) and ml["note"] == ""
    by_name = {w["name"]: w for w in ml["workloads"]}
    assert by_name["A"]["window_start"] == W1.isoformat() and by_name["A"]["window_end"] == W2.isoformat()
    assert by_name["B"]["realized_gpu_hours"] == pytest.approx(206) and by_name["C"]["status"] == "running"
    quiet = teams[1]
    assert quiet["ratio"] is None and "Q: no jobs found" in quiet["note"]
    assert quiet["workloads"][0]["realized_gpu_hours"] is None

    html = viewer_client.get(reverse("planning:calibration")).content.decode()
    for team in teams:
        row = re.search(rf'<tr id="team-{team["team"]}">.*?</tr>', html, re.S).group(0)
        cells = re.findall(r'<td class="num">([^<]*)</td>', row)
        assert cells[1:] == [display(team["estimate_gpu_hours"]), display(team["realized_gpu_hours"]),
                             times(team["ratio"])]
    html = viewer_client.get(reverse("planning:calibration_team", args=["ml-research"])).content.decode()
    for w in ml["workloads"]:
        row = re.search(rf'<tr id="run-{w["id"]}">.*?</tr>', html, re.S).group(0)
        assert re.findall(r'<td class="num">([^<]*)</td>', row) == [
            display(w["estimate_gpu_hours"]), display(w["realized_gpu_hours"]), str(w["jobs"]), times(w["ratio"])]
        for note in w["notes"]:
            assert note.replace("'", "&#x27;") in row
    assert viewer_api.get(API, {"team": "vision"}).json()[0]["ratio"] == pytest.approx(1.28)
    assert viewer_client.get(reverse("planning:calibration_team", args=["nobody"])).status_code == 404


def test_login_and_permission(client, history, db):
    assert client.get(reverse("planning:calibration")).status_code == 302
    assert client.get(API).status_code in (401, 403)


def test_plan_page_shows_realized_against_estimate(history, viewer_client):
    plan = history["A"].plan
    html = viewer_client.get(plan.get_absolute_url()).content.decode()
    a = re.search(rf'id="realized-{history["A"].pk}">([^<]*)<', html).group(1)
    assert a == f"Realized 88.0 GPU-hours in {W1:%Y-%m} (2 jobs under ml-research) against the model&#x27;s 100: 0.88×."
    assert "not over" in re.search(rf'id="realized-{history["C"].pk}">([^<]*)<', html).group(1)
    assert "No jobs found under account quiet" in re.search(rf'id="realized-{history["Q"].pk}">([^<]*)<', html).group(1)


def test_sizing_applies_the_teams_factor_with_its_source(history, viewer_api, viewer_client):
    body = {"gpu_model": "Round 1000", **inputs(30)}
    plain = viewer_api.post(SIZING_API, body, format="json").json()["figures"]
    assert plain["gpu_hours"]["value"] == pytest.approx(100) and plain["calibration_factor"]["value"] == 1
    vision = viewer_api.post(SIZING_API, {**body, "team": "vision"}, format="json").json()
    figures = vision["figures"]
    assert figures["calibration_factor"]["value"] == pytest.approx(1.28)
    assert figures["calibration_factor"]["source"] == "team vision: 1.28× from 1 finished workload, calibration page"
    assert figures["gpu_hours"]["value"] == pytest.approx(128)  # 100 × 1.28
    assert figures["wall_clock_days"]["value"] == pytest.approx(128 / 24)
    assert figures["energy_kwh"]["value"] == pytest.approx(128 * 1.0 * 1.3)  # GPU-hours × 1 kW × PUE
    assert figures["step_seconds"]["value"] == pytest.approx(plain["step_seconds"]["value"])  # the hardware's
    # A factor of one's own overrides the team's.
    own = viewer_api.post(SIZING_API, {**body, "team": "vision", "calibration_factor": 2}, format="json").json()
    assert own["figures"]["gpu_hours"]["value"] == pytest.approx(200)
    assert own["figures"]["calibration_factor"]["source"] == "Your input"
    assert "instead of team vision's 1.28×" in own["figures"]["calibration_factor"]["explanation"]
    # A team without a ratio is refused, saying why.
    refused = viewer_api.post(SIZING_API, {**body, "team": "quiet"}, format="json")
    assert refused.status_code == 400 and "No sizing factor for team 'quiet'" in refused.json()["team"][0]

    html = viewer_client.get(reverse("planning:sizing"), {**body, "team": "vision"}).content.decode()
    row = re.search(r'<tr id="figure-gpu_hours">.*?</tr>', html, re.S).group(0)
    assert f'<td class="num">{display(figures["gpu_hours"]["value"])}</td>' in row
    assert "team vision: 1.28× from 1 finished workload, calibration page" in html
    factor = re.search(r'<tr id="figure-calibration_factor">.*?</tr>', html, re.S).group(0)
    assert '<td class="num">1.28</td><td>×</td>' in factor  # as the calibration says it, not rounded to 1.3
    options = re.search(r'<select name="team".*?</select>', html, re.S).group(0)
    assert "ml-research: 0.98× from 2 finished" in options and "quiet" not in options
    html = viewer_client.get(reverse("planning:sizing"), {**body, "team": "quiet"}).content.decode()
    assert "Select a valid choice" in html


def test_workload_form_and_api_take_the_slurm_account(history, manager_client, manager_api):
    plan = CapacityPlan.objects.create(name="next", first_month=THIS_MONTH)
    gpu = history["A"].gpu_model
    response = manager_client.post(reverse("planning:capacityplan_workload_add", args=[plan.pk]), {
        "name": "E", "start": f"{THIS_MONTH:%Y-%m}", "gpu_model": gpu.pk, "slurm_account": "ml-research", **inputs(30),
        "precision": "bf16", "calibration_factor": 0.98})
    assert response.status_code == 302
    saved = plan.workloads.get()
    assert saved.slurm_account == "ml-research" and saved.inputs["calibration_factor"] == 0.98
    body = manager_api.get(f"/api/planning/plans/{plan.pk}/").json()["workloads"][0]
    assert body["slurm_account"] == "ml-research"
    assert body["gpu_hours"] == pytest.approx(98)  # 100 × the factor the plan states
    changed = manager_api.patch(f"/api/planning/plans/{plan.pk}/", {"workloads": [
        {**{k: body[k] for k in ("name", "start", "gpu_model", "inputs")}, "slurm_account": "vision"}]},
        format="json")
    assert changed.status_code == 200, changed.json()
    assert plan.workloads.get().slurm_account == "vision"
