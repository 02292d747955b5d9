"""The query layer of the recommendations (``rules`` says what they mean): set-based aggregates, a constant
number of queries whatever the fleet's size, returning the rules' plain data."""

from django.utils import timezone

from ..rules import THRESHOLDS
from .common import FAILED_STATES, FAST_FABRICS, node_prices, window
from .nodes import FAULT_DAY_SOURCES, node_health
from .partitions import add_fabric, add_jobs, add_memory, add_nodes, add_series, add_widths, partition_stats
from .rebalance import add_peers
from .reliability import goodput_range, reliability
from .under_used import hour_cost, idle_nodes, stuck_nodes, team_use, under_used


def gather(now=None, t=THRESHOLDS):
    """(partition stats, suspect nodes' health) for the window ending ``now``."""
    now = now or timezone.now()
    # Each partition's GPU model and the other partitions' nodes per model, for moving idle ones before buying.
    return add_peers(partition_stats(now, t), t), node_health(now, t)


__all__ = [
    "FAILED_STATES", "FAST_FABRICS", "FAULT_DAY_SOURCES", "add_fabric", "add_jobs", "add_memory", "add_nodes",
    "add_series", "add_widths", "gather", "goodput_range", "hour_cost", "idle_nodes", "node_health", "node_prices",
    "partition_stats", "reliability", "stuck_nodes", "team_use", "under_used", "window",
    "add_peers",
]
