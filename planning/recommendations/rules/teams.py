"""Under-used, over-allocated teams: a Slurm account's jobs held GPUs that ran nothing.

"Held but unused" is a GPU-hour a job held with no process on the GPU (nothing ran all hour, no memory in use):
GPUs asked for and never used. Low but non-zero utilization is another matter, a performance one (storage, the input
pipeline: ``storage_bound``): asking such a team for fewer GPUs would slow it down further."""


from django.conf import settings

from ..evidence import figure, pct, ruled_out
from .common import money, priced
from .data import SEV, THRESHOLDS, Finding, K


def over_allocated(teams, t=THRESHOLDS):
    """One finding per Slurm account whose jobs held GPUs that ran nothing for ≥ ``team_unused_share`` of the
    GPU-hours they held (over ≥ ``team_min_gpu_hours``)."""
    findings = []
    for team in sorted(teams, key=lambda team: team.account):
        share = team.unused_share
        if share is None or team.held_gpu_hours < t.team_min_gpu_hours or share < t.team_unused_share:
            continue
        unused = team.unused_gpu_hours
        contract = team.contract_priced_hours / team.held_gpu_hours
        main = max(team.partitions, key=team.partitions.get) if team.partitions else ""
        partitions = ", ".join(f"{p or '(none)'} ({h:,.0f} GPU-h)" for p, h in sorted(team.partitions.items()))
        name = team.account or "(none)"
        findings.append(Finding(
            kind=K.UNDER_USED, key=f"{K.UNDER_USED}:team={team.account}",
            severity=SEV.HIGH if share >= 2 * t.team_unused_share else SEV.MEDIUM,
            title=f"Team {name} held GPUs that ran nothing for {pct(share):.0f} % of its GPU-hours",
            summary=(f"Jobs of account {name} held {team.held_gpu_hours:,.0f} GPU-hours in the last {t.window_days} "
                     f"days ({partitions}); in {unused:,.0f} of them ({pct(share):.0f} %) the GPU ran nothing: no "
                     f"process, no memory in use (DCGM). Held and unused: {money(team.idle_cost)} at "
                     f"{priced(contract)}."),
            action=(f"Right-size the GPU requests of team {name}'s jobs (they ask for GPUs they never start work "
                    f"on), or move the team from partition {main or '(none)'} to a shared partition (or allow node "
                    "sharing), so that the GPUs it holds idle return to the pool."),
            figures=[
                figure("GPU-hours held (Slurm, with telemetry)", team.held_gpu_hours, "GPU-h",
                       f"≥ {t.team_min_gpu_hours:.0f} to count"),
                figure("Held GPU-hours that ran nothing (no process)", unused, "GPU-h",
                       f"max utilization < {t.team_unused_util_max:g} % all hour, memory used < "
                       f"{t.team_no_process_memory_gb:g} GB where reported"),
                figure("Unused share of the held GPU-hours", pct(share), "%", f"≥ {pct(t.team_unused_share):.0f} %"),
                figure("Busy GPU-hours (DCGM)", team.busy_gpu_hours, "GPU-h", "held × mean utilization"),
                figure("Cost of the held, unused GPU-hours", round(team.idle_cost, 2), settings.COST_CURRENCY,
                       priced(contract)),
            ],
            chart={"type": "hbar", "title": f"GPU-hours of team {team.account}", "data": {
                "labels": ["held (Slurm)", "ran nothing", "low utilization", "busy (DCGM)"], "x_title": "GPU-hours",
                "series": [{"name": "GPU-hours",
                            "values": [round(team.held_gpu_hours, 1), round(unused, 1),
                                       round(team.low_util_gpu_hours, 1), round(team.busy_gpu_hours, 1)]}]}},
            partition=main,
            measured={"held_gpu_hours": round(team.held_gpu_hours, 2), "busy_gpu_hours": round(team.busy_gpu_hours, 2),
                      "unused_gpu_hours": round(unused, 2), "low_util_gpu_hours": round(team.low_util_gpu_hours, 2),
                      "stalled_gpu_hours": round(team.stalled_gpu_hours, 2), "idle_cost": round(team.idle_cost, 2)},
            ruled_out=[low_utilization(team, t)],
        ))
    return findings


def low_utilization(team, t=THRESHOLDS):
    """The differential entry of the held GPU-hours that ran something, slowly, or held memory and computed nothing:
    a performance problem, not counted as unused."""
    low, stalled = team.low_util_gpu_hours, team.stalled_gpu_hours
    figures = [
        figure("Held GPU-hours busy at low utilization", low, "GPU-h",
               f"ran something, mean < {t.storage_busy_util:.0f} %: not counted as unused"),
        figure("Held GPU-hours with a process that computed nothing", stalled, "GPU-h",
               f"memory used ≥ {t.team_no_process_memory_gb:g} GB, max utilization < {t.team_unused_util_max:g} %: "
               "not counted as unused"),
        figure("Held GPU-hours that ran nothing (no process)", team.unused_gpu_hours, "GPU-h", "counted"),
    ]
    if not low and not stalled:
        why = "Ruled out: every held GPU-hour that was not idle ran at a healthy utilization; none was starved."
    else:
        why = (f"Not counted as unused: {low + stalled:,.0f} held GPU-hours ran a process at low utilization or "
               "waited with memory in use. That is performance (storage read throughput, the input pipeline: see a "
               "storage-bound finding of the partition), not over-allocation; fewer GPUs would not fix it.")
    return ruled_out("low_utilization_not_unused", why, *figures)
