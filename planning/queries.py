"""What the global search finds in planning (``portal.registry``): contracts, purchase orders, capacity plans and
their workloads, each kind for the users who may view it."""

from portal.search import search_kinds

from .models import CapacityPlan, Contract, PlanWorkload, PurchaseOrder

SEARCH_LOOKS_AT = (
    ("contract numbers, titles and vendors", "planning.view_contract"),
    ("purchase order numbers and vendors", "planning.view_purchaseorder"),
    ("capacity plans and their workloads", "planning.view_capacityplan"),
)


def search(term, user):
    """``portal.search`` groups, one query each. Exact matches: a contract's or an order's number (its vendor's
    reference, or the order's external id) and a plan's name."""
    term = term.strip()
    if not term:
        return []
    return search_kinds(
        term,
        user,
        [  # title, permission, queryset, fields containing it, fields equal to it
            (
                "Contracts",
                "planning.view_contract",
                Contract.objects.all(),
                ["reference", "title", "vendor"],
                ["reference"],
            ),
            (
                "Purchase orders",
                "planning.view_purchaseorder",
                PurchaseOrder.objects.all(),
                ["reference", "vendor", "external_id"],
                ["reference", "external_id"],
            ),
            ("Capacity plans", "planning.view_capacityplan", CapacityPlan.objects.all(), ["name"], ["name"]),
            ("Workloads", "planning.view_capacityplan", PlanWorkload.objects.select_related("plan"), ["name"], []),
        ],
    )
