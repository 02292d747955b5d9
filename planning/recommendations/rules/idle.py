"""Under-used, idle nodes: in-service nodes idle on several days of the window and in the weeks before, per partition.

A week of idleness is not a trend: the whole fleet goes quiet over a holiday or a maintenance week. A node is
reclaimed when its own history says it is idle (``idle_history_weeks_idle`` of the ``idle_history_weeks`` before the
window idle too). One busy in its earlier weeks is passed over; one with too little history to tell (a new node or
fleet) is raised at medium severity at most, and not at all when most of the fleet was idle on the same days."""

from collections import defaultdict

from django.conf import settings

from ..evidence import figure, pct, ruled_out
from .common import money, priced
from .data import SEV, THRESHOLDS, Finding, K

CONFIRMED, UNCONFIRMED, BUSY_BEFORE, SHARED_DIP = "confirmed", "unconfirmed", "busy before", "shared dip"


def verdict(n, t=THRESHOLDS):
    """What an idle node's history says: ``CONFIRMED`` (idle in enough earlier weeks), ``BUSY_BEFORE`` (busy in too
    many of them to get there), else ``SHARED_DIP`` (too little history, and most of the fleet was idle on most of
    its idle days: a holiday) or ``UNCONFIRMED`` (too little history)."""
    if n.weeks_idle >= t.idle_history_weeks_idle:
        return CONFIRMED
    if n.weeks_observed - n.weeks_idle > t.idle_history_weeks - t.idle_history_weeks_idle:
        return BUSY_BEFORE
    return SHARED_DIP if 2 * n.shared_idle_days > n.idle_days else UNCONFIRMED


def idle_nodes(nodes, t=THRESHOLDS):
    """One finding per partition with in-service nodes idle on ≥ ``idle_days`` days of the window whose history does
    not contradict it (``verdict``); the nodes passed over are named in its differential."""
    by_partition = defaultdict(lambda: defaultdict(list))  # partition → verdict → nodes
    for n in nodes:
        if n.idle_days >= t.idle_days:
            by_partition[n.partition][verdict(n, t)].append(n)
    findings = []
    for partition, verdicts in sorted(by_partition.items()):
        for group in verdicts.values():
            group.sort(key=lambda n: n.hostname)
        rows = sorted(verdicts[CONFIRMED] + verdicts[UNCONFIRMED], key=lambda n: n.hostname)
        if rows:
            findings.append(_finding(partition, rows, verdicts, t))
    return findings


def _finding(partition, rows, verdicts, t):
    confirmed, unconfirmed = verdicts[CONFIRMED], verdicts[UNCONFIRMED]
    idle_hours = sum(n.idle_gpu_hours for n in rows)
    cost = sum(n.idle_gpu_hours * n.hour_cost for n in rows)
    contract = sum(n.idle_gpu_hours for n in rows if n.priced_by_contract) / idle_hours if idle_hours else 0.0
    name = partition or "(none)"
    hosts = ", ".join(n.hostname for n in rows)
    count = f"{len(rows)} node{'s' if len(rows) != 1 else ''}"
    weeks = t.idle_history_weeks
    history = (f" {_hosts(confirmed)} {'was' if len(confirmed) == 1 else 'were'} idle in at least "
               f"{t.idle_history_weeks_idle} of the {weeks} weeks before as well." if confirmed else "")
    if unconfirmed:
        history += (f" {_hosts(unconfirmed)} {'has' if len(unconfirmed) == 1 else 'have'} too little history to "
                    f"confirm it (fewer than {t.idle_history_weeks_idle} earlier weeks with readings).")
    action = (f"Reclaim before you buy: return {hosts} to the shared pool (or move them to a partition with "
              "a queue), or power them down until demand returns.")
    if unconfirmed:
        action += f" Ask the owners of {_hosts(unconfirmed)} first: a new node's first quiet week may be its ramp-up."
    return Finding(
        kind=K.UNDER_USED, key=f"{K.UNDER_USED}:idle:partition={partition}",
        # High only for nodes whose own history confirms it; unconfirmed ones never raise it above medium.
        severity=SEV.HIGH if len(confirmed) >= 3 else SEV.MEDIUM,
        title=f"{count} idle in partition {name}",
        summary=(f"In partition {name}, {count} in service sat idle (GPUs below {t.idle_day_util:.0f} % on "
                 f"average) on {t.idle_days} or more days of the last {t.window_days}: {hosts}.{history} Their idle "
                 f"days held {idle_hours:,.0f} idle GPU-hours, {money(cost)} at {priced(contract)}."),
        action=action,
        figures=[
            figure("Idle nodes", len(rows), "", f"≥ {t.idle_days} idle days in {t.window_days}"),
            figure("Idle nodes confirmed by their own history", len(confirmed), "",
                   f"idle in ≥ {t.idle_history_weeks_idle} of the {weeks} weeks before"),
            figure("Idle GPU-hours (on idle days)", idle_hours, "GPU-h"),
            figure("Cost of the idle GPU-hours", round(cost, 2), settings.COST_CURRENCY, priced(contract)),
            {"label": "Nodes", "value": None, "unit": "", "rule": "", "rows": [
                {"hostname": n.hostname, "idle_days": n.idle_days, "util_mean": round(n.util_mean, 2),
                 "idle_weeks_before": f"{n.weeks_idle} of {n.weeks_observed}",
                 "idle_gpu_hours": round(n.idle_gpu_hours, 2), "hour_cost": round(n.hour_cost, 4),
                 "priced_by": "contract" if n.priced_by_contract else "default",
                 "idle_cost": round(n.idle_gpu_hours * n.hour_cost, 2)} for n in rows]},
        ],
        chart={"type": "hbar", "title": f"Idle days per node, partition {name}", "data": {
            "labels": [n.hostname for n in rows], "x_title": f"days below {t.idle_day_util:.0f} %",
            "series": [{"name": "idle days", "values": [n.idle_days for n in rows]}]}},
        partition=partition, site_id=rows[0].site_id, node_count=len(rows),
        measured={"idle_gpu_hours": round(idle_hours, 2), "idle_cost": round(cost, 2),
                  "confirmed_nodes": len(confirmed), "unconfirmed_nodes": len(unconfirmed)},
        ruled_out=[own_history(rows, verdicts, t), fleet_wide_dip(rows, verdicts, t)],
    )


def _hosts(nodes):
    return ", ".join(n.hostname for n in nodes)


def _mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def own_history(rows, verdicts, t=THRESHOLDS):
    """The differential entry of the nodes' own earlier weeks: a dip of this week only would not be their trend."""
    confirmed, unconfirmed, busy = verdicts[CONFIRMED], verdicts[UNCONFIRMED], verdicts[BUSY_BEFORE]
    weeks = t.idle_history_weeks
    figures = [
        figure("Nodes idle in earlier weeks too", len(confirmed), "nodes",
               f"idle in ≥ {t.idle_history_weeks_idle} of the {weeks} weeks before (≥ {t.idle_days} idle days each)"),
        figure("Nodes with too little history", len(unconfirmed), "nodes",
               f"< {t.idle_history_weeks_idle} earlier weeks with readings: medium severity at most"),
        figure("Nodes passed over: busy in earlier weeks", len(busy), "nodes",
               f"busy in > {weeks - t.idle_history_weeks_idle} of the {weeks} weeks before"),
        figure("Fewest idle weeks before, of the nodes raised", min(n.weeks_idle for n in rows), "weeks"),
    ]
    why = []
    if confirmed:
        why.append(f"Ruled out for {_hosts(confirmed)}: idle in the weeks before as well, so not a dip of this week.")
    if unconfirmed:
        why.append(f"Not ruled out for {_hosts(unconfirmed)}: "
                   + ("no daily history before the window" if not any(n.weeks_observed for n in unconfirmed)
                      else "too few earlier weeks with readings")
                   + " to tell a trend from a dip; raised at medium severity at most.")
    if busy:
        why.append(f"Passed over {_hosts(busy)}: busy in the weeks before ("
                   + ", ".join(f"{n.hostname} idle in {n.weeks_idle} of {n.weeks_observed}" for n in busy)
                   + "); this week's idle days are a dip, not their trend.")
    return ruled_out("own_history", " ".join(why), *figures)


def fleet_wide_dip(rows, verdicts, t=THRESHOLDS):
    """The differential entry of a quiet spell shared by the fleet or the partition (a holiday, a maintenance week)."""
    n = rows[0]
    shared = verdicts[SHARED_DIP]
    figures = [
        figure("Fleet utilization in the window", n.fleet_util, "%"),
        figure("Fleet utilization in the weeks before", n.fleet_history_util, "%", f"{t.idle_history_weeks} weeks"),
        figure(f"Partition {n.partition or '(none)'} utilization in the window", n.partition_util, "%"),
        figure(f"Partition {n.partition or '(none)'} utilization in the weeks before", n.partition_history_util, "%"),
        figure("Fleet's other nodes idle on these nodes' idle days (mean)",
               pct(_mean(r.others_idle_share for r in rows)), "%",
               f"a shared dip at ≥ {pct(t.idle_shared_share):.0f} % on most of a node's idle days"),
        figure("Partition's other nodes idle on these nodes' idle days (mean)",
               pct(_mean(r.partition_idle_share for r in rows)), "%"),
    ]
    # Wording only (the verdicts decided): a fleet at less than half its earlier utilization is in a quiet spell.
    dipped = n.fleet_util is not None and n.fleet_history_util and n.fleet_util < n.fleet_history_util / 2
    unconfirmed = verdicts[UNCONFIRMED]
    if unconfirmed and not verdicts[CONFIRMED]:
        why = f"Ruled out: on most of the idle days of {_hosts(unconfirmed)} most of the fleet's other nodes worked."
        together = [n for n in unconfirmed if (n.partition_idle_share or 0.0) >= t.idle_shared_share]
        if together:
            why += (f" Not ruled out for {_hosts(together)}: most of the partition was idle with them, and without "
                    "history a partition nobody uses looks like one in a maintenance week; confirm before reclaiming.")
    elif dipped:
        why = ("The fleet was quieter than in the weeks before, but these nodes were idle then too, while the rest "
               "worked: their idleness is their own, not the fleet's.")
    else:
        why = "Ruled out: the fleet worked as in the weeks before; these nodes' idleness is their own."
    if shared:
        why += (f" Passed over {_hosts(shared)}: too little history, and idle on the same days as most of the fleet "
                "(a holiday).")
    return ruled_out("fleet_wide_dip", why, *figures)
