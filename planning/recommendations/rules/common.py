"""Pieces shared by several rules: long queue waits, the utilization chart, the wait figures, how an idle cost
was priced."""

from django.conf import settings

from ..evidence import figure, pct


def long_waits(p, t):
    return p.jobs_started >= t.min_jobs and (
        (p.wait_p50_hours or 0) >= t.wait_p50_hours or (p.wait_p95_hours or 0) >= t.wait_p95_hours)


def util_chart(p, title, names=("util",)):
    labels = {"util": "mean utilization (%)", "util_max": "max utilization (%)", "memory": "frame buffer used (%)"}
    return {"type": "timeseries", "title": title, "data": {
        "x": p.series.get("x", []), "x_title": "hour (UTC)", "y_title": "GPU utilization (%)", "y_range": [0, 100],
        "series": [{"name": labels[name], "y": p.series.get(name, [])} for name in names],
    }}


def wait_figures(p, t):
    return [
        figure("Queue wait p50", p.wait_p50_hours, "h", f"≥ {t.wait_p50_hours} h, or p95 ≥ {t.wait_p95_hours} h"),
        figure("Queue wait p95", p.wait_p95_hours, "h"),
        figure("Jobs started", p.jobs_started, "", f"≥ {t.min_jobs}"),
    ]


def priced(contract_share):
    """What priced an idle cost, in words, from the share of its GPU-hours priced by a contract."""
    default = f"{settings.IDLE_GPU_HOUR_COST:.2f} {settings.COST_CURRENCY} per GPU-hour (IDLE_GPU_HOUR_COST)"
    if contract_share >= 1:
        return "each node's cost per GPU-hour from its contracts"
    if contract_share <= 0:
        return f"the default {default}: no contract gives these nodes a cost"
    return (f"each node's cost per GPU-hour from its contracts ({pct(contract_share):.0f} % of the GPU-hours), "
            f"else the default {default}")


def money(amount):
    return f"{amount:,.0f} {settings.COST_CURRENCY}"
