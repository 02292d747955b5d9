"""What the global search finds in planning (``portal.registry``): contracts, purchase orders, capacity plans and
their workloads, each kind for the users who may view it."""

import re

from portal.search import search_kinds

from .models import CapacityPlan, Contract, PlanWorkload, PurchaseOrder

SEARCH_LOOKS_AT = (
    ("contract numbers, titles and vendors", "planning.view_contract"),
    ("purchase order numbers and vendors", "planning.view_purchaseorder"),
    ("capacity plans and their workloads", "planning.view_capacityplan"),
)


ORDER_PREFIX = re.compile(r"^PO\s+", re.IGNORECASE)  # an order as the portal shows it: "PO 4500012345"


def search(term, user):
    """``portal.search`` groups, one query each. Exact matches: a contract's or an order's number (its vendor's
    reference, or the order's external id; "PO 4500012345", as the portal names an order, finds order
    4500012345) and a plan's name."""
    term = term.strip()
    if not term:
        return []
    # title, permission, queryset, fields containing it, fields equal to it
    contracts = ("Contracts", "planning.view_contract", Contract.objects.all(), ["reference", "title", "vendor"],
                 ["reference"])
    orders = ("Purchase orders", "planning.view_purchaseorder", PurchaseOrder.objects.all(),
              ["reference", "vendor", "external_id"], ["reference", "external_id"])
    plans = ("Capacity plans", "planning.view_capacityplan", CapacityPlan.objects.all(), ["name"], ["name"])
    workloads = ("Workloads", "planning.view_capacityplan", PlanWorkload.objects.select_related("plan"), ["name"], [])
    return [*search_kinds(term, user, [contracts]), *search_kinds(ORDER_PREFIX.sub("", term), user, [orders]),
            *search_kinds(term, user, [plans, workloads])]
