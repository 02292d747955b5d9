from django.apps import AppConfig


class PlanningConfig(AppConfig):
    name = "planning"
    verbose_name = "Planning"

    def ready(self):
        from . import webhooks  # noqa: F401  (registers the send_webhook Celery task in workers)
