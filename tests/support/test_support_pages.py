"""Support pages and API: who sees which tickets and comments (pages and API alike), the forms, attachments
(size, type, permission-checked download), inline htmx changes, queues, metrics, the node page's button, RMA
swap and return to service through the pages, and constant query counts on the lists."""

from datetime import timedelta

import pytest
from django.core import mail
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from inventory.lifecycle import transition
from inventory.models import LifecycleState
from inventory.telemetry.models import GPUHourly
from portal.roles import RESEARCHER, SUPPORT
from support import workflow
from support.models import Ticket, TicketAttachment
from tests.factories import make_gpu, make_node, make_team, make_ticket
from tests.helpers.accounts import make_user, token_client

pytestmark = pytest.mark.django_db
S = Ticket.Status
L = LifecycleState
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path


@pytest.fixture
def engineer(db):
    return make_user("sam", SUPPORT)


@pytest.fixture
def rita(db):
    return make_user("rita", RESEARCHER)


@pytest.fixture
def world(engineer, rita):
    """Rita (team nlp) with her own ticket, her teammate's ticket, and another team's ticket with an internal
    comment."""
    teammate, stranger = make_user("tom", RESEARCHER), make_user("olga", RESEARCHER)
    nlp, vision = make_team("nlp", [rita, teammate]), make_team("vision", [stranger])
    own = make_ticket(requester=rita, title="My NCCL hang", team=nlp)
    team = make_ticket(requester=teammate, title="Teammate's slow storage", team=nlp)
    other = make_ticket(requester=stranger, title="Vision's secret ticket", team=vision)
    workflow.add_comment(own, engineer, "Public answer", notify=False)
    internal = workflow.add_comment(own, engineer, "INTERNAL: vendor escalation", internal=True, notify=False)
    attachment = TicketAttachment.objects.create(
        ticket=own, comment=internal, file=SimpleUploadedFile("vendor.txt", b"internal"), name="vendor.txt",
        content_type="text/plain", size=8)
    return {"own": own, "team": team, "other": other, "internal": internal, "attachment": attachment}


def login(client, user):
    client.force_login(user)
    return client


# --- Permissions: pages ----------------------------------------------------------------------------


def test_researcher_sees_own_and_team_tickets_only(client, rita, world):
    login(client, rita)
    page = client.get(reverse("support:ticket_list")).content.decode()
    assert "My NCCL hang" in page and "Teammate&#x27;s slow storage" in page
    assert "Vision&#x27;s secret ticket" not in page
    assert client.get(world["other"].get_absolute_url()).status_code == 404
    detail = client.get(world["own"].get_absolute_url())
    assert detail.status_code == 200
    text = detail.content.decode()
    assert "Public answer" in text and "INTERNAL" not in text and "vendor.txt" not in text
    assert 'name="internal"' not in text
    download = reverse("support:attachment_download", args=[world["attachment"].pk])
    assert client.get(download).status_code == 403
    assert client.get(reverse("support:ticket_edit", args=[world["own"].pk])).status_code == 403
    assert client.get(reverse("support:metrics")).status_code == 403


def test_researcher_cannot_comment_on_other_teams_tickets(client, rita, world):
    login(client, rita)
    url = reverse("support:ticket_comment", args=[world["other"].pk])
    assert client.post(url, {"body": "hello"}).status_code == 404
    response = client.post(reverse("support:ticket_comment", args=[world["own"].pk]),
                           {"body": "sneaky", "internal": "on"})
    assert response.status_code == 302
    assert not world["own"].comments.filter(body="sneaky", internal=True).exists()  # the field is not theirs


def test_support_staff_see_internal_comments_and_attachments(client, engineer, world):
    login(client, engineer)
    text = client.get(world["own"].get_absolute_url()).content.decode()
    assert "INTERNAL: vendor escalation" in text and "vendor.txt" in text
    response = client.get(reverse("support:attachment_download", args=[world["attachment"].pk]))
    assert response.status_code == 200 and b"".join(response.streaming_content) == b"internal"
    assert response["Content-Disposition"].startswith("attachment")


def test_viewer_reads_every_ticket_but_not_internal_comments(viewer_client, world):
    page = viewer_client.get(reverse("support:ticket_list")).content.decode()
    assert "Vision&#x27;s secret ticket" in page
    assert "INTERNAL" not in viewer_client.get(world["own"].get_absolute_url()).content.decode()
    assert viewer_client.get(reverse("support:ticket_add")).status_code == 403


def test_anonymous_is_sent_to_login(client, world):
    response = client.get(reverse("support:ticket_list"))
    assert response.status_code == 302 and "login" in response["Location"]


# --- Permissions: API ------------------------------------------------------------------------------


def test_api_researcher_sees_own_and_team_tickets_and_no_internal_comments(rita, world):
    api = token_client(rita)
    titles = {row["title"] for row in api.get("/api/support/tickets/").json()["results"]}
    assert titles == {"My NCCL hang", "Teammate's slow storage"}
    assert api.get(f"/api/support/tickets/{world['other'].pk}/").status_code == 404
    comments = api.get("/api/support/comments/", {"ticket": world["own"].pk}).json()["results"]
    assert [c["body"] for c in comments] == ["Public answer"]
    # Another team's ticket is not a choice of the filter: refused as one that does not exist, nothing listed.
    refused = api.get("/api/support/comments/", {"ticket": world["other"].pk})
    assert refused.status_code == 400 and "ticket" in refused.json() and "results" not in refused.json()
    missing = api.get("/api/support/comments/", {"ticket": 999_999})
    assert missing.status_code == 400 and missing.json().keys() == refused.json().keys()
    response = api.post("/api/support/comments/", {"ticket": world["other"].pk, "body": "x"})
    assert response.status_code == 400  # not a ticket they may see
    response = api.post("/api/support/comments/", {"ticket": world["own"].pk, "body": "y", "internal": True})
    assert response.status_code == 201 and response.json()["internal"] is False
    assert api.patch(f"/api/support/tickets/{world['own'].pk}/", {"priority": "P1"}).status_code == 403
    assert api.get("/api/support/metrics/").status_code == 403


def test_api_support_staff_see_everything(engineer, world):
    api = token_client(engineer)
    assert api.get("/api/support/tickets/").json()["count"] == 3
    bodies = [c["body"] for c in api.get("/api/support/comments/", {"ticket": world["own"].pk}).json()["results"]]
    assert "INTERNAL: vendor escalation" in bodies


def test_api_create_filter_update_and_transition(rita, engineer, world):
    node = make_node()
    api = token_client(rita)
    response = api.post("/api/support/tickets/", {
        "title": "GPU 3 throws XID 79", "description": "Jobs die.", "category": "hardware", "node": node.pk,
        "team": "nlp", "priority": "P1", "assignee": "sam"})
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["requester"] == "rita" and body["priority"] == "P3" and body["assignee"] is None  # not theirs
    assert body["status"] == "new" and body["sla_state"] == "ok" and body["response_due"]
    assert body["description_html"] == "<p>Jobs die.</p>"
    assert api.post("/api/support/tickets/", {"title": "x", "team": "vision"}).status_code == 400
    staff = token_client(engineer)
    pk = body["id"]
    response = staff.patch(f"/api/support/tickets/{pk}/", {"priority": "P1", "assignee": "sam"})
    assert response.status_code == 200 and response.json()["priority"] == "P1"
    assert response.json()["assignee"] == "sam"
    assert staff.patch(f"/api/support/tickets/{pk}/", {"assignee": "rita"}).status_code == 400
    assert staff.get("/api/support/tickets/", {"priority": "P1", "node": node.pk}).json()["count"] == 1
    assert staff.get("/api/support/tickets/", {"queue": "unassigned"}).json()["count"] == 3
    assert staff.post(f"/api/support/tickets/{pk}/transition/", {"status": "in_progress"}).json()["status"] \
        == "in_progress"
    response = staff.post(f"/api/support/tickets/{pk}/transition/", {"status": "new"})
    assert response.status_code == 400 and "Cannot go from" in response.json()["status"][0]
    response = api.post(f"/api/support/tickets/{pk}/transition/", {"status": "closed"})
    assert response.status_code == 400  # not a move the requester may make now
    metrics = staff.get("/api/support/metrics/").json()
    assert metrics["open"] == 4 and "sla_compliance" in metrics


# --- Forms -----------------------------------------------------------------------------------------


def test_report_a_problem_from_the_node_page_prefills_the_asset(client, rita):
    node = make_node()
    make_team("nlp", [rita])
    login(client, rita)
    page = client.get(node.get_absolute_url()).content.decode()
    url = f"{reverse('support:ticket_add')}?node={node.pk}"
    assert url in page and "Report a problem" in page
    form = client.get(url).context["form"]
    assert form.initial["node"] == node.pk and form.initial["team"] is not None
    assert "assignee" not in form.fields and "priority" not in form.fields  # the simple form
    response = client.post(url, {"title": "Node reboots", "category": "hardware", "description": "**help**",
                                 "node": node.pk, "attachment": SimpleUploadedFile("dmesg.log", b"oops")})
    ticket = Ticket.objects.get()
    assert response.status_code == 302 and response["Location"] == ticket.get_absolute_url()
    assert (ticket.requester, ticket.node, ticket.site) == (rita, node, node.site)
    assert ticket.attachments.get().content_type == "text/plain"


def test_report_a_problem_from_a_gpu_prefills_gpu_and_node(client, rita):
    gpu = make_gpu(node=make_node())
    login(client, rita)
    node_page = client.get(gpu.node.get_absolute_url()).content.decode()
    assert "Report a problem with this GPU" in node_page and f'<option value="{gpu.pk}">' in node_page
    form = client.get(f"{reverse('support:ticket_add')}?gpu={gpu.pk}").context["form"]
    assert (form.initial["gpu"], form.initial["node"]) == (gpu.pk, gpu.node_id)


def test_staff_get_the_full_form_and_edits_go_through_the_workflow(client, engineer, rita):
    make_team("nlp", [rita])
    ticket = make_ticket(requester=rita, priority="P3")
    login(client, engineer)
    form = client.get(reverse("support:ticket_edit", args=[ticket.pk])).context["form"]
    assert {"assignee", "priority", "requester", "rma_number"} <= set(form.fields)
    response = client.post(reverse("support:ticket_edit", args=[ticket.pk]), {
        "title": ticket.title, "category": "hardware", "priority": "P1", "description": "d", "requester": rita.pk,
        "assignee": engineer.pk, "rma_number": "RMA-1"})
    assert response.status_code == 302
    ticket.refresh_from_db()
    assert (ticket.priority, ticket.assignee, ticket.rma_number) == ("P1", engineer, "RMA-1")
    assert ticket.resolution_due == ticket.opened + timedelta(hours=24)  # the P1 default policy
    assert any("assigned to sam" in m.subject for m in mail.outbox)


@pytest.mark.parametrize("upload, error", [
    (SimpleUploadedFile("big.log", b"x" * 2048), "the limit is"),
    (SimpleUploadedFile("tool.exe", b"MZ"), "are not accepted"),
    (SimpleUploadedFile("shot.png", b"<script>not a png</script>"), "its content is not a .png"),
    (SimpleUploadedFile("notes.txt", b"bin\x00ary"), "is not text"),
])
def test_attachment_limits(client, engineer, settings, upload, error):
    settings.SUPPORT_ATTACHMENT_MAX_BYTES = 1024
    ticket = make_ticket()
    login(client, engineer)
    response = client.post(reverse("support:ticket_comment", args=[ticket.pk]), {"body": "see file",
                                                                                 "attachment": upload})
    assert response.status_code == 400
    assert error in response.content.decode()
    assert not TicketAttachment.objects.exists() and not ticket.comments.exists()


def test_attachment_accepted_and_served_with_its_checked_type(client, engineer):
    ticket = make_ticket()
    login(client, engineer)
    response = client.post(reverse("support:ticket_comment", args=[ticket.pk]), {
        "body": "screenshot", "attachment": SimpleUploadedFile("shot.png", PNG, content_type="text/html")})
    assert response.status_code == 302
    attachment = TicketAttachment.objects.get()
    assert attachment.content_type == "image/png" and attachment.comment.body == "screenshot"
    download = client.get(reverse("support:attachment_download", args=[attachment.pk]))
    assert download["Content-Type"] == "image/png" and download["X-Content-Type-Options"] == "nosniff"


def test_hostile_markdown_on_the_ticket_page(client, engineer):
    ticket = make_ticket(description='<script>alert("x")</script><img src=x onerror=alert(1)> **fine**')
    workflow.add_comment(ticket, engineer, '[click](javascript:alert(2)) <iframe src="//evil"></iframe> _also fine_')
    login(client, engineer)
    text = client.get(ticket.get_absolute_url()).content.decode()
    assert "<strong>fine</strong>" in text and "<em>also fine</em>" in text
    assert '<script>alert("x")' not in text and "onerror" not in text
    assert "javascript:alert" not in text and "<iframe" not in text


# --- Workflow on the pages -------------------------------------------------------------------------


def test_status_change_and_comment_pages(client, engineer, rita):
    ticket = make_ticket(requester=rita, assignee=engineer)
    login(client, engineer)
    response = client.post(reverse("support:ticket_status", args=[ticket.pk]),
                           {"status": "waiting_requester", "note": "Which job id?"})
    assert response.status_code == 302
    ticket.refresh_from_db()
    assert ticket.status == S.WAITING_REQUESTER and ticket.paused_since is not None
    assert mail.outbox[-1].to == ["rita@example.org"]
    client.post(reverse("support:ticket_status", args=[ticket.pk]), {"status": "new"})
    ticket.refresh_from_db()
    assert ticket.status == S.WAITING_REQUESTER  # refused, with a message
    login(client, rita)
    client.post(reverse("support:ticket_comment", args=[ticket.pk]), {"body": "Job 4242"})
    ticket.refresh_from_db()
    assert ticket.status == S.IN_PROGRESS and ticket.paused_since is None
    assert mail.outbox[-1].to == ["sam@example.org"] and "Job 4242" in mail.outbox[-1].body


def test_inline_changes_through_htmx(client, engineer, rita):
    ticket = make_ticket(requester=rita)
    login(client, engineer)
    url = reverse("support:ticket_inline", args=[ticket.pk])
    headers = {"HTTP_HX_REQUEST": "true"}
    response = client.post(url, {"priority": "P1"}, **headers)
    assert response.status_code == 200 and 'name="priority"' in response.content.decode()
    response = client.post(url, {"assignee": engineer.pk}, **headers)
    assert response.status_code == 200 and "✓" in response.content.decode()
    response = client.post(url, {"status": "triaged"}, **headers)
    assert response.status_code == 200
    response = client.post(url, {"status": "new"}, **headers)
    assert response.status_code == 200 and "Cannot go from" in response.content.decode()  # htmx swaps 2xx only
    assert f'id="ticket-{ticket.pk}"' in response.content.decode()  # the row, for hx-select
    ticket.refresh_from_db()
    assert (ticket.priority, ticket.assignee, ticket.status) == ("P1", engineer, S.TRIAGED)
    login(client, rita)
    assert client.post(url, {"priority": "P4"}, **headers).status_code == 403


def test_queues(client, engineer, rita):
    team = make_team("support-l1", [engineer])
    now = timezone.now()
    colleague = make_user("cleo", SUPPORT)
    team.members.add(colleague)
    mine = make_ticket(title="assigned to me", assignee=engineer)
    ours = make_ticket(title="our team's", team=team)
    colleagues = make_ticket(title="a colleague's", assignee=colleague)
    breaching = make_ticket(title="breaching", priority="P1", opened=now - timedelta(hours=3, minutes=30))
    login(client, engineer)

    def titles(queue):
        table = client.get(reverse("support:ticket_list"), {"queue": queue}).context["table"]
        return {row.record.title for row in table.page.object_list}

    assert titles("mine") == {mine.title}
    assert titles("team") == {ours.title, colleagues.title, mine.title}
    assert titles("unassigned") == {ours.title, breaching.title}
    assert titles("breaching") == {breaching.title}
    page = client.get(reverse("support:ticket_list"), {"queue": "breaching"}).content.decode()
    assert 'aria-current="page">Breaching soon' in page and "breaching soon</span>" in page


def test_rma_swap_and_return_to_service_from_the_page(client, engineer):
    node = make_node()
    for state in (L.BURN_IN, L.IN_SERVICE):
        transition(node, state)
    gpu = make_gpu(node=node, serial="BAD-1")
    for state in (L.BURN_IN, L.IN_SERVICE, L.DEGRADED):
        transition(gpu, state)
    ticket = make_ticket(gpu=gpu)
    login(client, engineer)
    assert "Record the swap" in client.get(ticket.get_absolute_url()).content.decode()
    response = client.post(reverse("support:ticket_swap", args=[ticket.pk]), {
        "part": "gpu", "gpu": gpu.pk, "serial": "GOOD-1", "rma_number": "RMA-9"})
    assert response.status_code == 302
    gpu.refresh_from_db()
    assert gpu.state == L.RETIRED and node.gpus.get().serial == "GOOD-1"
    # A node ticket resolved: the page offers to return the degraded node to service.
    transition(node, L.DEGRADED)
    node_ticket = make_ticket(node=node)
    response = client.post(reverse("support:ticket_status", args=[node_ticket.pk]), {"status": "resolved"},
                           follow=True)
    text = response.content.decode()
    assert f"{node} is still degraded: return it to service" in text and f"Return {node} to service" in text
    client.post(reverse("support:ticket_return", args=[node_ticket.pk]))
    node.refresh_from_db()
    assert node.state == L.IN_SERVICE


def test_metrics_page_has_charts_without_inline_script(client, engineer):
    make_ticket(category="storage", node=make_node())
    login(client, engineer)
    text = client.get(reverse("support:metrics")).content.decode()
    assert 'data-chart="bar"' in text and 'id="open-by-category"' in text
    assert "<script>" not in text  # data in json_script (type=application/json), code in static files
    response = client.get(reverse("support:metrics"), {"days": "30"})
    assert response.context["data"]["days"] == 30 and 'aria-current="page">30 days' in response.content.decode()


def test_ticket_page_shows_utilization_and_other_tickets_on_the_asset(client, engineer):
    node = make_node()
    ticket = make_ticket(node=node)
    other = make_ticket(node=node, title="Fans loud")
    login(client, engineer)
    response = client.get(ticket.get_absolute_url())
    assert response.context["utilization"]["node"] == node
    assert response.context["other_tickets"] == [other]
    assert "No utilization reported for this node" in response.text  # nothing reported yet: said, not drawn
    assert "Fans loud" in response.text
    gpu = make_gpu(node=node)
    hour = timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=3)
    GPUHourly.objects.create(gpu=gpu, hour=hour, util_mean=73.5, samples=60)
    response = client.get(ticket.get_absolute_url())
    assert response.context["utilization"]["has_data"]
    assert 'data-source="ticket-utilization-data"' in response.text and "73.5" in response.text


# --- Query counts ----------------------------------------------------------------------------------


def make_many(n, engineer, rita):
    team = make_team(members=[rita])
    for i in range(n):
        gpu = make_gpu(node=make_node())
        make_ticket(requester=rita, team=team, assignee=engineer, gpu=gpu, title=f"t{i}")


@pytest.mark.parametrize("role", ["engineer", "rita"])
def test_list_page_query_count_is_constant(client, engineer, rita, role, django_assert_max_num_queries):
    make_many(3, engineer, rita)
    login(client, {"engineer": engineer, "rita": rita}[role])
    with django_assert_max_num_queries(20) as few:
        client.get(reverse("support:ticket_list"))
    make_many(12, engineer, rita)
    with django_assert_max_num_queries(len(few.captured_queries)):
        response = client.get(reverse("support:ticket_list"))
    assert len(response.context["table"].page.object_list) == 15


def test_api_list_query_count_is_constant(engineer, rita, django_assert_max_num_queries):
    make_many(3, engineer, rita)
    api = token_client(rita)
    with django_assert_max_num_queries(20) as few:
        api.get("/api/support/tickets/")
    make_many(12, engineer, rita)
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert api.get("/api/support/tickets/").json()["count"] == 15


def test_dashboard_card_lists_tickets_breaching_their_sla(client, engineer, rita, world):
    now = timezone.now()
    late = make_ticket(title="Late one", priority="P1", opened=now - timedelta(days=2), team=world["other"].team)
    make_ticket(title="Fresh one", priority="P4")
    login(client, engineer)
    card = client.get(reverse("home")).context["sla_tickets"]
    assert card["count"] == 1 and card["tickets"] == [late]
    login(client, rita)  # another team's ticket: not on her dashboard
    assert client.get(reverse("home")).context["sla_tickets"]["count"] == 0


def test_api_rma_swap_and_return_to_service(engineer, rita):
    node = make_node()
    for state in (L.BURN_IN, L.IN_SERVICE, L.DEGRADED):
        transition(node, state)
    old = make_gpu(node=node, slot=2, serial="BAD-2")
    ticket = make_ticket(requester=rita, node=node, gpu=old)
    staff, researcher = token_client(engineer), token_client(rita)
    url = f"/api/support/tickets/{ticket.pk}/"
    assert researcher.post(f"{url}swap/", {"part": "gpu", "gpu": old.pk, "serial": "X"}).status_code == 403
    response = staff.post(f"{url}swap/", {"part": "gpu", "gpu": 999999, "serial": "NEW-2"})
    assert response.status_code == 400 and "gpu" in response.json()
    response = staff.post(f"{url}swap/", {"part": "gpu", "gpu": old.pk, "serial": "NEW-2", "rma_number": "R-1"})
    assert response.status_code == 201 and response.json()["serial"] == "NEW-2"
    assert staff.get(url).json()["rma_number"] == "R-1"
    assert staff.post(f"{url}return-to-service/").status_code == 400  # still open
    workflow.change_status(ticket, S.RESOLVED, engineer)
    ticket.gpu = None
    ticket.save()
    assert researcher.post(f"{url}return-to-service/").status_code == 403
    response = staff.post(f"{url}return-to-service/")
    assert response.status_code == 200
    node.refresh_from_db()
    assert node.state == L.IN_SERVICE


def test_csv_export_of_a_queue(client, engineer):
    make_ticket(title="Export me", priority="P2")
    login(client, engineer)
    response = client.get(reverse("support:ticket_list"), {"_export": "csv"})
    text = b"".join(response.streaming_content).decode() if response.streaming else response.content.decode()
    assert "Export me" in text and "<select" not in text and ",P2," in text


def test_delete_needs_the_delete_permission(client, rita, manager):
    ticket = make_ticket(requester=rita)
    login(client, rita)
    assert client.post(ticket.get_delete_url()).status_code == 403
    response = login(client, manager).post(ticket.get_delete_url())
    assert response.status_code == 302 and not Ticket.objects.exists()


def test_ticket_page_query_count_does_not_grow_with_comments(client, engineer, django_assert_max_num_queries):
    ticket = make_ticket(node=make_node())

    def comment(n):
        for i in range(n):
            c = workflow.add_comment(ticket, engineer, f"note {i}", internal=bool(i % 2), notify=False)
            TicketAttachment.objects.create(ticket=ticket, comment=c, file=SimpleUploadedFile("a.txt", b"a"),
                                            name="a.txt", content_type="text/plain", size=1)

    comment(2)
    login(client, engineer)
    with django_assert_max_num_queries(60) as few:
        client.get(ticket.get_absolute_url())
    comment(10)
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert client.get(ticket.get_absolute_url()).status_code == 200


def test_viewers_are_refused_before_any_lookup(viewer_client, viewer_api, engineer):
    ticket = make_ticket()
    for pk in (ticket.pk, 999999):  # the same 403 whether the ticket exists or not
        for name in ("ticket_status", "ticket_inline", "ticket_comment", "ticket_swap", "ticket_return"):
            assert viewer_client.post(reverse(f"support:{name}", args=[pk])).status_code == 403, name
        assert viewer_api.post(f"/api/support/tickets/{pk}/transition/", {}).status_code == 403
    response = token_client(engineer).post(f"/api/support/tickets/{ticket.pk}/transition.json",
                                           {"status": "triaged"})
    assert response.status_code == 200 and response.json()["status"] == "triaged"
