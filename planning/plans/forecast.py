"""Demand forecast: GPU-hours in use per month, from the telemetry's daily rollups, over a plan's horizon.

History (``monthly_history``)
    A month's demand is the GPU-hours the fleet kept busy: Σ ``GPUDaily.hours`` × ``util_mean`` / 100 over
    the month (the dashboards' "GPU-hours observed × utilization"), per day with data, × 365 / 12 days: a
    month of 730 hours, as capacity counts them. So a month with an outage, a partial first month or a short
    February is neither read as low demand nor as zero. The current month counts once it has ``MIN_DAYS`` days of
    data. Months without any data are missing, not zero: the model is fitted on the months that have data,
    with gaps inside the history filled by linear interpolation (exponential smoothing needs a regular
    series).

Model (``forecast``), exponential smoothing from statsmodels (``ETSModel``: additive errors), chosen by the
length of the history:
    - 24 months or more: additive trend and additive yearly seasonality (Holt-Winters);
    - 6 to 23 months: additive trend (Holt's linear method);
    - 1 to 5 months: the mean of the history, flat (too short to tell a trend from noise);
    - none: no demand from history (a plan then rests on its planned workloads).
    The forecast carries an 80 % prediction interval where the model gives one, and is never below zero.

Everything here is plain Python over numbers, apart from ``monthly_history`` which reads the rollups in one
query.
"""

import math
import warnings
from dataclasses import dataclass, field
from datetime import date

import numpy as np

DAYS_PER_MONTH = 365 / 12  # months of 730 hours, as capacity counts them (February is not a dip in demand)
MIN_DAYS = 7  # a month with fewer days of data (the current one, early on) is left out of the fit
SEASONAL_MONTHS = 24  # history needed to fit yearly seasonality (two full cycles)
TREND_MONTHS = 6  # history needed to fit a trend
INTERVAL = 0.80  # prediction interval shown around the forecast


def month_start(day):
    return day.replace(day=1)


def add_months(day, months):
    """The first day of the month ``months`` after ``day``'s month."""
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def months_between(first, last):
    """Whole months from ``first``'s month to ``last``'s month (0 when the same month)."""
    return (last.year - first.year) * 12 + last.month - first.month


@dataclass
class Forecast:
    """``history``: (month, GPU-hours) pairs, oldest first; ``months``: the forecast months; ``mean``, ``lower``,
    ``upper``: GPU-hours per forecast month (lower/upper None without an interval); ``method``: the model used,
    in words."""

    history: list
    months: list
    mean: list
    lower: list | None
    upper: list | None
    method: str
    notes: list = field(default_factory=list)


def monthly_history(today=None, filters=None):
    """[(month, busy GPU-hours)] for every month with at least ``MIN_DAYS`` days of data, oldest first;
    ``filters`` narrows the GPUs (keyword lookups on ``GPUDaily``, e.g. ``{"gpu__node__site": site}``)."""
    from collections import defaultdict

    from django.db.models import F, Sum
    from django.utils import timezone

    from inventory.models import GPUDaily

    today = today or timezone.localdate()
    # Summed per day in the database (a few hundred rows a year), then per month here: grouping by month in SQL
    # would run a date function on every row, which SQLite does in Python.
    days = (GPUDaily.objects.filter(day__lte=today, util_mean__isnull=False, **(filters or {}))
            .values("day").annotate(busy=Sum(F("hours") * F("util_mean") / 100.0)).order_by("day"))
    months = defaultdict(list)
    for row in days:
        months[month_start(row["day"])].append(row["busy"])
    history = []
    for month, busy in sorted(months.items()):
        if len(busy) >= MIN_DAYS:
            history.append((month, sum(busy) / len(busy) * DAYS_PER_MONTH))
    return history


def regular_series(history):
    """The history as one value per month from its first to its last month, gaps filled linearly."""
    first = history[0][0]
    positions = [months_between(first, month) for month, _ in history]
    values = [value for _, value in history]
    return np.interp(np.arange(positions[-1] + 1), positions, values)


def preload():
    """Import the forecasting libraries now (about 4 s on a cold start), so that a web server does it
    while it boots rather than in the first plan analysis a user opens. Management commands that never
    forecast keep starting fast: the import stays lazy everywhere else."""
    import pandas  # noqa: F401
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel  # noqa: F401


def _ets(series, horizon, seasonal):
    """Fit an additive-error ETS model and return (mean, lower, upper) for ``horizon`` months."""
    import pandas as pd
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel

    model = ETSModel(pd.Series(series), error="add", trend="add", seasonal="add" if seasonal else None,
                     seasonal_periods=12 if seasonal else None)
    with warnings.catch_warnings():  # convergence chatter on short or perfectly regular series
        warnings.simplefilter("ignore")
        fitted = model.fit(disp=False)
        prediction = fitted.get_prediction(start=len(series), end=len(series) + horizon - 1)
        frame = prediction.summary_frame(alpha=1 - INTERVAL)
    return (frame["mean"].to_numpy(), frame["pi_lower"].to_numpy(), frame["pi_upper"].to_numpy())


def forecast(history, first_month, horizon):
    """Forecast ``horizon`` months of demand from ``first_month`` on, from ``history`` (``monthly_history``)."""
    months = [add_months(first_month, i) for i in range(horizon)]
    if not history:
        return Forecast(history, months, [0.0] * horizon, None, None, "no telemetry history: demand from "
                        "planned workloads only")
    series = regular_series(history)
    last = history[-1][0]
    # Each month's step ahead of the history's last month (1: the month after it). A month inside the history (a plan
    # that started in the past) takes the first step: it is forecast as today, from the history's end.
    ahead = [max(1, months_between(last, month)) for month in months]
    steps = max(ahead)
    notes = []
    if len(series) >= SEASONAL_MONTHS:
        mean, lower, upper = _ets(series, steps, seasonal=True)
        method = f"Holt-Winters (additive trend and yearly seasonality) on {len(series)} months"
    elif len(series) >= TREND_MONTHS:
        mean, lower, upper = _ets(series, steps, seasonal=False)
        method = f"Holt's linear trend on {len(series)} months (seasonality needs {SEASONAL_MONTHS})"
    else:
        level = float(np.mean(series))
        mean, lower, upper = np.full(steps, level), None, None
        method = f"mean of {len(series)} month(s), flat (a trend needs {TREND_MONTHS} months)"
        notes.append("Short history: the forecast is flat at the recent level.")
    mean = _clip([mean[step - 1] for step in ahead])
    if lower is not None:
        lower, upper = _clip([lower[step - 1] for step in ahead]), _clip([upper[step - 1] for step in ahead])
    return Forecast(history, months, mean, lower, upper, method, notes)


def _clip(values):
    return [max(0.0, float(v)) if math.isfinite(v) else 0.0 for v in values]
