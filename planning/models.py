"""Every planning model, from its feature's ``models.py``: Django loads an app's models from here, and other apps
import them as ``planning.models``."""

from .contracts.models import Contract, ContractDocument, RenewalAlert, SLATerm
from .plans.models import CapacityPlan, PlanEvent, PlanItem, PlanWorkload
from .procurement.models import Delivery, DeliveryItem, OrderLine, PurchaseOrder
from .recommendations.models import Recommendation, RecommendationAction
from .webhooks.models import Webhook, WebhookAttempt, WebhookDelivery

__all__ = [
    "CapacityPlan", "Contract", "ContractDocument", "Delivery", "DeliveryItem", "OrderLine", "PlanEvent", "PlanItem",
    "PlanWorkload", "PurchaseOrder", "Recommendation", "RecommendationAction", "RenewalAlert", "SLATerm", "Webhook",
    "WebhookAttempt", "WebhookDelivery",
]
