"""Cost per GPU-hour per node, as another app (planning, from its contracts) knows it.

Inventory does not depend on planning: planning registers a provider when it starts
(``PlanningConfig.ready``), and the utilization figures ask ``gpu_hour_costs`` for the nodes whose cost is
known, falling back to ``settings.IDLE_GPU_HOUR_COST`` for the others.
"""

_providers = []


def register_cost_provider(provider):
    """``provider(day) -> {node_id: cost per GPU-hour}``; registering the same function twice is harmless."""
    if provider not in _providers:
        _providers.append(provider)
    return provider


def gpu_hour_costs(day=None):
    """{node_id: cost per GPU-hour (float)} from every registered provider; {} when none is registered."""
    costs = {}
    for provider in _providers:
        costs.update(provider(day))
    return costs
