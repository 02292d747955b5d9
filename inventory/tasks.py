"""Celery autodiscovery imports ``<app>.tasks``: the inventory's tasks are telemetry's (``telemetry/tasks.py``),
goodput's (``goodput/tasks.py``) and the allocations' (``allocations/tasks.py``)."""

from .allocations import tasks as allocation_tasks  # noqa: F401
from .goodput import tasks as goodput_tasks  # noqa: F401
from .telemetry import tasks  # noqa: F401
