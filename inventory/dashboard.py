"""The inventory's parts of the portal's frames (registered in ``InventoryConfig.ready``): the fleet panel of the
home dashboard; the global search is ``queries.search``."""

import json

from . import queries


def fleet_panel(request):
    """The fleet at a glance: counts by state and site, GPUs by model, capacity, warranty. An account without a
    role sees no fleet data."""
    if not request.user.has_perm("inventory.view_node"):
        return None
    summary = queries.fleet_summary()
    return {
        "summary": summary,
        "gpus_by_model_chart": json.dumps({
            "x": [row["name"] for row in summary["gpus_by_model"]],
            "y": [row["n"] for row in summary["gpus_by_model"]],
        }),
        "nodes_by_state_chart": json.dumps({
            "sites": [site["name"] for site in summary["sites"]],
            "series": [
                {"state": label, "key": key, "counts": [site["nodes"].get(key, 0) for site in summary["sites"]]}
                for key, label in summary["states"]
            ],
        }),
    }
