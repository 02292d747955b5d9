"""Under-used, idle nodes: in-service nodes idle on several days of the window, per partition."""

from collections import defaultdict

from django.conf import settings

from ..evidence import figure
from .common import money, priced
from .data import SEV, THRESHOLDS, Finding, K


def idle_nodes(nodes, t=THRESHOLDS):
    """One finding per partition with in-service nodes idle on ≥ ``idle_days`` days of the window."""
    by_partition = defaultdict(list)
    for n in nodes:
        if n.idle_days >= t.idle_days:
            by_partition[n.partition].append(n)
    findings = []
    for partition, rows in sorted(by_partition.items()):
        rows.sort(key=lambda n: n.hostname)
        idle_hours = sum(n.idle_gpu_hours for n in rows)
        cost = sum(n.idle_gpu_hours * n.hour_cost for n in rows)
        contract = sum(n.idle_gpu_hours for n in rows if n.priced_by_contract) / idle_hours if idle_hours else 0.0
        name = partition or "(none)"
        hosts = ", ".join(n.hostname for n in rows)
        count = f"{len(rows)} node{'s' if len(rows) != 1 else ''}"
        findings.append(Finding(
            kind=K.UNDER_USED, key=f"{K.UNDER_USED}:idle:partition={partition}",
            severity=SEV.HIGH if len(rows) >= 3 else SEV.MEDIUM,
            title=f"{count} idle in partition {name}",
            summary=(f"In partition {name}, {count} in service sat idle (GPUs below {t.idle_day_util:.0f} % on "
                     f"average) on {t.idle_days} or more days of the last {t.window_days}: {hosts}. Their idle days "
                     f"held {idle_hours:,.0f} idle GPU-hours, {money(cost)} at {priced(contract)}."),
            action=(f"Reclaim before you buy: return {hosts} to the shared pool (or move them to a partition with "
                    "a queue), or power them down until demand returns."),
            figures=[
                figure("Idle nodes", len(rows), "", f"≥ {t.idle_days} idle days in {t.window_days}"),
                figure("Idle GPU-hours (on idle days)", idle_hours, "GPU-h"),
                figure("Cost of the idle GPU-hours", round(cost, 2), settings.COST_CURRENCY, priced(contract)),
                {"label": "Nodes", "value": None, "unit": "", "rule": "", "rows": [
                    {"hostname": n.hostname, "idle_days": n.idle_days, "util_mean": round(n.util_mean, 2),
                     "idle_gpu_hours": round(n.idle_gpu_hours, 2), "hour_cost": round(n.hour_cost, 4),
                     "priced_by": "contract" if n.priced_by_contract else "default",
                     "idle_cost": round(n.idle_gpu_hours * n.hour_cost, 2)} for n in rows]},
            ],
            chart={"type": "hbar", "title": f"Idle days per node, partition {name}", "data": {
                "labels": [n.hostname for n in rows], "x_title": f"days below {t.idle_day_util:.0f} %",
                "series": [{"name": "idle days", "values": [n.idle_days for n in rows]}]}},
            partition=partition, site_id=rows[0].site_id, node_count=len(rows),
            measured={"idle_gpu_hours": round(idle_hours, 2), "idle_cost": round(cost, 2)},
        ))
    return findings
