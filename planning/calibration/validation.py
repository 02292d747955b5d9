"""How close sizing's calibrated GPU-hours come to published training runs, in sample and out of sample.

    .venv/bin/python -m planning.calibration.validation

The runs are ``bench/published_runs.csv`` (one a row, each with its source). Those marked ``held_out`` were added
after the calibration and are never used to fit it. Error = estimate / published GPU-hours − 1; figures are the
median absolute error and the share within ±25 % (``TOLERANCE``).

What is fitted. The calibrated MFU (``sizing.default_mfu``) is a line per GPU class: MFU = a + b · log10(active
parameters / the class's anchor size), clipped to ``sizing.MFU_RANGE``; then fixed factors for scale beyond
``sizing.SCALE_FREE_GPUS``, FP8 and the goodput allowance, which came from other sources (``sizing.py``) and are not
refitted here. Each run implies the line's value that would reproduce its published GPU-hours exactly
(:func:`implied`), and the estimate's error is implied / line − 1.

* *In sample*: the shipped constants (``sizing.MFU_CURVES``, fitted by hand on the runs not held out) on those runs.
* *Least-squares refit*: a and b per class minimising Σ (log line − log implied)², i.e. the relative errors, fitted
  on all the runs not held out and measured on them (in sample too: the procedure the next figure repeats).
* *Leave-one-out*: for every run not held out, the refit on all the others, measured on that run alone.
* *Held out*: the shipped constants on the held-out runs.

The shipped constants are not the refit's (they were rounded by hand and favour the share within ±25 %), so the
leave-one-out figure measures how the same curve generalises when fitted without the run, not those constants
exactly; the held-out runs measure the constants themselves.
"""

import csv
import math
import statistics
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

from inventory.catalog import GPU_MODELS

from ..sizing import sizing

RUNS = Path(__file__).resolve().parents[2] / "bench" / "published_runs.csv"
TOLERANCE = 0.25
CLASSES = tuple(sizing.MFU_CURVES)


@dataclass(frozen=True)
class PublishedRun:
    """A row of ``published_runs.csv``."""

    model: str
    params_billion: float
    active_params_billion: float | None
    tokens_billion: float
    gpu_model: str
    gpus: int
    precision: str
    published_gpu_hours: float
    published_as: str
    source: str
    held_out: bool = False

    @classmethod
    def of(cls, row):
        return cls(row["model"], float(row["params_billion"]), float(row["active_params_billion"] or 0) or None,
                   float(row["tokens_billion"]), row["gpu_model"], int(row["gpus"]), row["precision"],
                   float(row["published_gpu_hours"]), row["published_as"], row["source"],
                   (row.get("held_out") or "").strip().lower() == "yes")

    def workload(self, **inputs):
        """The run as a sizing workload with the default settings (blank MFU and goodput: the calibrated ones)."""
        return sizing.Workload(params_billion=self.params_billion, tokens_billion=self.tokens_billion,
                               gpu_model=self.gpu_model, num_gpus=self.gpus, precision=self.precision,
                               active_params_billion=self.active_params_billion, **inputs)


def load_runs(path=RUNS):
    with open(path, newline="") as f:
        return [PublishedRun.of(row) for row in csv.DictReader(f)]


def catalog():
    """The catalog's GPUs as sizing sees them, from the shipped data (no database)."""
    return {row["name"]: sizing.GPU.of(SimpleNamespace(**row)) for row in GPU_MODELS}


@dataclass(frozen=True)
class Point:
    """A run as the fit sees it: its GPU class, x = log10(active parameters / the class's anchor) and the line's
    value that reproduces its published GPU-hours."""

    model: str
    gpu_class: str
    x: float
    implied: float


def implied(run, gpus):
    """The :class:`Point` of ``run``: sizing's GPU-hours are FLOPs / (peak × MFU) / 3600 / goodput, with MFU =
    line × scale factor (× the FP8 factor), so the line's value that gives the published GPU-hours is FLOPs /
    (peak × scale × FP8 factor × 3600 × goodput × published GPU-hours)."""
    gpu = gpus[run.gpu_model]
    active = (run.active_params_billion or run.params_billion) * 1e9
    flops = 6 * active * run.tokens_billion * 1e9
    scale = 1 - sizing.MFU_LOSS_PER_DOUBLING * max(0, math.log2(run.gpus / sizing.SCALE_FREE_GPUS))
    fp8 = sizing.FP8_SPEEDUP * gpu.bf16_tflops / gpu.fp8_tflops if run.precision == "fp8" else 1
    goodput = sizing.default_goodput(run.gpus)[0]
    value = flops / (gpu.peak_flops(run.precision) * scale * fp8 * 3600 * goodput * run.published_gpu_hours)
    gpu_class = sizing.gpu_class(gpu)
    return Point(run.model, gpu_class, math.log10(active / 1e9 / sizing.MFU_CURVES[gpu_class][1]), value)


def shipped_curves():
    """class → (a, b) of the constants sizing ships."""
    return {name: (mfu, per_decade) for name, (mfu, _, per_decade) in sizing.MFU_CURVES.items()}


def error(curves, point):
    """Estimate / published − 1 of ``point`` under ``curves`` (class → (a, b)), the line clipped as sizing clips it."""
    a, b = curves[point.gpu_class]
    line = min(max(a + b * point.x, sizing.MFU_RANGE[0]), sizing.MFU_RANGE[1])
    return point.implied / line - 1


def fit_line(points):
    """(a, b) minimising Σ (log(a + b·x) − log implied)² over ``points`` (Gauss-Newton from the ordinary least
    squares line); with fewer than two sizes, a flat line at their geometric mean."""
    xs, ys = [p.x for p in points], [p.implied for p in points]
    if len(set(xs)) < 2:
        return math.exp(statistics.fmean(math.log(y) for y in ys)), 0.0
    b, a = statistics.linear_regression(xs, ys)

    def cost(a, b):
        return sum((math.log(a + b * x) - math.log(y)) ** 2 for x, y in zip(xs, ys, strict=True))

    for _ in range(100):
        lines = [a + b * x for x in xs]
        if min(lines) <= 0:  # the ordinary line may cross 0 where the data are steep: start flat instead
            a, b = math.exp(statistics.fmean(math.log(y) for y in ys)), 0.0
            continue
        residuals = [math.log(line / y) for line, y in zip(lines, ys, strict=True)]
        # Normal equations of the linearised problem: J = [1/line, x/line].
        jaa = sum(1 / line ** 2 for line in lines)
        jab = sum(x / line ** 2 for x, line in zip(xs, lines, strict=True))
        jbb = sum((x / line) ** 2 for x, line in zip(xs, lines, strict=True))
        ga = sum(r / line for r, line in zip(residuals, lines, strict=True))
        gb = sum(r * x / line for r, x, line in zip(residuals, xs, lines, strict=True))
        det = jaa * jbb - jab ** 2
        step_a, step_b = (jbb * ga - jab * gb) / det, (jaa * gb - jab * ga) / det
        shrink, before = 1.0, cost(a, b)
        while shrink > 1e-6:  # halve the step until the cost falls and every line stays positive
            new_a, new_b = a - shrink * step_a, b - shrink * step_b
            if min(new_a + new_b * x for x in xs) > 0 and cost(new_a, new_b) <= before:
                break
            shrink /= 2
        else:
            break
        a, b = new_a, new_b
        if abs(shrink * step_a) + abs(shrink * step_b) < 1e-13:
            break
    return a, b


def fit(points):
    """class → (a, b) fitted on ``points``; a class without points keeps the shipped constants."""
    curves = shipped_curves()
    for name in CLASSES:
        mine = [p for p in points if p.gpu_class == name]
        if mine:
            curves[name] = fit_line(mine)
    return curves


def leave_one_out(points):
    """(model, error) of every point under the curves fitted on all the others."""
    return tuple((p.model, error(fit(points[:i] + points[i + 1:]), p)) for i, p in enumerate(points))


def percent(share):
    """``9.7 %``, ``9.0 %``, ``24 %``: a decimal below 10 %."""
    return f"{100 * share:.1f} %" if share < 0.0995 else f"{100 * share:.0f} %"


@dataclass(frozen=True)
class Accuracy:
    """Errors of one kind of estimate: ``label`` and (model, estimate / published − 1) per run."""

    label: str
    errors: tuple

    @property
    def runs(self):
        return len(self.errors)

    @property
    def median_error(self):
        """Median absolute error; None without runs."""
        return statistics.median(abs(e) for _, e in self.errors) if self.errors else None

    @property
    def within(self):
        """Share of runs within ±``TOLERANCE``; None without runs."""
        return sum(abs(e) <= TOLERANCE for _, e in self.errors) / self.runs if self.errors else None

    def as_dict(self):
        return {"runs": self.runs, "median_abs_error": self.median_error, "share_within_25_percent": self.within,
                "errors": {model: e for model, e in self.errors}}


@dataclass(frozen=True)
class Validation:
    in_sample: Accuracy
    refit_in_sample: Accuracy
    leave_one_out: Accuracy
    held_out: Accuracy
    refit: dict  # class → (a, b) of the least-squares fit on every run not held out

    @property
    def rows(self):
        return [self.in_sample, self.refit_in_sample, self.leave_one_out, self.held_out]

    @property
    def summary(self):
        """``median error 9.7 % in sample, 11 % leave-one-out over 26 runs, 24 % on 5 held-out runs``."""
        text = (f"median error {percent(self.in_sample.median_error)} in sample, "
                f"{percent(self.leave_one_out.median_error)} leave-one-out over {self.leave_one_out.runs} runs")
        if self.held_out.runs:
            text += f", {percent(self.held_out.median_error)} on {self.held_out.runs} held-out runs"
        return text

    def as_dict(self):
        return {"summary": self.summary, "tolerance": TOLERANCE,
                "in_sample": self.in_sample.as_dict(), "refit_in_sample": self.refit_in_sample.as_dict(),
                "leave_one_out": self.leave_one_out.as_dict(), "held_out": self.held_out.as_dict(),
                "refit": {name: {"mfu_at_anchor": a, "per_tenfold": b} for name, (a, b) in self.refit.items()}}


def validate_runs(runs, gpus=None):
    """The :class:`Validation` of ``runs`` (:class:`PublishedRun`; ``gpus``: name → ``sizing.GPU``, default the
    shipped catalog)."""
    gpus = gpus or catalog()
    fitted = [implied(run, gpus) for run in runs if not run.held_out]
    held = [implied(run, gpus) for run in runs if run.held_out]
    shipped, refit = shipped_curves(), fit(fitted)
    return Validation(
        Accuracy("In sample: the shipped constants on the runs they were fitted on",
                 tuple((p.model, error(shipped, p)) for p in fitted)),
        Accuracy("In sample: least-squares refit on the same runs", tuple((p.model, error(refit, p)) for p in fitted)),
        Accuracy("Leave-one-out: refitted without each run, measured on it", leave_one_out(fitted)),
        Accuracy("Held out: the shipped constants on runs never used to fit",
                 tuple((p.model, error(shipped, p)) for p in held)),
        refit,
    )


@lru_cache(maxsize=4)
def validate(path=RUNS):
    """The :class:`Validation` of the published runs (read once per process)."""
    return validate_runs(load_runs(path))


def main():
    runs, result = load_runs(), validate()
    errors = {row.label: dict(row.errors) for row in result.rows}
    print(f"{'run':<18} {'GPU model':<15} {'GPUs':>6} {'published GPU-h':>16} {'in sample':>10} {'refit':>7} "
          f"{'left out':>9} {'held out':>9}")
    for run in runs:
        cells = [errors[row.label].get(run.model) for row in result.rows]
        print(f"{run.model:<18} {run.gpu_model:<15} {run.gpus:>6,} {run.published_gpu_hours:>16,.0f} "
              + " ".join(f"{'' if e is None else f'{e:+.0%}':>{w}}" for e, w in zip(cells, (10, 7, 9, 9),
                                                                                       strict=True)))
    print(f"\n{'':<64} {'runs':>5} {'median |error|':>15} {'within ±25 %':>13}")
    for row in result.rows:
        if row.runs:
            print(f"{row.label:<64} {row.runs:>5} {percent(row.median_error):>15} {row.within:>13.0%}")
    print("\nRefit (MFU at the anchor, per tenfold): " + "; ".join(
        f"{name} {a:.3f}, {b:+.3f}" for name, (a, b) in result.refit.items()))
    print(result.summary)


if __name__ == "__main__":
    main()
