"""Celery autodiscovery imports ``<app>.tasks``: the inventory's tasks are telemetry's (``telemetry/tasks.py``),
goodput's (``goodput/tasks.py``), the allocations' (``allocations/tasks.py``) and the statements'
(``statements/tasks.py``)."""

from .allocations import tasks as allocation_tasks  # noqa: F401
from .goodput import tasks as goodput_tasks  # noqa: F401
from .statements import tasks as statement_tasks  # noqa: F401
from .telemetry import tasks  # noqa: F401
