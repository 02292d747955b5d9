"""Issue 36's journey in a real browser (the system Chromium via Playwright, against ``live_server`` on PostgreSQL):
from an allocation request to an approved allocation, synced to Slurm, to the team's monthly statement.

1. The vision team's lead (a researcher who manages the team) logs in, opens Telemetry → Allocations, asks for an
   allocation (a first try with the period ending before it starts comes back with the message), and reads that
   another manager decides.
2. Two managers approve it (the budget is over the second-approval threshold, set low here); the second sees it in
   force, then the allocation's page: its use worked out by hand from the jobs below, and the burn-down drawn.
3. The second manager looks at the (simulated) Slurm, approves the changes (``sacctmgr -i`` commands, the budget as
   GrpTRESMins in GPU-minutes), sees each verified, and a second look has nothing to change; the simulated Slurm
   holds the limits.
4. The manager issues the last closed month on the statements page; the lead opens Telemetry → Statements, sees the
   team's statement for that month whose GPU-hours are the month's allocated GPU-hours of the team (the API's
   figure), and downloads its CSV.

Every page runs without a JS error, a failed request or a request to another host (the one 400 is the refused
form, checked and then let go).
"""

import csv
import io
import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import override_settings
from django.utils import timezone
from playwright.sync_api import expect

from inventory.models import AllocationRequest, SlurmSync, Team, TeamAllocation, TeamMember, TelemetrySource
from inventory.statements.models import Statement
from inventory.teams import sacctmgr, slurm_simulator
from inventory.telemetry import allocation_rollup
from inventory.telemetry.queries import calendar_month, last_closed_month
from inventory.telemetry.rollups import floor_hour
from portal.roles import MANAGER, RESEARCHER
from tests.factories import make_gpu, make_node
from tests.helpers.accounts import make_user
from tests.helpers.goodput import H, add_job
from tests.helpers.statements import make_rate_card
from tests.helpers.telemetry import freeze_now

pytestmark = pytest.mark.django_db(transaction=True)
pytest_plugins = ["tests.helpers.browser"]

BUDGET, GPU_LIMIT = 1000, 8


@pytest.fixture
def simulated_slurm(tmp_path):
    """The demo's simulated Slurm (the live server's thread reads the same settings), vision's account as someone
    set it up before the portal: a share of 10, no limits, no users. Two approvals from 500 GPU-hours."""
    with override_settings(SLURM_SYNC_BACKEND="simulator", SLURM_CLUSTER="demo", VAR_DIR=tmp_path,
                           ALLOCATION_SECOND_APPROVAL_GPU_HOURS=500):
        slurm_simulator.seed("demo", {"vision": {"users": [], "share": 10}}, {"gpu": {"AllowQos": "ALL"}})
        yield


def log_in(page, username, next_url):
    page.goto(f"/accounts/login/?next={next_url}")
    page.fill("#id_username", username)
    page.fill("#id_password", f"pw-{username}")
    with page.expect_navigation(url=re.compile(r"^https?://[^/]+" + re.escape(next_url) + "$")):
        page.get_by_role("button", name="Log in").click()
    page.wait_for_load_state("networkidle")  # the page's own requests done before the next click


def log_out(page):
    page.locator(".usermenu .menu-button").click()
    with page.expect_navigation():
        page.get_by_role("button", name="Log out").click()


def open_menu(page, section, item, url):
    """The main navigation: ``section``'s menu, then ``item``."""
    page.locator(".mainnav .menu-button", has_text=section).click()
    with page.expect_navigation(url=re.compile(re.escape(url) + "$")):
        page.locator(".mainnav .menu-items").get_by_role("link", name=item, exact=True).click()


def messages(page):
    return page.locator(".messages")


def hours(start, end):
    return (end - start).total_seconds() / 3600


def gpu_hours(jobs, start, end, now):
    """By hand: Σ GPUs × hours of each vision job's run inside [start, end) (a running job runs until now)."""
    return sum(gpus * max(0.0, hours(max(begin, start), min(finish or now, end)))
               for account, gpus, begin, finish in jobs if account == "vision")


def test_from_a_request_to_a_synced_allocation_to_a_statement(simulated_slurm, browser_page, monkeypatch):
    session, page = browser_page, browser_page.page
    now = freeze_now(monkeypatch)  # half past this hour, for the figures to hold still while the test runs
    h, today = floor_hour(now), timezone.localdate(now)
    month = last_closed_month(now)
    month_start, month_end = calendar_month(month)

    vision, speech = Team.objects.create(name="vision"), Team.objects.create(name="speech")
    TeamMember.objects.create(team=vision, user=make_user("lena", RESEARCHER), role="manager")
    make_user("ann", MANAGER)
    make_user("max", MANAGER)
    g1, g2 = make_node(hostname="g1"), make_node(hostname="g2")
    for node in (g1, g2):
        for _ in range(8):
            make_gpu(node=node)
    source = TelemetrySource.objects.create(name="slurm", kind="slurm", url="http://slurm/slurmdb/v0.0.40/jobs")
    # The jobs (no node is ever overbooked: 8 GPUs each):
    #   J1 vision g1 8 GPUs, the closed month's 3rd 00:00 → 10:00          8 × 10  = 80
    #   J2 vision g2 4 GPUs, its 10th 06:00 → 12:00                         4 × 6   = 24
    #   J3 speech g2 4 GPUs, its 10th 06:00 → 16:00  (another team's)       4 × 10  = 40, not vision's
    #   J4 vision g1 4 GPUs, h − 4 h → h − 1 h (this month)                 4 × 3   = 12
    #   J5 vision g2 2 GPUs, h − 2 h → running now (h + 30 min)             2 × 2.5 = 5
    # So vision used 80 + 24 + 12 + 5 = 121 GPU-hours since the closed month's first day, 104 of them in that month
    # (in a month's first four hours J4 and J5 fall partly in the closed month: ``gpu_hours`` says the same then).
    jobs = [
        ("vision", 8, month_start + timedelta(days=2), month_start + timedelta(days=2, hours=10), g1, "COMPLETED"),
        ("vision", 4, month_start + timedelta(days=9, hours=6), month_start + timedelta(days=9, hours=12), g2,
         "COMPLETED"),
        ("speech", 4, month_start + timedelta(days=9, hours=6), month_start + timedelta(days=9, hours=16), g2,
         "COMPLETED"),
        ("vision", 4, h - 4 * H, h - H, g1, "COMPLETED"),
        ("vision", 2, h - 2 * H, None, g2, "RUNNING"),
    ]
    for number, (account, gpus, start, end, node, state) in enumerate(jobs, 1):
        add_job(source, str(number), node, gpus, start - 5 * timedelta(minutes=1), start, end, state, account=account)
    by_hand = [(account, gpus, start, end) for account, gpus, start, end, _, _ in jobs]
    used = gpu_hours(by_hand, month_start, now, now)
    in_month = gpu_hours(by_hand, month_start, month_end, now)
    if h - 4 * H >= month_end:  # the usual case, written down
        assert (used, in_month) == (121.0, 104.0)
    make_rate_card(month, {(None, ""): "2.00"}, note="journey")

    # 1. The lead asks for an allocation from the closed month's first day to two months ahead.
    log_in(page, "lena", "/")
    open_menu(page, "Telemetry", "Allocations", "/inventory/allocations/")
    expect(page.locator("h1")).to_contain_text("allocations")
    with page.expect_navigation(url=re.compile(r"/inventory/allocations/requests/new/$")):
        page.get_by_role("link", name="Request an allocation").click()
    end = today + timedelta(days=60)
    page.select_option("#id_team", label="vision")
    page.fill("#id_start", f"{month:%Y-%m-%d}")
    page.fill("#id_end", f"{month - timedelta(days=1):%Y-%m-%d}")  # before the start: refused
    page.fill("#id_gpu_hours", str(BUDGET))
    page.fill("#id_max_gpus", str(GPU_LIMIT))
    page.fill("#id_reason", "Detection model retraining before the spring release")
    with page.expect_navigation():
        page.get_by_role("button", name="Send the request").click()
    expect(page.locator("form.form")).to_contain_text("The period ends before it starts.")
    assert not AllocationRequest.objects.exists()
    form_url = f"{session.base_url}/inventory/allocations/requests/new/"
    assert session.bad_responses == [f"400 POST {form_url}"]  # the refused form comes back as a 400,
    assert len(session.console_errors) == 1 and form_url in session.console_errors[0]  # which the console logs
    session.bad_responses.clear()
    session.console_errors.clear()
    expect(page.locator("#id_gpu_hours")).to_have_value(str(BUDGET))  # what was typed is kept
    page.fill("#id_end", f"{end:%Y-%m-%d}")
    with page.expect_navigation(url=re.compile(r"/inventory/allocations/requests/\d+/$")):
        page.get_by_role("button", name="Send the request").click()
    pending = AllocationRequest.objects.get()
    assert (pending.team, pending.start, pending.end, pending.gpu_hours, pending.max_gpus) == (
        vision, month, end, BUDGET, GPU_LIMIT)
    expect(messages(page)).to_contain_text(f"Request #{pending.pk} sent")
    expect(page.locator("h1")).to_contain_text("Pending")
    expect(page.get_by_text("A manager other than you approves or rejects it")).to_be_visible()
    expect(page.get_by_role("button", name="Approve")).to_have_count(0)
    expect(page.locator("h3", has_text="Approvals")).to_contain_text("0 of 2")
    session.screenshot("allocation-journey-01-request")
    log_out(page)

    # 2. Two managers approve: the first from Allocations → Requests, the second the same way.
    for manager, comment, said in (("ann", "Fits the spring plan", "needs 1 more manager's approval"),
                                   ("max", "Agreed", "is in force")):
        log_in(page, manager, "/inventory/allocations/")
        with page.expect_navigation(url=re.compile(r"/inventory/allocations/requests/$")):
            page.locator(".page-head").get_by_role("link", name="Requests", exact=True).click()
        row = page.locator("#object-table tbody tr", has_text="vision")
        expect(row).to_have_count(1)
        with page.expect_navigation(url=re.compile(rf"/inventory/allocations/requests/{pending.pk}/$")):
            row.get_by_role("link", name=str(pending.pk), exact=True).click()
        page.fill("#decision input[name=comment]", comment)
        with page.expect_navigation(url=re.compile(rf"/inventory/allocations/requests/{pending.pk}/$")):
            page.get_by_role("button", name="Approve").click()
        expect(messages(page)).to_contain_text(said)
        expect(page.locator("#approvals")).to_contain_text(comment)
        if manager == "ann":
            log_out(page)
    allocation = TeamAllocation.objects.get()
    assert AllocationRequest.objects.get().status == "approved" and allocation.gpu_hours == BUDGET
    expect(page.locator("h1")).to_contain_text("Approved")
    session.screenshot("allocation-journey-02-approved")

    # The allocation's page: the use by hand (121.0 GPU-hours of 1,000: 12.1 %), 2 GPUs running, the burn-down.
    with page.expect_navigation(url=re.compile(rf"/inventory/allocations/{allocation.pk}/$")):
        page.get_by_role("link", name="The allocation").click()
    use = page.locator("#allocation-use")
    percent = round(100 * used / BUDGET, 1)
    expect(use).to_contain_text(f"{used:.1f} GPU-hours ({percent} % of the budget)")
    expect(use).to_contain_text(f"{BUDGET - used:.1f} GPU-hours")
    expect(use.locator("tr", has_text="Running now")).to_contain_text(f"2 GPUs of {GPU_LIMIT}")
    page.locator("#burn-down .chart .main-svg").first.wait_for()  # plotly drew it
    expect(page.locator("#burn-down .chart .legend")).to_contain_text("Budget")
    expect(page.locator("#requests tbody tr")).to_have_count(1)
    session.screenshot("allocation-page", docs=True)

    # 3. The Slurm sync (no link leads to it: the manager types its address, as docs/allocations.md names it).
    page.goto("/inventory/allocations/slurm/")
    expect(page.locator("body")).to_contain_text("No look at Slurm yet")
    with page.expect_navigation(url=re.compile(r"/inventory/allocations/slurm/\d+/$")):
        page.get_by_role("button", name="Look at Slurm now").click()
    look = SlurmSync.objects.get()
    assert look.status == SlurmSync.Status.PROPOSED
    changes = page.locator("#sync-changes")
    expect(messages(page)).to_contain_text(f"{len(look.changes)} change(s) to approve")
    expect(changes.locator("tbody tr")).to_have_count(len(look.changes))
    minutes = BUDGET * 60  # the budget in GPU-minutes
    expect(changes.locator("tbody code")).to_have_text([  # the lead's Slurm user, the GPU limit, the budget
        "sacctmgr -i add user lena Account=vision Cluster=demo",
        f"sacctmgr -i modify account where name=vision cluster=demo set GrpTRES=gres/gpu={GPU_LIMIT}",
        f"sacctmgr -i modify account where name=vision cluster=demo set GrpTRESMins=gres/gpu={minutes}",
    ])
    session.screenshot("slurm-sync", docs=True)
    with page.expect_navigation(url=re.compile(rf"/inventory/allocations/slurm/{look.pk}/$")):
        page.get_by_role("button", name="Approve and apply, one change at a time").click()
    expect(messages(page)).to_contain_text(f"{len(look.changes)} of {len(look.changes)} changes applied and verified")
    outcomes = page.locator("#sync-applied tbody tr .badge")
    expect(outcomes).to_have_count(len(look.changes))
    assert set(outcomes.all_inner_texts()) == {"verified"}
    expect(page.locator("h1 .badge")).to_have_text("Applied")
    with page.expect_navigation(url=re.compile(r"/inventory/allocations/slurm/\d+/$")):
        page.get_by_role("button", name="Look at Slurm now").click()
    expect(messages(page)).to_contain_text("Nothing to change")
    expect(page.locator("#sync-changes")).to_contain_text("nothing to change")
    # Now that Slurm holds the budget, the look warns that the simulated cluster's usage decays (a week's half-life).
    expect(page.locator("#sync-warnings")).to_contain_text("PriorityDecayHalfLife=7-00:00:00")
    held = {row.user: row for row in sacctmgr.read_associations("demo", runner=slurm_simulator.runner())
            if row.account == "vision"}
    assert set(held) == {"", "lena"}
    assert held[""].grp_tres == {"gres/gpu": GPU_LIMIT} and held[""].grp_tres_mins == {"gres/gpu": minutes}

    # 4. The manager issues the closed month on the statements page.
    open_menu(page, "Telemetry", "Statements", "/inventory/statements/")
    expect(page.locator("#issue-month #id_month")).to_have_value(f"{month:%Y-%m}")  # the last closed month
    with page.expect_navigation(url=re.compile(r"/inventory/statements/\?month=")):
        page.get_by_role("button", name="Issue statements").click()
    expect(messages(page)).to_contain_text(f"for {month:%Y-%m}")
    statement = Statement.objects.get(month=month, team=vision)
    log_out(page)

    # The lead sees the team's statement only (speech's is not theirs), its GPU-hours the month's allocated ones.
    log_in(page, "lena", "/")
    open_menu(page, "Telemetry", "Statements", "/inventory/statements/")
    assert Statement.objects.filter(month=month, team=speech).exists()  # issued, and not the lead's to see
    rows = page.locator("#object-table tbody tr")
    expect(rows).to_have_count(1)
    expect(rows).to_contain_text("vision")
    api = page.request.get(f"/api/inventory/allocations/?month={month:%Y-%m}&team=vision")
    assert api.ok
    (figure,) = [group["gpu_hours"] for group in api.json()["groups"] if group["name"] == "vision"]
    rollup = allocation_rollup.allocated(month_start, month_end, now, None, account="vision")[None]["gpu_hours"]
    assert figure == pytest.approx(in_month) and rollup == pytest.approx(in_month)
    assert statement.gpu_hours == Decimal(str(in_month)).quantize(statement.gpu_hours)
    with page.expect_navigation(url=re.compile(rf"/inventory/statements/{statement.pk}/$")):
        rows.get_by_role("link", name=f"{month:%Y-%m}").click()
    expect(page.locator("h1")).to_contain_text(f"{month:%Y-%m}: vision")
    expect(page.get_by_role("row", name="GPU-hours", exact=False).first.locator("td")).to_have_text(
        str(statement.gpu_hours))
    expect(page.locator("#statement-total")).to_have_text(str(statement.total))
    session.screenshot("allocation-journey-03-statement")
    with page.expect_navigation(url=re.compile(rf"/inventory/rate-cards/{statement.rate_card.pk}/$")):
        page.locator("#statement-summary").get_by_role("link", name=f"Rate card from {month:%Y-%m-%d}").click()
    expect(page.locator("body")).to_contain_text("2.00")  # the card's one rate, per GPU-hour
    page.go_back()
    page.wait_for_url(re.compile(rf"/inventory/statements/{statement.pk}/$"))
    with page.expect_download() as download:
        page.locator("#download-csv").click()
    assert download.value.suggested_filename == f"statement-vision-{month:%Y-%m}.csv"
    lines = list(csv.DictReader(io.StringIO(download.value.path().read_text())))
    total = lines[-1]
    assert total["kind"] == "total" and Decimal(total["gpu_hours"]) == statement.gpu_hours
    assert Decimal(total["amount"]) == statement.total == (2 * statement.gpu_hours).quantize(Decimal("0.01"))
    assert sum(Decimal(line["gpu_hours"]) for line in lines[:-1]) == statement.gpu_hours
    assert {line["team"] for line in lines} == {"vision"} and {line["month"] for line in lines} == {f"{month:%Y-%m}"}
    page.wait_for_load_state("networkidle")
    session.assert_clean()
