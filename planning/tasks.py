"""Celery's autodiscovery imports ``planning.tasks``: the features' tasks are registered from here."""

from .contracts import tasks as contracts_tasks  # noqa: F401
from .plans import tasks as plans_tasks  # noqa: F401
from .recommendations import tasks as recommendations_tasks  # noqa: F401
from .webhooks import delivery  # noqa: F401
