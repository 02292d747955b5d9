"""Who may do what in the inventory (see ``portal.policy``)."""

import rules

from portal.policy import has_model_perm


@rules.predicate
def changes_asset(user, asset):
    """May change this node or GPU (or one of this model, given the class): its lifecycle state included."""
    return user.has_perm(f"inventory.change_{asset._meta.model_name}")


reads_telemetry = has_model_perm("inventory.view_telemetrysource")

rules.add_perm("inventory.change_state", changes_asset)  # object: a node or GPU (instance or model)
rules.add_perm("inventory.read_telemetry", reads_telemetry)  # utilization charts, data quality, telemetry API
