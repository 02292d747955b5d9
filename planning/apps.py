from django.apps import AppConfig


class PlanningConfig(AppConfig):
    name = "planning"
    verbose_name = "Planning"

    def ready(self):
        from inventory.costs import register_cost_provider

        from . import webhooks  # noqa: F401  (registers the send_webhook Celery task in workers)
        from .costs import node_gpu_hour_costs

        register_cost_provider(node_gpu_hour_costs)
