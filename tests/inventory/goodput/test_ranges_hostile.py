"""Hostile ranges (issue 37) on the pages and APIs that take them: every value of ``tests.helpers.hostile.HOSTILE``
(calendar ranges' month 13 and dates the wrong way round among them) in ``range``, ``month``, ``start``/``end`` and
``by`` is a page with its message or a JSON 400, never a server error. The sweep of every route
(``tests/portal/test_hostile_params.py``) sends the same values everywhere; this is its part for these reports."""

import pytest

from tests.factories import CapacityPlanFactory, PlanWorkloadFactory
from tests.helpers import hostile

pytestmark = pytest.mark.django_db

PAGES = ("/inventory/goodput/", "/inventory/utilization/", "/inventory/interruptions/")
APIS = ("/api/inventory/goodput/", "/api/inventory/utilization/", "/api/inventory/interruptions/")
PARAMS = ({"range": None}, {"month": None}, {"start": None, "end": None}, {"start": None}, {"by": None})


def sent(params, value):
    return {name: value for name in params}


@pytest.mark.parametrize("value", list(hostile.HOSTILE.values()), ids=list(hostile.HOSTILE))
def test_hostile_ranges_are_never_a_server_error(admin_client, value):
    for url in (*PAGES, *APIS):
        for params in PARAMS:
            response = admin_client.get(url, {**sent(params, value), "group_by": "team"})
            assert response.status_code < 500, (url, params, value[:40])
            if url.startswith("/api/"):
                assert response["Content-Type"].startswith("application/json"), (url, params)
                if response.status_code == 400 and "\x00" not in value:
                    assert set(response.json()) & {"range", "month", "start", "end", "by"}, response.json()


def test_the_time_to_result_page_takes_no_hostile_id(admin_client):
    workload = PlanWorkloadFactory(plan=CapacityPlanFactory(), slurm_account="vision")
    assert admin_client.get(f"/planning/calibration/workloads/{workload.pk}/").status_code == 200
    for bad in ("0", "-1", "99999999999999999999", "abc"):
        assert admin_client.get(f"/planning/calibration/workloads/{bad}/").status_code in (404, 400)
