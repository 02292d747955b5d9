"""Support tickets without HTTP: SLA computation (contract lookup, default policy, pauses, breach flags), the
status workflow, notifications, Markdown sanitising, telemetry-fault tickets (deduplicated) and RMA swaps."""

from datetime import date, datetime, timedelta
from decimal import Decimal

import pytest
from django.core import mail
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from inventory.lifecycle import transition
from inventory.models import GPU, LifecycleState, Node, StateTransition
from inventory.telemetry.models import GPUHourly, NodeHourly, TelemetrySource, XidEvent
from planning.models import Contract, SLATerm
from portal.roles import RESEARCHER, SUPPORT
from support import faults, metrics, rendering, rma, sla, workflow
from support.models import Ticket
from tests.factories import make_gpu, make_node, make_rack, make_site, make_storage, make_switch, make_team, make_ticket
from tests.helpers.accounts import make_user

pytestmark = pytest.mark.django_db
S = Ticket.Status
L = LifecycleState
T0 = datetime(2026, 11, 2, 9, 0, tzinfo=timezone.get_current_timezone())


@pytest.fixture
def engineer(db):
    return make_user("sam", SUPPORT)


@pytest.fixture
def researcher(db):
    return make_user("rita", RESEARCHER)


def in_service_node(**kw):
    node = make_node(**kw)
    for state in (L.BURN_IN, L.IN_SERVICE):
        transition(node, state)
    return node


def support_contract(terms, start=date(2026, 1, 1), end=date(2027, 12, 31), **coverage):
    contract = Contract.objects.create(kind=Contract.Kind.SUPPORT, vendor="NVIDIA", reference=f"NVES-{len(terms)}"
                                       f"-{Contract.objects.count()}", start=start, end=end)
    for priority, (response, resolution) in terms.items():
        SLATerm.objects.create(contract=contract, priority=priority, response_hours=response,
                               resolution_hours=resolution)
    for relation, objects in coverage.items():
        getattr(contract, relation).set(objects)
    return contract


# --- SLA ------------------------------------------------------------------------------------------


def test_default_policy_when_no_contract_covers_the_asset(settings):
    settings.SUPPORT_DEFAULT_SLA = {"P1": (2, 10), "P2": (8, 72), "P3": (24, 120), "P4": (72, 240)}
    ticket = make_ticket(node=make_node(), priority="P1", opened=T0)
    assert ticket.sla_contract is None
    assert ticket.response_due == T0 + timedelta(hours=2)
    assert ticket.resolution_due == T0 + timedelta(hours=10)


def test_sla_from_the_support_contract_covering_the_node_through_its_site():
    node = make_node()
    contract = support_contract({"P2": (4, 24)}, sites=[node.site])
    ticket = make_ticket(node=node, priority="P2", opened=T0)
    assert ticket.sla_contract == contract
    assert (ticket.response_due, ticket.resolution_due) == (T0 + timedelta(hours=4), T0 + timedelta(hours=24))


def test_gpu_covered_through_its_rack_and_the_strictest_contract_wins():
    rack = make_rack()
    node = make_node(rack=rack, position=1)
    gpu = make_gpu(node=node)
    support_contract({"P3": (24, 120)}, racks=[rack])
    strict = support_contract({"P3": (Decimal("1.5"), 12)}, gpus=[gpu])
    support_contract({"P3": (1, 2)}, start=date(2020, 1, 1), end=date(2021, 1, 1), gpus=[gpu])  # ended
    Contract.objects.create(kind=Contract.Kind.PURCHASE, vendor="X", reference="P", start=date(2026, 1, 1))
    ticket = make_ticket(gpu=gpu, priority="P3", opened=T0)
    assert ticket.sla_contract == strict
    assert ticket.response_due == T0 + timedelta(hours=1.5)
    assert ticket.node == node and ticket.site == node.site  # filled in from the GPU


def test_switch_storage_and_site_tickets_find_their_contracts():
    site = make_site()
    switch, storage, other_switch = make_switch(site=site), make_storage(site=site), make_switch()
    by_switch = support_contract({"P2": (2, 10)}, switches=[switch])
    by_site = support_contract({"P2": (6, 30)}, sites=[site])
    assert make_ticket(switch=switch, priority="P2").sla_contract == by_switch  # the stricter one
    ticket = make_ticket(storage_system=storage, priority="P2")
    assert (ticket.sla_contract, ticket.site) == (by_site, site)
    assert make_ticket(site=site, priority="P2").sla_contract == by_site
    assert make_ticket(switch=other_switch, priority="P2").sla_contract is None
    assert make_ticket(priority="P2").sla_contract is None  # no asset: the default policy


def test_contract_without_a_term_for_the_priority_falls_back_to_the_default(settings):
    node = make_node()
    support_contract({"P1": (1, 4)}, nodes=[node])
    ticket = make_ticket(node=node, priority="P4", opened=T0)
    assert ticket.sla_contract is None
    assert ticket.resolution_due == T0 + timedelta(hours=settings.SUPPORT_DEFAULT_SLA["P4"][1])


def test_priority_change_recomputes_the_due_times(engineer):
    node = make_node()
    support_contract({"P1": (1, 4), "P3": (24, 120)}, nodes=[node])
    ticket = make_ticket(node=node, priority="P3", opened=T0)
    workflow.set_priority(ticket, "P1", engineer)
    ticket.refresh_from_db()
    assert ticket.resolution_due == T0 + timedelta(hours=4)


def test_clock_pauses_while_waiting_on_the_requester(engineer, researcher, settings):
    settings.SUPPORT_DEFAULT_SLA = {**settings.SUPPORT_DEFAULT_SLA, "P2": (8, 72)}
    ticket = make_ticket(requester=researcher, priority="P2", opened=T0)
    workflow.change_status(ticket, S.IN_PROGRESS, engineer, now=T0 + timedelta(hours=1))
    assert ticket.first_response_at == T0 + timedelta(hours=1)
    workflow.change_status(ticket, S.WAITING_REQUESTER, engineer, now=T0 + timedelta(hours=2))
    # Paused: no breach even long after the due time, and the due time shown moves with the pause.
    later = T0 + timedelta(hours=100)
    assert sla.state(ticket, later) == sla.PAUSED
    assert sla.effective_due(ticket, "resolution_due", later) == T0 + timedelta(hours=72 + 98)
    assert ticket not in Ticket.objects.breached(later)
    # The requester answers 30 hours later: the clock runs again, 30 hours later than before.
    workflow.add_comment(ticket, researcher, "Here are the logs.", now=T0 + timedelta(hours=32))
    ticket.refresh_from_db()
    assert ticket.status == S.IN_PROGRESS and ticket.paused_since is None
    assert ticket.paused_seconds == 30 * 3600
    assert ticket.resolution_due == T0 + timedelta(hours=72 + 30)
    assert sla.state(ticket, T0 + timedelta(hours=97)) == sla.OK  # due at 102 h: 5 h left
    assert sla.state(ticket, T0 + timedelta(hours=99)) == sla.SOON
    assert sla.state(ticket, T0 + timedelta(hours=103)) == sla.BREACHED


def test_breached_and_breaching_soon_flags_and_querysets(settings):
    settings.SUPPORT_BREACHING_SOON_HOURS = 4
    now = timezone.now()
    breached = make_ticket(priority="P1", opened=now - timedelta(hours=30))  # response and resolution late
    soon = make_ticket(priority="P1", opened=now - timedelta(hours=1))  # response due in 3 h
    fine = make_ticket(priority="P4", opened=now)
    done = make_ticket(priority="P1", opened=now - timedelta(hours=30), status=S.CLOSED)
    assert sla.state(breached, now) == sla.BREACHED
    assert sla.state(soon, now) == sla.SOON
    assert sla.state(fine, now) == sla.OK
    assert list(Ticket.objects.breached(now)) == [breached]
    assert list(Ticket.objects.breaching_soon(now)) == [soon]
    assert set(Ticket.objects.at_risk(now)) == {breached, soon}
    assert done not in Ticket.objects.at_risk(now)


def test_querysets_agree_with_the_badge_for_late_responses_and_paused_tickets(engineer, researcher, settings):
    """The breached / breaching-soon querysets (dashboard, queue, filters, metrics) flag exactly the tickets whose SLA
    badge says so, including a first response that came late and a ticket paused after its clock ran out."""
    settings.SUPPORT_BREACHING_SOON_HOURS = 4
    settings.SUPPORT_DEFAULT_SLA = {**settings.SUPPORT_DEFAULT_SLA, "P1": (4, 24)}
    now = timezone.now()
    late_answer = make_ticket(priority="P1", opened=now - timedelta(hours=10))  # answered at 6 h: 2 h late
    workflow.change_status(late_answer, S.IN_PROGRESS, engineer, now=now - timedelta(hours=4))
    paused_late = make_ticket(requester=researcher, priority="P1", opened=now - timedelta(hours=30))
    workflow.change_status(paused_late, S.IN_PROGRESS, engineer, now=now - timedelta(hours=29))
    workflow.change_status(paused_late, S.WAITING_REQUESTER, engineer, now=now - timedelta(hours=2))  # due at 24 h
    paused_in_time = make_ticket(requester=researcher, priority="P1", opened=now - timedelta(hours=30))
    workflow.change_status(paused_in_time, S.IN_PROGRESS, engineer, now=now - timedelta(hours=29.5))
    workflow.change_status(paused_in_time, S.WAITING_REQUESTER, engineer, now=now - timedelta(hours=29))
    answered_soon = make_ticket(priority="P1", opened=now - timedelta(hours=21))  # resolution due in 3 h
    workflow.change_status(answered_soon, S.IN_PROGRESS, engineer, now=now - timedelta(hours=20))
    fine = make_ticket(priority="P1", opened=now - timedelta(hours=2))  # answered in time, resolution due in 22 h
    workflow.change_status(fine, S.IN_PROGRESS, engineer, now=now - timedelta(hours=1))
    tickets = [late_answer, paused_late, paused_in_time, answered_soon, fine]
    for ticket in tickets:
        ticket.refresh_from_db()
    states = {ticket.title: sla.state(ticket, now) for ticket in tickets}
    assert states == {late_answer.title: sla.BREACHED, paused_late.title: sla.BREACHED,
                      paused_in_time.title: sla.PAUSED, answered_soon.title: sla.SOON, fine.title: sla.OK}
    assert set(Ticket.objects.breached(now)) == {late_answer, paused_late}
    assert set(Ticket.objects.breaching_soon(now)) == {answered_soon}
    assert set(Ticket.objects.at_risk(now)) == {late_answer, paused_late, answered_soon}
    assert metrics.summary(days=30, now=now)["breached"] == 2


def test_resolved_ticket_met_or_breached_and_metrics(engineer):
    now = timezone.now()
    met = make_ticket(priority="P1", opened=now - timedelta(hours=10), category="network")
    workflow.change_status(met, S.IN_PROGRESS, engineer, now=now - timedelta(hours=9))
    workflow.change_status(met, S.RESOLVED, engineer, now=now - timedelta(hours=8))
    late = make_ticket(priority="P1", opened=now - timedelta(hours=50), node=make_node())
    workflow.change_status(late, S.RESOLVED, engineer, now=now - timedelta(hours=2))
    assert sla.state(met) == sla.MET and sla.state(late) == sla.BREACHED
    make_ticket(category="storage", node=late.node)
    data = metrics.summary(days=30)
    assert data["sla_compliance"] == {"resolved": 2, "met": 1, "percent": 50.0}
    assert data["mean_time_to_resolve_hours"] == 25.0  # (2 h + 48 h) / 2
    assert {row["category"]: row["count"] for row in data["open_by_category"]}["storage"] == 1
    assert data["open_by_site"] == [{"site": late.node.site.name, "count": 1}]
    assert metrics.charts(data)["compliance-by-priority"] == {"x": ["P1"], "y": [50.0]}


# --- Workflow -----------------------------------------------------------------------------------


def test_workflow_refuses_moves_that_are_not_allowed(engineer):
    ticket = make_ticket()
    workflow.change_status(ticket, S.RESOLVED, engineer)
    with pytest.raises(ValidationError, match="Cannot go from Resolved to Waiting on vendor"):
        workflow.change_status(ticket, S.WAITING_VENDOR, engineer)
    workflow.change_status(ticket, S.CLOSED, engineer)
    assert ticket.closed_at is not None
    with pytest.raises(ValidationError):
        workflow.change_status(ticket, S.IN_PROGRESS, engineer)
    with pytest.raises(ValidationError, match="not a ticket status"):
        workflow.change_status(ticket, "bogus", engineer)


def test_requester_moves_are_limited(researcher, engineer):
    other = make_user("otto", RESEARCHER)
    ticket = make_ticket(requester=researcher)
    assert workflow.allowed_targets(ticket, other) == []
    assert workflow.allowed_targets(ticket, researcher) == [S.CLOSED]  # withdraw
    with pytest.raises(ValidationError):
        workflow.change_status(ticket, S.TRIAGED, researcher)
    workflow.change_status(ticket, S.RESOLVED, engineer)
    assert set(workflow.allowed_targets(ticket, researcher)) == {S.IN_PROGRESS, S.CLOSED}
    workflow.change_status(ticket, S.IN_PROGRESS, researcher, note="Still broken after the reboot.")
    assert ticket.resolved_at is None
    assert ticket.comments.get().body == "Still broken after the reboot."
    with pytest.raises(ValidationError, match="Only support staff"):
        workflow.add_comment(ticket, researcher, "secret", internal=True)


def test_first_response_and_history(engineer, researcher):
    ticket = make_ticket(requester=researcher, opened=timezone.now())
    workflow.add_comment(ticket, researcher, "More detail")
    assert ticket.first_response_at is None  # the requester's own comment is no response
    workflow.add_comment(ticket, engineer, "Internal note", internal=True)
    assert ticket.first_response_at is None
    workflow.add_comment(ticket, engineer, "Looking at it")
    assert ticket.first_response_at is not None
    workflow.assign(ticket, engineer, engineer)
    workflow.change_status(ticket, S.TRIAGED, engineer)
    history = list(ticket.history.order_by("history_id"))
    assert history[0].history_type == "+"
    assert {h.history_change_reason for h in history} >= {"Opened", "Assigned to sam", "New → Triaged"}
    assert history[-1].history_user == engineer


def test_only_support_staff_can_be_assigned(researcher):
    ticket = make_ticket()
    with pytest.raises(ValidationError, match="not support staff"):
        workflow.assign(ticket, researcher)


# --- Notifications ------------------------------------------------------------------------------


def test_notifications_on_create_assign_comment_and_status(engineer, researcher, settings):
    settings.SUPPORT_EMAIL = "support@example.org"
    ticket = make_ticket(requester=researcher, notify=True, title="NCCL hangs")
    assert [m.to for m in mail.outbox] == [["support@example.org"]]  # not to the requester who opened it
    assert "[Ticket #" in mail.outbox[0].subject and "NCCL hangs" in mail.outbox[0].subject
    # The link works from a mail reader: the portal's address (PORTAL_URL) and the ticket's page.
    assert f"Open the ticket: {settings.PORTAL_URL}/support/tickets/{ticket.pk}/" in mail.outbox[0].body
    workflow.assign(ticket, engineer, engineer)
    assert mail.outbox[-1].to == ["rita@example.org"] and "assigned to sam" in mail.outbox[-1].subject
    workflow.add_comment(ticket, researcher, "Any news?")
    assert mail.outbox[-1].to == ["sam@example.org"] and "Any news?" in mail.outbox[-1].body
    count = len(mail.outbox)
    workflow.add_comment(ticket, engineer, "Vendor says firmware", internal=True)
    assert len(mail.outbox) == count  # the only other staff member is the author: nobody else to tell
    workflow.change_status(ticket, S.WAITING_VENDOR, engineer)
    assert mail.outbox[-1].to == ["rita@example.org"] and "now waiting on vendor" in mail.outbox[-1].subject


def test_internal_comment_is_never_mailed_to_the_requester(engineer, researcher):
    manager = make_user("mona", "manager")
    ticket = make_ticket(requester=researcher, assignee=manager)
    workflow.add_comment(ticket, engineer, "Internal: suspect the PSU", internal=True)
    assert [m.to for m in mail.outbox] == [["mona@example.org"]]


# --- Markdown --------------------------------------------------------------------------------------


@pytest.mark.parametrize("hostile", [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[click](javascript:alert(1))",
    '<a href="http://ok.example" onclick="steal()">x</a>',
    "<iframe src=//evil></iframe>",
    '<div style="background:url(javascript:alert(1))">x</div>',
    "<svg><script>alert(1)</script></svg>",
])
def test_hostile_markdown_is_sanitised(hostile):
    html = rendering.render(f"**bold** {hostile}")
    assert "<strong>bold</strong>" in html
    for bad in ("<script", "onerror", "onclick", "javascript:", "<iframe", "style=", "<svg", "<img"):
        assert bad not in html.lower()


def test_markdown_keeps_useful_formatting():
    html = rendering.render("# Title\n\n- a\n- b\n\n```\nnvidia-smi <x>\n```\n\n[docs](https://docs.example)")
    assert "<h1>Title</h1>" in html and "<li>a</li>" in html and "nvidia-smi &lt;x&gt;" in html
    assert 'href="https://docs.example"' in html and 'rel="noopener noreferrer nofollow"' in html


# --- Telemetry faults ---------------------------------------------------------------------------


@pytest.fixture
def source(db):
    return TelemetrySource.objects.create(name="dcgm", kind=TelemetrySource.Kind.EXPORTER, url="http://x:9400/metrics")


def hour(now, back=0):
    return now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=back)


def xid_event(gpu, code, ts):
    from inventory.telemetry import xid

    return XidEvent.objects.create(gpu=gpu, ts=ts, hour=hour(ts), code=code, kind=xid.kind_of(code))


def test_xid_fault_opens_one_ticket_and_degrades_the_gpu():
    node = in_service_node(owner_team="vision")
    team = make_team("vision")
    gpu = make_gpu(node=node)
    for state in (L.BURN_IN, L.IN_SERVICE):
        transition(gpu, state)
    now = timezone.now()
    GPUHourly.objects.create(gpu=gpu, hour=hour(now), xid_errors=1, samples=60, util_mean=50)
    xid_event(gpu, 79, now - timedelta(minutes=5))
    found = faults.detect(now)
    assert [(f.kind, f.gpu) for f in found] == [(Ticket.Fault.XID, gpu)]
    [ticket] = faults.open_tickets(found)
    assert "XID 79 (hardware): GPU has fallen off the bus" in ticket.description
    gpu.refresh_from_db()
    assert gpu.state == L.DEGRADED
    assert ticket.source == Ticket.Source.TELEMETRY and ticket.fault_key == f"xid:gpu:{gpu.pk}"
    assert ticket.team == team and ticket.node == node and ticket.response_due is not None
    assert StateTransition.objects.filter(object_id=gpu.pk, to_state=L.DEGRADED, reason__contains=f"#{ticket.pk}")
    # Deduplicated: no second ticket while this one is open, even once the GPU is degraded.
    assert faults.open_tickets(faults.detect(now)) == []
    assert Ticket.objects.count() == 1
    # Resolved: offers to return the GPU to service. The gauge still reads 79 (it is sticky), but that event is
    # the resolved ticket's: nothing reopens and the GPU stays in service.
    workflow.change_status(ticket, S.RESOLVED)
    assert faults.returnable_asset(ticket) == gpu
    faults.return_to_service(ticket)
    gpu.refresh_from_db()
    assert gpu.state == L.IN_SERVICE and faults.returnable_asset(ticket) is None
    assert faults.open_tickets(faults.detect(now)) == []
    gpu.refresh_from_db()
    assert gpu.state == L.IN_SERVICE
    # A new event after that (the gauge went back to 0 on a driver reload, then 79 again) opens a new ticket.
    later = timezone.now() + timedelta(minutes=1)
    xid_event(gpu, 79, later)
    assert len(faults.open_tickets(faults.detect(later))) == 1


def test_application_xid_errors_open_nothing():
    gpu = make_gpu(node=in_service_node())
    for state in (L.BURN_IN, L.IN_SERVICE):
        transition(gpu, state)
    now = timezone.now()
    for code in (13, 31, 43, 45):  # a kernel's bad address, a page fault, a reset channel, its cleanup
        xid_event(gpu, code, now - timedelta(minutes=code))
    assert faults.detect(now) == []
    gpu.refresh_from_db()
    assert gpu.state == L.IN_SERVICE


def test_xid_errors_of_a_gpu_with_an_open_ecc_ticket_open_nothing_more():
    gpu = make_gpu(node=in_service_node())
    for state in (L.BURN_IN, L.IN_SERVICE):
        transition(gpu, state)
    now = timezone.now()
    xid_event(gpu, 94, now - timedelta(minutes=30))
    [found] = faults.detect(now)
    assert found.kind == Ticket.Fault.ECC and "XID 94 (hardware): Contained ECC error" in found.detail
    [ecc] = faults.open_tickets([found])
    assert faults.detect(now) == []  # the same errors, already ticketed as ECC errors
    workflow.change_status(ecc, S.RESOLVED)
    assert faults.detect(now) == []  # resolved: the same event does not count again
    later = timezone.now() + timedelta(minutes=1)
    xid_event(gpu, 63, later)
    assert [f.kind for f in faults.detect(later)] == [Ticket.Fault.ECC]  # a new ECC event does


def test_one_open_ticket_per_fault_is_enforced_by_the_database():
    node = make_node()
    make_ticket(node=node, fault="node_silent", fault_key=f"node_silent:node:{node.pk}")
    with pytest.raises(IntegrityError), transaction.atomic():
        make_ticket(node=node, fault="node_silent", fault_key=f"node_silent:node:{node.pk}")


def test_gpu_missing_node_silent_and_ecc_faults(source, settings):
    settings.SUPPORT_NODE_SILENT_HOURS = 3
    settings.SUPPORT_ECC_REPEAT = 2
    now = timezone.now()
    reporting, silent = in_service_node(), in_service_node()
    present, missing, ecc = (make_gpu(node=reporting) for _ in range(3))
    GPU.objects.filter(node=reporting).update(state=L.IN_SERVICE)
    NodeHourly.objects.create(node=reporting, hour=hour(now), samples=60, gpus_reporting=2)
    NodeHourly.objects.create(node=silent, hour=hour(now, 10), samples=60)
    for gpu in (present, ecc):
        GPUHourly.objects.create(gpu=gpu, hour=hour(now), samples=60, xid_errors=2 if gpu == ecc else 0)
    xid_event(ecc, 48, now - timedelta(minutes=20))
    GPUHourly.objects.create(gpu=missing, hour=hour(now, 10), samples=60)  # it reported before
    make_gpu(node=reporting, state=L.IN_SERVICE)  # no telemetry ever: not "missing"
    xid_event(ecc, 63, now - timedelta(minutes=10))
    found = {(f.kind, f.asset.pk) for f in faults.detect(now)}
    assert found == {(Ticket.Fault.GPU_MISSING, missing.pk), (Ticket.Fault.NODE_SILENT, silent.pk),
                     (Ticket.Fault.ECC, ecc.pk)}  # the ECC XIDs are not reported a second time as XID
    opened = faults.open_tickets(faults.detect(now))
    assert len(opened) == 3
    silent.refresh_from_db()
    assert silent.state == L.DEGRADED


def test_no_node_silent_tickets_when_the_whole_fleet_is_silent():
    now = timezone.now()
    node = in_service_node()
    NodeHourly.objects.create(node=node, hour=hour(now, 10), samples=60)
    assert faults.detect(now) == []


def test_fault_task_runs_and_is_on_the_beat_schedule(source, settings):
    from portal.celery import app
    from support.tasks import open_fault_tickets

    assert open_fault_tickets() == []  # nothing reported, nothing opened
    gpu = make_gpu(node=in_service_node())
    for state in (L.BURN_IN, L.IN_SERVICE):
        transition(gpu, state)
    GPUHourly.objects.create(gpu=gpu, hour=hour(timezone.now()), xid_errors=1, samples=60, util_mean=40)
    xid_event(gpu, 74, timezone.now() - timedelta(minutes=1))
    [opened] = open_fault_tickets()
    assert Ticket.objects.get(pk=opened).gpu == gpu
    assert open_fault_tickets() == []  # run again (beat every 10 min): no second ticket
    name = "support.tasks.open_fault_tickets"
    assert name in {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    app.loader.import_default_modules()
    assert name in app.tasks


# --- RMA -------------------------------------------------------------------------------------------


def test_rma_swap_of_a_gpu_keeps_history_on_both(engineer):
    node = in_service_node()
    old = make_gpu(node=node, slot=3, serial="OLD-1")
    transition(old, L.BURN_IN)
    transition(old, L.IN_SERVICE)
    transition(old, L.DEGRADED)
    ticket = make_ticket(gpu=old)
    new = rma.swap_gpu(ticket, old, "NEW-1", engineer, uuid="GPU-new", rma_number="RMA-42")
    old.refresh_from_db()
    ticket.refresh_from_db()
    assert (old.state, old.node, old.slot) == (L.RETIRED, None, None)
    assert (new.node, new.slot, new.state, new.gpu_model) == (node, 3, L.IN_SERVICE, old.gpu_model)
    assert ticket.rma_number == "RMA-42"
    assert old.history.first().history_change_reason.startswith("RMA RMA-42: replaced by serial NEW-1")
    assert old.history.filter(node=node, slot=3).exists()  # where it was is kept
    assert new.history.get().history_user == engineer
    assert new.transitions.get().reason.startswith("RMA RMA-42: installed in")
    assert "Swap recorded" in ticket.comments.get().body
    with pytest.raises(ValidationError, match="already in the inventory"):
        rma.swap_gpu(ticket, new, "NEW-1", engineer)


def test_rma_swap_of_a_node_moves_gpus_and_coverage(engineer):
    rack = make_rack()
    old = in_service_node(rack=rack, position=5, hostname="gpu-007", serial="CH-OLD", owner_team="nlp")
    gpus = [make_gpu(node=old) for _ in range(2)]
    contract = support_contract({"P2": (4, 24)}, nodes=[old])
    ticket = make_ticket(node=old)
    new = rma.swap_node(ticket, old, "CH-NEW", engineer, asset_tag="TAG-9", rma_number="RMA-7")
    old.refresh_from_db()
    assert old.state == L.RETIRED and old.hostname == f"gpu-007-rma-{old.pk}" and old.rack is None
    assert (new.hostname, new.serial, new.rack, new.position, new.owner_team_id) == (
        "gpu-007", "CH-NEW", rack, 5, "nlp")
    assert set(new.gpus.all()) == set(gpus)
    assert list(new.contracts.all()) == [contract]
    assert Node.objects.get(hostname="gpu-007") == new
    assert old.history.filter(hostname="gpu-007", serial="CH-OLD").exists()
