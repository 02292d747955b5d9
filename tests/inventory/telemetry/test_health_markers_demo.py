"""The demo's bug of issue 37, on ``seed_demo``'s fleet: zrh-h100-007 is degraded for "XID 79 on GPU 3", yet its XID
charts were flat zero and GPU 3 said "no health data". The causes: the incident was only a lifecycle record (no XID
event was ever stored), and the simulator silenced a GPU in repair for all of its history, not from its move there.
Now GPU 3 reports until it went to repair, its XID 79 is an event read from its gauge, marked on its chart with its
meaning, the node's degraded reason links to it, and the home page's health tiles count and list it."""

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from inventory import capacity
from inventory.models import GPU, LifecycleState, Node, StateTransition
from inventory.telemetry.models import GPUHourly, XidEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(settings, client):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    call_command("seed_demo", stdout=StringIO())
    client.force_login(User.objects.get(username="manager"))
    node = Node.objects.get(hostname="zrh-h100-007")
    return client, node, GPU.objects.get(node=node, slot=3)


def test_gpu3s_fault_is_shown_where_the_node_was_taken_out(demo):
    client, node, gpu3 = demo
    assert (node.state, gpu3.state) == (LifecycleState.DEGRADED, LifecycleState.IN_REPAIR)
    (event,) = XidEvent.objects.filter(gpu=gpu3, code=79)
    repair = gpu3.transitions.get(to_state=LifecycleState.IN_REPAIR).created
    degraded = gpu3.transitions.get(to_state=LifecycleState.DEGRADED).created
    assert degraded <= event.ts <= repair  # read from the gauge between the fault and the move to repair
    hours = GPUHourly.objects.filter(gpu=gpu3)
    assert hours.filter(hour__lt=degraded).exists() and not hours.filter(hour__gt=repair).exists()
    assert hours.filter(xid_errors=1).count() == 1

    response = client.get(f"/inventory/nodes/{node.pk}/", {"metric": "xid_errors"})
    gpus = {gpu["name"]: gpu for gpu in response.context["health"]["gpus"]}
    assert [badge.key for badge in gpus["gpu3"]["badges"]] == ["xid"]  # not "no health data"
    chart = next(c for c in response.context["health"]["charts"] if c["title"] == "gpu3")
    assert [(e["label"], e["meaning"]) for e in chart["data"]["events"]] == [("XID 79", "GPU has fallen off the bus")]
    assert max(v or 0 for v in chart["data"]["series"][0]["y"]) == 1  # the XID chart is no longer flat zero
    fault = response.context["health"]["fault"]
    assert fault["reason"] == "XID 79: GPU 3 fell off the bus; node drained" and fault["event"] == event
    assert f'#xid-event-{event.pk}"' in response.content.decode()


def test_home_health_tiles_count_and_list_the_demos_faults(demo):
    client, node, gpu3 = demo
    shown = {tile.key: tile for tile in client.get("/").context["tiles"]}
    out = shown["gpus-out"]
    assert int(out.value) == capacity.count().out_of_service > 0
    listed = client.get(out.url).context["table"]
    assert gpu3.pk in {row.pk for row in listed.data} and listed.data.data.count() == int(out.value)
    xids = client.get(shown["xid-24h"].url).context["table"].data
    assert gpu3.pk in {row.pk for row in xids}
    assert StateTransition.objects.filter(reason__startswith="XID 79").count() == 2  # the node's and the GPU's
