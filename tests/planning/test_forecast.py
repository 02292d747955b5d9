"""The demand forecast: synthetic series with a known trend and season, short and missing history, and the
monthly history read from the daily rollups."""

import math
from datetime import date, timedelta

import pytest

from planning.plans import forecast as fc
from tests.factories import make_gpu


def months_from(first, n):
    return [fc.add_months(first, i) for i in range(n)]


def series(n, level=1000.0, slope=50.0, amplitude=0.0, first=date(2024, 1, 1)):
    return [(month, level + slope * i + amplitude * math.sin(2 * math.pi * i / 12))
            for i, month in enumerate(months_from(first, n))]


def expected(i, level=1000.0, slope=50.0, amplitude=0.0):
    return level + slope * i + amplitude * math.sin(2 * math.pi * i / 12)


def test_month_arithmetic():
    assert fc.add_months(date(2026, 11, 15), 1) == date(2026, 12, 1)
    assert fc.add_months(date(2026, 11, 15), 2) == date(2027, 1, 1)
    assert fc.add_months(date(2026, 1, 31), -1) == date(2025, 12, 1)
    assert fc.months_between(date(2025, 11, 1), date(2027, 2, 1)) == 15


def test_linear_trend_is_extended():
    history = series(12)
    result = fc.forecast(history, date(2025, 1, 1), 6)
    assert result.method.startswith("Holt's linear trend on 12 months")
    for i, value in enumerate(result.mean):
        assert value == pytest.approx(expected(12 + i), rel=0.02)
    assert result.lower is not None
    assert all(lo <= mean <= up for lo, mean, up in zip(result.lower, result.mean, result.upper, strict=True))


def test_trend_and_yearly_season_are_both_recovered():
    history = series(36, amplitude=200)
    result = fc.forecast(history, date(2027, 1, 1), 12)
    assert result.method.startswith("Holt-Winters")
    for i, value in enumerate(result.mean):
        assert value == pytest.approx(expected(36 + i, amplitude=200), rel=0.03)
    # The season shows: the forecast peaks in April (sin peaks a quarter into the year), not at the end.
    assert max(range(12), key=lambda i: result.mean[i] - 50 * i) == 3


def test_forecast_skips_the_months_between_history_and_plan():
    history = series(12)  # ends December 2024
    result = fc.forecast(history, date(2025, 4, 1), 3)  # the plan starts three months later
    assert result.months == [date(2025, 4, 1), date(2025, 5, 1), date(2025, 6, 1)]
    assert result.mean[0] == pytest.approx(expected(15), rel=0.02)


def test_short_history_is_flat_at_its_mean():
    result = fc.forecast([(date(2026, 9, 1), 100.0), (date(2026, 10, 1), 300.0)], date(2026, 12, 1), 4)
    assert result.mean == [200.0] * 4
    assert result.lower is None and "flat" in result.method
    assert result.notes


def test_no_history_means_no_demand_from_history():
    result = fc.forecast([], date(2026, 12, 1), 3)
    assert result.mean == [0.0, 0.0, 0.0]
    assert "no telemetry history" in result.method


def test_gaps_are_interpolated_not_zero():
    history = [(m, v) for m, v in series(12) if m.month not in (5, 6)]  # two months without data
    assert list(fc.regular_series(history))[4:6] == pytest.approx([expected(4), expected(5)])
    result = fc.forecast(history, date(2025, 1, 1), 2)
    assert result.mean[0] == pytest.approx(expected(12), rel=0.02)


def test_falling_demand_never_goes_below_zero():
    result = fc.forecast(series(12, level=1000, slope=-200), date(2025, 1, 1), 12)
    assert min(result.mean) == 0.0
    assert min(result.lower) >= 0.0


@pytest.mark.django_db
def test_monthly_history_scales_days_with_data_to_the_month():
    from inventory.models import GPUDaily

    gpu = make_gpu()
    # October 2026: 10 days at 50 % (12 busy hours a day); November: 20 days at 100 %; December: 3 days (left out).
    rows = [(date(2026, 10, 1) + timedelta(days=d), 50.0) for d in range(10)]
    rows += [(date(2026, 11, 1) + timedelta(days=d), 100.0) for d in range(20)]
    rows += [(date(2026, 12, 1) + timedelta(days=d), 100.0) for d in range(3)]
    GPUDaily.objects.bulk_create([GPUDaily(gpu=gpu, day=day, hours=24, util_mean=u, samples=24) for day, u in rows])
    GPUDaily.objects.create(gpu=make_gpu(), day=date(2026, 10, 5), hours=24, util_mean=None)  # no reading: ignored
    history = fc.monthly_history(today=date(2026, 12, 3))
    # Busy GPU-hours per day with data × 365 / 12 days (730-hour months, as capacity counts them).
    assert history == [(date(2026, 10, 1), pytest.approx(12 * 365 / 12)), (date(2026, 11, 1), pytest.approx(730))]
