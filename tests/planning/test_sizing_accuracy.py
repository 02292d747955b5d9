"""The calibrated sizing against published training runs (``bench/sizing_accuracy.py``): at least 80 % of them
within ±25 % of their published GPU-hours, ahead of the constant-40 %-MFU rule of thumb, every run sourced."""

from bench.sizing_accuracy import TOLERANCE, estimate, load_runs, share_within
from inventory.catalog import GPU_MODELS


def test_published_runs_are_sourced_gpu_runs_of_the_catalog():
    runs = load_runs()
    assert len(runs) >= 15
    catalog = {row["name"] for row in GPU_MODELS}
    for run in runs:
        assert run["source"].strip() and run["gpu_model"] in catalog, run["model"]
        assert float(run["published_gpu_hours"]) > 0 and int(run["gpus"]) > 0


def test_calibrated_defaults_within_25_percent_for_80_percent_ahead_of_the_rule_of_thumb():
    estimates = estimate(load_runs())
    assert TOLERANCE == 0.25
    calibrated, rule_of_thumb = share_within(estimates, "calibrated"), share_within(estimates, "rule_of_thumb")
    assert calibrated >= 0.80
    assert calibrated > rule_of_thumb
