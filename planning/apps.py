from django.apps import AppConfig


class PlanningConfig(AppConfig):
    name = "planning"
    verbose_name = "Planning"

    def ready(self):
        from inventory.costs import register_cost_provider
        from portal.files import delete_file_with_row

        from .contracts.costs import node_gpu_hour_costs
        from .webhooks import delivery  # noqa: F401  (registers the send_webhook Celery task in workers)

        register_cost_provider(node_gpu_hour_costs)
        delete_file_with_row(self.get_model("ContractDocument"))
