"""Celery autodiscovery imports ``<app>.tasks``: the inventory's tasks are telemetry's (``telemetry/tasks.py``)."""

from .telemetry import tasks  # noqa: F401
