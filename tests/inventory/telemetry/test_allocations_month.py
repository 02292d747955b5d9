"""``/api/inventory/allocations/?month=YYYY-MM``: the calendar month's allocated GPU-hours (the monthly statements'
months, ``queries.calendar_month``), cut at the portal's local midnights; a bad month is a 400 naming the field."""

from datetime import UTC, date, datetime

import pytest

from inventory.models import SlurmJob, TelemetrySource
from inventory.telemetry import allocation_rollup, slurm_figures
from inventory.telemetry.queries import calendar_month, last_closed_month
from portal.roles import VIEWER
from tests.helpers.accounts import make_user, token_client

pytestmark = pytest.mark.django_db
ALLOCATIONS = "/api/inventory/allocations/"


def job(source, job_id, account, partition, gpus, start, end):
    return SlurmJob(source=source, job_id=job_id, account=account, partition=partition, gpus=gpus, node_count=1,
                    submit_time=start, start_time=start, end_time=end, state="COMPLETED")


@pytest.fixture
def jobs():
    """vision: 4 GPUs from 31 Oct 22:00 to 1 Nov 01:00 UTC (2 h in October, 1 in November); speech: 2 GPUs for
    5 hours on 10 Oct; no account: 1 GPU for 3 hours on 2 Nov."""
    source = TelemetrySource.objects.create(name="slurm", kind="slurm", url="http://slurm/slurmdb/v0.0.40/jobs")
    utc = {"tzinfo": UTC}
    SlurmJob.objects.bulk_create([
        job(source, "1", "vision", "train", 4, datetime(2026, 10, 31, 22, **utc), datetime(2026, 11, 1, 1, **utc)),
        job(source, "2", "speech", "infer", 2, datetime(2026, 10, 10, 0, **utc), datetime(2026, 10, 10, 5, **utc)),
        job(source, "3", "", "", 1, datetime(2026, 11, 2, 0, **utc), datetime(2026, 11, 2, 3, **utc)),
    ])
    allocation_rollup.rebuild()


def gpu_hours(answer):
    return {group["name"]: group["gpu_hours"] for group in answer.json()["groups"]}


def test_a_month_of_allocations(jobs):
    client = token_client(make_user("vera", VIEWER))
    october = client.get(ALLOCATIONS, {"month": "2026-10"})
    assert october.status_code == 200, october.content
    assert gpu_hours(october) == {"vision": 8.0, "speech": 10.0}
    assert (october.json()["range"], october.json()["start"], october.json()["end"]) == (
        "2026-10", "2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z")
    november = client.get(ALLOCATIONS, {"month": "2026-11", "group_by": "partition"})
    assert gpu_hours(november) == {"train": 4.0, "(none)": 3.0}


def test_a_month_in_another_time_zone(jobs, settings):
    settings.TIME_ZONE = "Europe/Berlin"  # October ends at 31 Oct 23:00 UTC: vision has 1 h (4 GPU-h) in it
    allocation_rollup.rebuild()  # the daily rows are local days: kept in the time zone the portal runs in
    start, end = calendar_month(date(2026, 10, 1))
    assert slurm_figures.span("7d", datetime(2026, 12, 1, tzinfo=UTC), date(2026, 10, 1)) == (start, end)
    figures = slurm_figures.allocations("account", "7d", now=datetime(2026, 12, 1, tzinfo=UTC),
                                        month=date(2026, 10, 1))
    assert {g["name"]: g["gpu_hours"] for g in figures} == {"vision": 4.0, "speech": 10.0}


@pytest.mark.parametrize("month", ["2026-13", "October", "0000-01", "2026-1"])
def test_a_bad_month_is_a_400(month):
    answer = token_client(make_user("vera", VIEWER)).get(ALLOCATIONS, {"month": month})
    assert answer.status_code == 400
    assert "month" in answer.json()


def test_last_closed_month():
    assert last_closed_month(datetime(2026, 12, 1, 0, 30, tzinfo=UTC)) == date(2026, 11, 1)
    assert last_closed_month(datetime(2026, 1, 15, tzinfo=UTC)) == date(2025, 12, 1)
