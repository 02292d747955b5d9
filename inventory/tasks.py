"""Celery autodiscovery imports ``<app>.tasks``: the inventory's tasks are telemetry's (``telemetry/tasks.py``) and
goodput's (``goodput/tasks.py``)."""

from .goodput import tasks as goodput_tasks  # noqa: F401
from .telemetry import tasks  # noqa: F401
