"""Reliability-bound: inventory.goodput's figures, per partition (``Reliability``)."""

from collections import Counter, defaultdict

from django.db.models import (
    Count,
)

from inventory.goodput import attribution
from inventory.goodput import queries as goodput
from inventory.telemetry.queries import RANGES

from ..rules import (
    THRESHOLDS,
    Reliability,
    lost_share,
    lost_share_limit,
)


def goodput_range(t=THRESHOLDS):
    """The goodput range that covers the window: the shortest of ``RANGES`` at least ``window_days`` long."""
    fitting = [r for r in RANGES.values() if r.periods * (24 if r.daily else 1) >= t.window_days * 24]
    return min(fitting, key=lambda r: r.periods * (24 if r.daily else 1)).key if fitting else "1y"


def reliability(now, t=THRESHOLDS):
    """A ``Reliability`` per partition whose infrastructure interruptions lost more than the limit's share: its
    goodput figures, and per node and GPU model (``goodput_by`` again, filtered to it), its reasons. About ten
    queries, plus about twenty per partition over the limit."""
    range_key = goodput_range(t)
    start = RANGES[range_key].start(now)
    over = [g for g in goodput.goodput_by("partition", range_key, now=now)
            if g["interruptions"] and (lost_share(g) or 0) > lost_share_limit(t)]
    if not over:
        return []
    reasons, minutes = defaultdict(Counter), defaultdict(set)
    for partition, reason, code, checkpoint, count in (
            goodput.interruptions({"cause": attribution.INFRASTRUCTURE}, start, now)
            .filter(partition__in=[g["key"] for g in over])
            .values_list("partition", "reason", "xid_event__code", "checkpoint_minutes")
            .annotate(n=Count("pk")).order_by()):
        words = attribution.REASONS.get(reason, reason)
        if code is not None and reason in (attribution.XID, attribution.ECC):
            words = f"{words} (XID {code})"
        reasons[partition][words] += count
        if checkpoint:
            minutes[partition].add(checkpoint)
    found = []
    for g in over:
        only = {"partition": g["key"]}
        nodes = [n for n in goodput.goodput_by("node", range_key, only, now) if n["interruptions"]]
        models = [m for m in goodput.goodput_by("gpu_model", range_key, only, now) if m["interruptions"]]
        found.append(Reliability(g["key"], g, nodes, models, dict(reasons[g["key"]].most_common()),
                                 goodput.cost_basis([g]), sorted(minutes[g["key"]])))
    return found
