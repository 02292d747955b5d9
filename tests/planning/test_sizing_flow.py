"""The sizing page in the planning flow: its default GPU model is the fleet's."""

import re

import pytest
from django.urls import reverse

from inventory.models import GPUModel, LifecycleState
from inventory.queries import most_common_gpu_model
from tests.factories import make_gpu, make_node

pytestmark = pytest.mark.django_db


def gpus(model, count, state=LifecycleState.IN_SERVICE, node=None):
    node = node or make_node()
    for _ in range(count):
        make_gpu(node=node, gpu_model=model, state=state)
    return node


def selected_gpu(client):
    html = client.get(reverse("planning:sizing")).content.decode()
    select = re.search(r'<select name="gpu_model".*?</select>', html, re.S).group(0)
    return re.findall(r'<option value="([^"]*)" selected>', select)


# --- the default GPU model ---

def test_default_gpu_model_is_the_fleets_most_common_in_service(viewer_client, django_assert_num_queries):
    catalog = list(GPUModel.objects.order_by("vendor", "name"))
    first, common, other = catalog[0], catalog[-1], catalog[1]
    gpus(first, 2)
    gpus(first, 6, state=LifecycleState.DELIVERED)  # not in service: does not count
    gpus(common, 3)
    with django_assert_num_queries(1):
        assert most_common_gpu_model() == common.name
    assert selected_gpu(viewer_client) == [common.name]
    gpus(other, 3)  # a tie is broken by name
    assert most_common_gpu_model() == min(common.name, other.name)


def test_without_gpus_in_service_the_catalogs_first_stays_the_default(viewer_client):
    gpus(GPUModel.objects.order_by("name").first(), 4, state=LifecycleState.DELIVERED)
    assert most_common_gpu_model() is None
    assert selected_gpu(viewer_client) == []  # none preselected: the browser shows the catalog's first
