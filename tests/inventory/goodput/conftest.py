"""The goodput tests' clock: ``now`` frozen (``tests.helpers.telemetry.freeze_now``); each module builds its fleet
from it."""

import pytest

from tests.helpers.telemetry import freeze_now


@pytest.fixture
def now(monkeypatch):
    return freeze_now(monkeypatch)
