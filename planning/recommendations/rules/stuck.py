"""Under-used, stuck nodes: delivered or in burn-in for too long, per site."""

from collections import defaultdict

from django.conf import settings

from ..evidence import figure, ruled_out
from .common import money, priced
from .data import SEV, THRESHOLDS, Finding, K


def stuck_nodes(nodes, t=THRESHOLDS):
    """One finding per site with nodes delivered or in burn-in for longer than ``stuck_days``."""
    by_site = defaultdict(list)
    for n in nodes:
        if n.days > t.stuck_days:
            by_site[n.site_id].append(n)
    findings = []
    for site_id, rows in sorted(by_site.items()):
        rows.sort(key=lambda n: (-n.days, n.hostname))
        gpu_hours = sum(n.gpus * n.days * 24 for n in rows)
        cost = sum(n.gpus * n.days * 24 * n.hour_cost for n in rows)
        contract = sum(n.gpus * n.days * 24 for n in rows if n.priced_by_contract) / gpu_hours if gpu_hours else 0.0
        site = rows[0].site_name
        listed = ", ".join(f"{n.hostname} ({n.state.lower()} for {n.days} days)" for n in rows)
        count = f"{len(rows)} node{'s' if len(rows) != 1 else ''}"
        findings.append(Finding(
            kind=K.UNDER_USED, key=f"{K.UNDER_USED}:stuck:site={site_id}",
            severity=SEV.HIGH if max(n.days for n in rows) > 2 * t.stuck_days else SEV.MEDIUM,
            title=f"{count} stuck before service at {site}",
            summary=(f"At {site}, {count} waited longer than {t.stuck_days} days to enter service: {listed}. "
                     f"Their {gpu_hours:,.0f} GPU-hours since then went unused: {money(cost)} at {priced(contract)}."),
            action=("Chase the vendor for the parts or fixes that hold them back, and finish burn-in, so that these "
                    "nodes enter service before anything new is bought."),
            figures=[
                figure("Nodes stuck in delivered or burn-in", len(rows), "", f"> {t.stuck_days} days"),
                figure("GPU-hours unused since", gpu_hours, "GPU-h"),
                figure("Cost of those GPU-hours", round(cost, 2), settings.COST_CURRENCY, priced(contract)),
                {"label": "Nodes", "value": None, "unit": "", "rule": "", "rows": [
                    {"hostname": n.hostname, "state": n.state, "since": n.since.isoformat(), "days": n.days,
                     "gpus": n.gpus, "hour_cost": round(n.hour_cost, 4),
                     "priced_by": "contract" if n.priced_by_contract else "default"} for n in rows]},
            ],
            chart={"type": "hbar", "title": f"Days before service, {site}", "data": {
                "labels": [n.hostname for n in rows], "x_title": "days in the state",
                "series": [{"name": "days", "values": [n.days for n in rows]}]}},
            site_id=site_id, node_count=len(rows),
            measured={"gpu_hours": gpu_hours, "idle_cost": round(cost, 2)},
            ruled_out=[ruled_out("lifecycle_record", "Checked: the lifecycle record shows no move since each node "
                                                     "was delivered or began burn-in (the dates below). If one is in "
                                                     "service already, record its move: it is then not counted.",
                                 *(figure(f"{n.hostname}: {n.state.lower()} since", n.since.date().isoformat())
                                   for n in rows))],
        ))
    return findings
