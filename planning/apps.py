from django.apps import AppConfig


class PlanningConfig(AppConfig):
    name = "planning"
    verbose_name = "Planning"

    def ready(self):
        from inventory.costs import register_cost_provider
        from portal.files import delete_file_with_row
        from portal.registry import register_panel, register_warmup

        from .contracts.costs import node_gpu_hour_costs
        from .dashboard import recommendations_panel, renewals_panel
        from .webhooks import delivery  # noqa: F401  (registers the send_webhook Celery task in workers)

        register_cost_provider(node_gpu_hour_costs)
        delete_file_with_row(self.get_model("ContractDocument"))
        register_panel("planning/panels/renewals.html", renewals_panel, order=20)
        register_panel("planning/panels/recommendations.html", recommendations_panel, order=30)
        register_warmup("planning.plans.forecast.preload")  # a web server loads the forecasting libraries as it boots
