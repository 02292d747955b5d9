"""Time in state ("in burn-in for 23 days") on the node and GPU lists, their pages and the API: from the latest
lifecycle record into the current state, else the object's creation; lists keep their query count."""

from datetime import timedelta

import pytest
from django.utils import timezone

from inventory.lifecycle import time_in_state, transition
from inventory.models import LifecycleState, StateTransition
from tests.factories import make_gpu, make_node

S = LifecycleState
pytestmark = pytest.mark.django_db


def moved(obj, target, days_ago, user=None):
    """Move ``obj`` to ``target`` and date its lifecycle record ``days_ago`` days back."""
    transition(obj, target, user, "test")
    record = StateTransition.objects.filter(object_id=obj.pk, to_state=target).latest("created")
    StateTransition.objects.filter(pk=record.pk).update(created=timezone.now() - timedelta(days=days_ago))
    return obj


def test_time_in_state_reads_as_people_say_it():
    now = timezone.now()
    assert time_in_state(now - timedelta(days=23, hours=5), now) == "23 days"
    assert time_in_state(now - timedelta(days=1, hours=2), now) == "1 day"
    assert time_in_state(now - timedelta(hours=5, minutes=59), now) == "5 hours"
    assert time_in_state(now - timedelta(minutes=59), now) == "under an hour"
    assert time_in_state(None, now) == ""


def test_the_node_list_page_and_api_agree_on_the_time_in_state(manager, manager_client, manager_api):
    burn_in = moved(moved(make_node(hostname="gpu-burn", state=S.ORDERED), S.DELIVERED, 30), S.BURN_IN, 23)
    # Back in service after a repair 3 days ago: the latest record into "in service", not the first one.
    repaired = make_node(hostname="gpu-back", state=S.IN_SERVICE)
    for target, days in ((S.DEGRADED, 9), (S.IN_REPAIR, 8), (S.IN_SERVICE, 3)):
        moved(repaired, target, days)
    page = manager_client.get("/inventory/nodes/").content.decode()
    assert "In state for" in page
    row = page[page.index("gpu-burn"):]
    assert "23 days" in row[:row.index("</tr>")]
    row = page[page.index("gpu-back"):]
    assert "3 days" in row[:row.index("</tr>")]
    detail = manager_client.get(burn_in.get_absolute_url()).content.decode()
    assert "Burn-in for 23 days" in detail
    api = {n["hostname"]: n for n in manager_api.get("/api/inventory/nodes/").json()["results"]}
    since = timezone.datetime.fromisoformat(api["gpu-burn"]["state_since"])
    assert time_in_state(since) == "23 days"
    assert time_in_state(timezone.datetime.fromisoformat(api["gpu-back"]["state_since"])) == "3 days"


def test_without_a_record_the_time_counts_from_creation(manager_client):
    node = make_node(hostname="gpu-old", state=S.IN_SERVICE)
    StateTransition.objects.filter(object_id=node.pk).delete()
    type(node).objects.filter(pk=node.pk).update(created=timezone.now() - timedelta(days=400))
    assert "In service for 400 days" in manager_client.get(node.get_absolute_url()).content.decode()


def test_the_gpu_list_and_page_show_the_time_in_state(manager_client, manager_api):
    gpu = moved(make_gpu(node=make_node(), state=S.IN_SERVICE), S.DEGRADED, 5)
    page = manager_client.get("/inventory/gpus/").content.decode()
    assert "In state for" in page and "5 days" in page
    assert "Degraded for 5 days" in manager_client.get(gpu.get_absolute_url()).content.decode()
    row = manager_api.get(f"/api/inventory/gpus/{gpu.pk}/").json()
    assert time_in_state(timezone.datetime.fromisoformat(row["state_since"])) == "5 days"


def test_lists_keep_their_query_count_however_many_rows(manager_client, django_assert_max_num_queries):
    def nodes(n):
        for _ in range(n):
            node = moved(make_node(state=S.ORDERED), S.DELIVERED, 4)
            moved(make_gpu(node=node, state=S.IN_SERVICE), S.DEGRADED, 2)

    nodes(1)
    for url in ("/inventory/nodes/", "/inventory/gpus/"):
        manager_client.get(url)
        with django_assert_max_num_queries(40) as few:
            manager_client.get(url)
        nodes(10)
        with django_assert_max_num_queries(len(few)):
            page = manager_client.get(url).content.decode()
        assert page.count("4 days" if "nodes" in url else "2 days") >= 11
