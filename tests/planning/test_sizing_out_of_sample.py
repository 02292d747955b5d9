"""The calibrated sizing's accuracy out of sample (``planning.calibration.validation``): leave-one-out worked by hand
on a small set of runs, the real published runs (leave-one-out and held out next to the in-sample figure), and the
figures on the calibration page, the sizing page and the sizing API."""

import statistics

import pytest
from django.urls import reverse

from planning.calibration import validation
from planning.calibration.validation import Point, PublishedRun, fit_line, validate, validate_runs
from planning.sizing import sizing

A100 = "A100 80GB SXM"
GPUS = validation.catalog()


def run(model, billion, mfu, held_out=False):
    """An A100 run on 8 GPUs (no scale loss, one goodput for all) of 1T tokens whose published GPU-hours are those
    of exactly ``mfu`` on the A100-class line: implied MFU = ``mfu``."""
    goodput = sizing.default_goodput(8)[0]
    hours = 6 * billion * 1e9 * 1e12 / (312e12 * mfu * 3600 * goodput)
    return PublishedRun(model, billion, None, 1000, A100, 8, "bf16", hours, "GPU-hours", "made by hand", held_out)


# Three sizes a tenfold apart around the A100-class anchor (70B): x = log10(size / 70B) = −1, 0, 1, with implied
# MFU 0.30, 0.40, 0.45. Leaving one out, the line through the other two predicts it:
#   7B out:   through (0, 0.40), (1, 0.45): 0.35 at −1; error 0.30 / 0.35 − 1 = −1/7
#   70B out:  through (−1, 0.30), (1, 0.45): 0.375 at 0; error 0.40 / 0.375 − 1 = +1/15
#   700B out: through (−1, 0.30), (0, 0.40): 0.50 at 1; error 0.45 / 0.50 − 1 = −1/10
# Median |error|: 0.10. The held-out run (70B at 0.50) against the shipped line (0.40 at 70B): +0.25.
HAND = [run("small", 7, 0.30), run("anchor", 70, 0.40), run("large", 700, 0.45), run("kept out", 70, 0.50, True)]
LEFT_OUT = {"small": -1 / 7, "anchor": 1 / 15, "large": -1 / 10}


def test_leave_one_out_by_hand():
    result = validate_runs(HAND, GPUS)
    assert dict(result.leave_one_out.errors) == pytest.approx(LEFT_OUT, rel=1e-9)
    assert result.leave_one_out.median_error == pytest.approx(0.10, rel=1e-9)
    assert result.leave_one_out.within == 1
    assert dict(result.held_out.errors) == pytest.approx({"kept out": 0.25}, rel=1e-9)  # never in a fit
    assert result.in_sample.runs == result.refit_in_sample.runs == 3
    # In sample the refit sees every run, so it does at least as well as when each is left out.
    assert result.refit_in_sample.median_error <= result.leave_one_out.median_error


def test_fit_line_through_two_points_and_on_a_line():
    assert fit_line([Point("a", "A100-class", 0, 0.4), Point("b", "A100-class", 1, 0.5)]) == pytest.approx((0.4, 0.1))
    line = [Point(str(x), "A100-class", x, 0.35 + 0.05 * x) for x in (-2, -1, 0, 1)]
    assert fit_line(line) == pytest.approx((0.35, 0.05))
    assert fit_line([Point("one", "A100-class", 0.5, 0.3)]) == pytest.approx((0.3, 0.0))  # one size: flat


def test_the_implied_line_reproduces_sizing_for_every_published_run():
    """The shipped constants' error computed from the implied MFU is sizing's own: estimate / published − 1."""
    shipped = validation.shipped_curves()
    for published in validation.load_runs():
        estimate = sizing.size(published.workload(), GPUS)["gpu_hours"]
        assert validation.error(shipped, validation.implied(published, GPUS)) == pytest.approx(
            estimate / published.published_gpu_hours - 1, rel=1e-9), published.model


def test_published_runs_out_of_sample_next_to_in_sample():
    runs = validation.load_runs()
    held = [r for r in runs if r.held_out]
    assert len(held) >= 5 and all(r.source.strip() for r in held)
    result = validate()
    assert result.leave_one_out.runs == result.in_sample.runs == len(runs) - len(held)
    assert result.held_out.runs == len(held)
    # Out of sample the error is larger, as it should be: the in-sample figure flatters the constants.
    assert result.leave_one_out.median_error >= result.refit_in_sample.median_error
    assert result.leave_one_out.median_error >= result.in_sample.median_error
    assert result.held_out.median_error >= result.in_sample.median_error
    assert result.summary == (f"median error {validation.percent(result.in_sample.median_error)} in sample, "
                              f"{validation.percent(result.leave_one_out.median_error)} leave-one-out over "
                              f"{len(runs) - len(held)} runs, {validation.percent(result.held_out.median_error)} "
                              f"on {len(held)} held-out runs")
    # Hand-fitted constants, least squares refit: close to one another.
    assert result.refit["A100-class"] == pytest.approx(sizing.MFU_CURVES["A100-class"][::2], abs=0.02)
    assert result.refit["H100-class"] == pytest.approx(sizing.MFU_CURVES["H100-class"][::2], abs=0.02)
    # The figures as they stand (python -m planning.calibration.validation prints them).
    assert statistics.median(abs(e) for _, e in result.in_sample.errors) == pytest.approx(0.097, abs=0.005)
    assert result.leave_one_out.median_error == pytest.approx(0.106, abs=0.005)
    assert result.held_out.median_error == pytest.approx(0.24, abs=0.01)


def test_percent():
    assert [validation.percent(x) for x in (0.0971, 0.09, 0.106, 0.241)] == ["9.7 %", "9.0 %", "11 %", "24 %"]


@pytest.mark.django_db
def test_the_calibration_page_states_the_accuracy(manager_client):
    summary = validate().summary
    page = manager_client.get(reverse("planning:calibration"))
    html = page.content.decode()
    assert 'id="published-runs"' in html and summary in html
    assert [row[0] for row in page.context["accuracy_rows"]] == [row.label for row in validate().rows]
    assert [r.model for r, _, _ in page.context["held_out"]] == [r.model for r in validation.load_runs() if r.held_out]
    assert "BloombergGPT" in html and "arXiv:2303.17564" in html


@pytest.mark.django_db
def test_the_sizing_page_and_api_state_the_accuracy(manager_client, manager_api):
    summary = validate().summary
    query = {"params_billion": 7, "tokens_billion": 2000, "gpu_model": "H100 SXM 80GB", "num_gpus": 512}
    page = manager_client.get(reverse("planning:sizing"), query).content.decode()
    assert 'id="sizing-accuracy"' in page and summary in page
    body = manager_api.post("/api/planning/sizing/", query, format="json").json()["accuracy"]
    assert body["summary"] == summary
    assert body["leave_one_out"]["median_abs_error"] == pytest.approx(validate().leave_one_out.median_error)
    assert body["held_out"]["runs"] == validate().held_out.runs
    assert set(body["held_out"]["errors"]) == {r.model for r in validation.load_runs() if r.held_out}
