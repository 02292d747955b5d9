"""How close the sizing's GPU-hours come to published training runs, with the calibrated defaults and with the
constant-40 %-MFU rule of thumb.

    .venv/bin/python bench/sizing_accuracy.py

Each run of ``bench/published_runs.csv`` (model, parameters, active parameters for a mixture of experts, tokens,
GPU model of the catalog, GPUs, precision, published GPU-hours or GPUs × days, source) is sized by
``planning.sizing.sizing.size`` with the default settings (blank MFU and goodput: the calibrated defaults) on the
run's GPUs, and with MFU 0.40 and no interruption allowance (the rule of thumb). Error = estimate / published − 1.
The calibrated defaults' few constants were fitted on these runs' implied MFU (see ``sizing.py``), so the share
within ±25 % is an in-sample figure; the runs marked ``held_out`` are left out of it, and
``planning.calibration.validation`` gives the out-of-sample figures (leave-one-out, held out). No database needed:
the GPU figures come from ``inventory.catalog``.
"""

import csv
import sys
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from inventory.catalog import GPU_MODELS  # noqa: E402
from planning.calibration.validation import validate  # noqa: E402
from planning.sizing.sizing import GPU, Workload, size  # noqa: E402

RUNS = Path(__file__).with_name("published_runs.csv")
TOLERANCE = 0.25
RULE_OF_THUMB = {"mfu": 0.40, "goodput": 1}


@dataclass(frozen=True)
class Estimate:
    run: dict
    calibrated: float  # GPU-hours with the default settings
    rule_of_thumb: float  # GPU-hours at MFU 0.40, no interruptions

    @property
    def published(self):
        return float(self.run["published_gpu_hours"])

    def error(self, estimate):
        return estimate / self.published - 1


def load_runs(path=RUNS, held_out=False):
    """The runs the calibration was fitted on (``held_out``: also those kept out of it)."""
    with open(path, newline="") as f:
        return [row for row in csv.DictReader(f) if held_out or row.get("held_out") != "yes"]


def estimate(runs):
    gpus = {row["name"]: GPU.of(SimpleNamespace(**row)) for row in GPU_MODELS}
    estimates = []
    for run in runs:
        workload = Workload(params_billion=float(run["params_billion"]), tokens_billion=float(run["tokens_billion"]),
                            gpu_model=run["gpu_model"], num_gpus=int(run["gpus"]), precision=run["precision"],
                            active_params_billion=float(run["active_params_billion"] or 0) or None)
        estimates.append(Estimate(run, size(workload, gpus)["gpu_hours"],
                                  size(Workload(**{**vars(workload), **RULE_OF_THUMB}), gpus)["gpu_hours"]))
    return estimates


def share_within(estimates, which):
    return sum(abs(e.error(getattr(e, which))) <= TOLERANCE for e in estimates) / len(estimates)


def main():
    estimates = estimate(load_runs())
    print(f"{'run':<16} {'GPU model':<15} {'GPUs':>6} {'published GPU-h':>16} {'calibrated':>12} {'error':>7} "
          f"{'±25%':>5} {'MFU 0.40':>12} {'error':>7} {'±25%':>5}")
    for e in estimates:
        cells = []
        for value in (e.calibrated, e.rule_of_thumb):
            error = e.error(value)
            cells.append(f"{value:>12,.0f} {error:>+7.0%} {'yes' if abs(error) <= TOLERANCE else 'no':>5}")
        print(f"{e.run['model']:<16} {e.run['gpu_model']:<15} {int(e.run['gpus']):>6,} {e.published:>16,.0f} "
              + " ".join(cells))
    print(f"\nWithin ±{TOLERANCE:.0%} of the published GPU-hours, {len(estimates)} runs: calibrated defaults "
          f"{share_within(estimates, 'calibrated'):.0%}, constant 40 % MFU "
          f"{share_within(estimates, 'rule_of_thumb'):.0%}")
    print(f"Out of sample (python -m planning.calibration.validation): {validate().summary}")


if __name__ == "__main__":
    main()
