"""Per partition: its main GPU model and the other partitions' nodes per GPU model with their load (``Peer``), so
that the capacity rule moves idle nodes of the same model before buying (one query, whatever the fleet)."""

import math
from collections import defaultdict

from django.db.models import Count

from inventory.models import GPU, LifecycleState

from ..rules import THRESHOLDS, Peer


def peak(p, quantile):
    """The ``quantile`` of the partition's hourly mean utilization (nearest rank), else its mean: what its busiest
    hours need, not its average (a service busy by day and idle at night averages low)."""
    hours = sorted(v for v in p.series.get("util", []) if v is not None)
    if not hours:
        return p.util_mean or 0.0
    return hours[max(0, math.ceil(quantile * len(hours)) - 1)]


def add_peers(partitions, t=THRESHOLDS):
    """Sets each partition's ``gpu_model_id``/``gpu_model_name`` (the model of most of its in-service GPUs) and
    ``peers``: a ``Peer`` per other partition and GPU model, from the in-service GPUs of in-service nodes."""
    if not partitions:
        return partitions
    stats = {p.partition: p for p in partitions}
    models = defaultdict(dict)  # partition → {GPU model id: (name, nodes, GPUs)}
    for partition, model_id, name, nodes, gpus in (
            GPU.objects.filter(state=LifecycleState.IN_SERVICE, node__state=LifecycleState.IN_SERVICE,
                               node__partition__in=list(stats))
            .values_list("node__partition", "gpu_model_id", "gpu_model__name")
            .annotate(nodes=Count("node", distinct=True), gpus=Count("pk")).order_by()):
        models[partition][model_id] = (name, nodes, gpus)
    peers = []
    for name, p in stats.items():
        if not models[name]:
            continue
        p.gpu_model_id, (p.gpu_model_name, *_) = max(models[name].items(), key=lambda item: (item[1][2], -item[0]))
        busiest = peak(p, t.rebalance_peak_quantile)
        peers += [Peer(name, model_id, model, nodes, gpus, p.gpus, p.util_mean or 0.0, busiest, p.gpus_waiting,
                       p.jobs_started, p.wait_p50_hours, p.wait_p95_hours)
                  for model_id, (model, nodes, gpus) in sorted(models[name].items())]
    for p in partitions:
        p.peers = [q for q in peers if q.partition != p.partition]
    return partitions
