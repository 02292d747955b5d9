from django.apps import AppConfig


class PlanningConfig(AppConfig):
    name = "planning"
    verbose_name = "Planning"

    def ready(self):
        from inventory.capacity import register_rental_source
        from inventory.costs import register_cost_provider
        from inventory.goodput.hooks import register_checkpoint_provider
        from portal import events
        from portal.files import delete_file_with_row
        from portal.registry import (
            register_decisions,
            register_menu,
            register_panel,
            register_search_provider,
            register_tiles,
            register_warmup,
        )

        from . import policy  # noqa: F401  (registers planning's rules)
        from .contracts.costs import node_gpu_hour_costs
        from .contracts.coverage import rented_nodes
        from .dashboard import contract_tiles, planning_decisions, recommendations_panel, renewals_panel
        from .goodput import checkpoint_minutes
        from .plans import tasks as plans_tasks  # noqa: F401  (a plan's changes queue its summary's refresh)
        from .queries import SEARCH_LOOKS_AT, search
        from .webhooks import delivery  # also registers the send_webhook Celery task in workers

        register_cost_provider(node_gpu_hour_costs)
        register_rental_source(rented_nodes)  # the capacity model says which GPUs in service are rented, until when
        register_checkpoint_provider(checkpoint_minutes)  # an interruption's lost work: its plan's checkpoints
        register_search_provider(search, looks_at=SEARCH_LOOKS_AT)
        events.subscribe(delivery.emit)  # business events go out to the subscribed webhooks
        register_menu("Planning", order=30, items=[
            ("Contracts", "planning:contract_list", "planning.view_contract"),
            ("Uncovered assets", "planning:uncovered", "planning.view_contract"),
            ("Purchase orders", "planning:purchaseorder_list", "planning.view_purchaseorder"),
            ("Deliveries", "planning:delivery_list", "planning.view_delivery"),
            ("Webhooks", "planning:webhook_list", "planning.view_webhook"),
            ("Capacity plans", "planning:capacityplan_list", "planning.view_capacityplan"),
            ("Recommendations", "planning:recommendation_list", "planning.view_recommendation"),
            ("Workload sizing", "planning:sizing", "inventory.view_gpumodel"),  # any role: sizing reads the catalog
            ("Calibration", "planning:calibration", "planning.view_capacityplan"),
        ])
        delete_file_with_row(self.get_model("ContractDocument"))
        register_tiles(contract_tiles, order=30)
        register_decisions(planning_decisions, order=10)
        register_panel("planning/panels/renewals.html", renewals_panel, order=20)
        register_panel("planning/panels/recommendations.html", recommendations_panel, order=30)
        register_warmup("planning.plans.forecast.preload")  # a web server loads the forecasting libraries as it boots
