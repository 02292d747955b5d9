"""A reclaim (idle nodes) recommendation written as the analysis writes it: the idle-nodes rule
(``rules.idle.idle_nodes``) over hand-made ``IdleNode`` figures, stored by ``store.write``."""

from django.utils import timezone

from planning.models import Recommendation
from planning.recommendations import store
from planning.recommendations.rules import IdleNode
from planning.recommendations.rules.idle import idle_nodes


def idle_node(node, idle_days=5, idle_gpu_hours=900.0):
    return IdleNode(node.pk, node.hostname, node.partition, node.site_id, idle_days, idle_gpu_hours + 60,
                    idle_gpu_hours, 1.5, 2.0, False, weeks_observed=4, weeks_idle=4, fleet_util=60.0,
                    fleet_history_util=62.0, partition_util=20.0, partition_history_util=22.0)


def make_reclaim(nodes, **figures):
    """The open reclaim recommendation of ``nodes`` (all in one partition)."""
    findings = idle_nodes([idle_node(node, **figures) for node in nodes])
    store.write(findings, timezone.now())
    return Recommendation.objects.get(key=findings[0].key, status=Recommendation.Status.OPEN)
