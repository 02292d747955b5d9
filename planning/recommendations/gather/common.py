"""What every part of the query layer shares: the window, the job states that count as failed, the fast fabrics,
the nodes' prices."""

from datetime import timedelta

from inventory.models import Fabric
from inventory.telemetry.rollups import floor_hour

from ...procurement.models import OrderLine
from ..rules import THRESHOLDS

FAILED_STATES = ("FAILED", "OUT_OF_MEMORY")
FAST_FABRICS = (Fabric.Kind.INFINIBAND, Fabric.Kind.ROCE)


def window(now, t=THRESHOLDS):
    return floor_hour(now) - timedelta(days=t.window_days), now


def node_prices(model_ids):
    """Price of one node per model: the last order's unit price, else the list price (two queries)."""
    from inventory.models import NodeModel

    prices = {pk: price for pk, price in NodeModel.objects.filter(pk__in=model_ids).values_list("pk", "list_price")}
    seen = set()
    for model_id, price in (OrderLine.objects.filter(node_model__in=model_ids)
                            .order_by("-order__ordered_on", "-pk").values_list("node_model_id", "unit_price")):
        if model_id not in seen:
            seen.add(model_id)
            prices[model_id] = price
    return prices
