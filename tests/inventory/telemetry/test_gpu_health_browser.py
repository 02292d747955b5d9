"""GPU health in a real browser (issue 19): a node of 8 GPUs shows one small chart per GPU with its badges above
the fold at 1280×800; a GPU's page draws its own charts, and the range picker's 24 h redraws them for 24 hours."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from inventory.models import GPUHourly
from inventory.telemetry.rollups import floor_hour
from portal.roles import VIEWER
from tests.factories import make_gpu, make_node
from tests.helpers.accounts import make_user

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]


@pytest.fixture
def node():
    """Eight GPUs reporting 7 days of hours; gpu3 runs hot (92 °C) and counts ECC errors in its last hours."""
    node = make_node(hostname="dgx-h01")
    gpus = [make_gpu(node=node, slot=slot) for slot in range(8)]
    now = floor_hour(timezone.now())
    rows = []
    for gpu in gpus:
        for back in range(7 * 24):
            hot = gpu.slot == 3 and back < 12
            rows.append(GPUHourly(gpu=gpu, hour=now - timedelta(hours=back), util_mean=40 + back % 50,
                                  gpu_temp_max_c=(92 if hot else 55 + back % 15), memory_temp_max_c=62,
                                  power_mean_w=350, sm_clock_mean_mhz=1980, ecc_sbe_errors=(1 if hot else 0),
                                  ecc_dbe_errors=0))
    GPUHourly.objects.bulk_create(rows)
    return node, gpus


def log_in(page, next_url):
    user = make_user("vic", VIEWER)
    page.goto(f"/accounts/login/?next={next_url}")
    page.fill("#id_username", user.username)
    page.fill("#id_password", "pw-vic")
    with page.expect_navigation(url=re.compile(re.escape(next_url) + "$")):
        page.get_by_role("button", name="Log in").click()


def test_node_and_gpu_health_charts(node, browser_page):
    node, gpus = node
    session, page = browser_page, browser_page.page
    log_in(page, f"/inventory/nodes/{node.pk}/")
    charts = page.locator("#gpu-health .health-chart .chart")
    expect(charts).to_have_count(8)
    expect(page.locator("#gpu-health .js-plotly-plot")).to_have_count(8)  # every small chart drawn
    hot = page.locator('#gpu-health .health-chart[data-gpu="gpu3"]')
    expect(hot.locator('[data-badge="hot"]')).to_have_text("hot 92 °C")
    expect(hot.locator('[data-badge="ecc"]')).to_have_text("ECC 12 single-bit")  # 12 hot hours, 1 each
    last = charts.nth(7).bounding_box()
    assert last["y"] + last["height"] <= 800, "the eight charts are above the fold at 1280×800"
    session.screenshot("gpu-health-node", docs=True)

    hot.locator("h3 a").click()
    page.wait_for_url(re.compile(rf"/inventory/gpus/{gpus[3].pk}/"))
    # one chart per metric: NVLink, PCIe replays and remapped rows were never reported: said, not drawn as 0
    expect(page.locator("#gpu-health .health-chart")).to_have_count(11)
    expect(page.locator("#gpu-health .js-plotly-plot")).to_have_count(8)
    expect(page.locator("#gpu-health .chart-empty")).to_have_count(3)
    expect(page.locator('#gpu-health [data-badge="hot"]')).to_be_visible()
    session.screenshot("gpu-health-gpu", docs=True)
    page.get_by_role("link", name="24 hours").click()
    expect(page.locator("#gpu-health h2")).to_have_text("GPU health, 24 hours")
    expect(page.locator("#gpu-health .js-plotly-plot")).to_have_count(8)
    session.assert_clean()
