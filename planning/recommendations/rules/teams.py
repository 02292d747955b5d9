"""Under-used, over-allocated teams: a Slurm account's jobs held GPUs they did not use."""


from django.conf import settings

from ..evidence import figure, pct
from .common import money, priced
from .data import SEV, THRESHOLDS, Finding, K


def over_allocated(teams, t=THRESHOLDS):
    """One finding per Slurm account whose jobs held GPUs far more than they used them."""
    findings = []
    for team in sorted(teams, key=lambda team: team.account):
        share = team.used_share
        if share is None or team.held_gpu_hours < t.team_min_gpu_hours or share >= t.team_used_share:
            continue
        unused = team.held_gpu_hours - team.busy_gpu_hours
        contract = team.contract_priced_hours / team.held_gpu_hours
        main = max(team.partitions, key=team.partitions.get) if team.partitions else ""
        partitions = ", ".join(f"{p or '(none)'} ({h:,.0f} GPU-h)" for p, h in sorted(team.partitions.items()))
        findings.append(Finding(
            kind=K.UNDER_USED, key=f"{K.UNDER_USED}:team={team.account}",
            severity=SEV.HIGH if share < t.team_used_share / 2 else SEV.MEDIUM,
            title=f"Team {team.account or '(none)'} uses {pct(share):.0f} % of the GPUs it holds",
            summary=(f"Jobs of account {team.account or '(none)'} held {team.held_gpu_hours:,.0f} GPU-hours in the "
                     f"last {t.window_days} days ({partitions}), yet kept them busy only {pct(share):.0f} % of the "
                     f"time (DCGM): {unused:,.0f} GPU-hours held and unused, {money(team.idle_cost)} at "
                     f"{priced(contract)}."),
            action=(f"Move team {team.account or '(none)'} from partition {main or '(none)'} to a shared partition "
                    "(or allow node sharing), and right-size its jobs' GPU requests, so that the GPUs it holds "
                    "idle return to the pool."),
            figures=[
                figure("GPU-hours held (Slurm, with telemetry)", team.held_gpu_hours, "GPU-h",
                       f"≥ {t.team_min_gpu_hours:.0f} to count"),
                figure("Busy GPU-hours (DCGM)", team.busy_gpu_hours, "GPU-h"),
                figure("Used share of the held GPU-hours", pct(share), "%", f"< {pct(t.team_used_share):.0f} %"),
                figure("Cost of the held, unused GPU-hours", round(team.idle_cost, 2), settings.COST_CURRENCY,
                       priced(contract)),
            ],
            chart={"type": "hbar", "title": f"GPU-hours of team {team.account}", "data": {
                "labels": ["held (Slurm)", "busy (DCGM)"], "x_title": "GPU-hours",
                "series": [{"name": "GPU-hours",
                            "values": [round(team.held_gpu_hours, 1), round(team.busy_gpu_hours, 1)]}]}},
            partition=main,
            measured={"held_gpu_hours": round(team.held_gpu_hours, 2), "busy_gpu_hours": round(team.busy_gpu_hours, 2),
                      "idle_cost": round(team.idle_cost, 2)},
        ))
    return findings
