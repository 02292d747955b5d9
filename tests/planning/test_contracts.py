"""Contracts as a manager meets them: validation, the list and its filters, the detail page with its
coverage, documents (size and type checks, download permission), coverage and "uncovered" queries,
renewal alerts (timing, once per deadline, one digest per owner) and permissions."""

import csv
import io
from datetime import date, timedelta

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from inventory.models import LifecycleState
from planning.contracts import coverage, tasks
from planning.models import Contract, ContractDocument, RenewalAlert, SLATerm
from portal import events
from tests.factories import make_gpu, make_node, make_rack, make_site
from tests.helpers.accounts import make_user

pytestmark = pytest.mark.django_db
TODAY = timezone.localdate()
D = timedelta(days=1)
PDF = b"%PDF-1.7\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"


def make_contract(kind=Contract.Kind.SUPPORT, start=TODAY - 100 * D, end=TODAY + 300 * D, covers=(), **kw):
    n = Contract.objects.count() + 1
    contract = Contract(kind=kind, vendor=kw.pop("vendor", "Acme"), reference=kw.pop("reference", f"C-{n}"),
                        start=start, end=end, **kw)
    contract.full_clean()
    contract.save()
    for obj in covers:
        getattr(contract, {"site": "sites", "rack": "racks", "node": "nodes", "gpu": "gpus"}[
            obj._meta.model_name]).add(obj)
    return contract


def form_data(**overrides):
    data = {"kind": "support", "vendor": "Acme", "reference": "S-1", "start": "2026-01-01", "end": "2026-12-31",
            "notice_days": "30", "one_off_cost": "0", "monthly_cost": "1000", "gpu_hour_cost": "0",
            "currency": "usd", "depreciation_months": "48", "rented_gpus": "0",
            "sla-TOTAL_FORMS": "4", "sla-INITIAL_FORMS": "0", "sla-MIN_NUM_FORMS": "0", "sla-MAX_NUM_FORMS": "4"}
    data.update(overrides)
    return data


# --- Validation -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("overrides", "field", "message"), [
    ({"end": "2025-12-31"}, "end", "The end date is before the start date."),
    ({"monthly_cost": "-5"}, "monthly_cost", "greater than or equal to 0"),
    ({"currency": "U$"}, "currency", "three-letter ISO 4217"),
    ({"kind": "rental", "end": ""}, "end", "A rental / lease contract needs an end date."),
])
def test_the_form_refuses_invalid_contracts_with_a_message(manager_client, overrides, field, message):
    response = manager_client.post(reverse("planning:contract_add"), form_data(**overrides))
    assert response.status_code == 400
    assert message in " ".join(response.context["form"].errors[field])
    assert not Contract.objects.exists()


def test_add_a_support_contract_with_coverage_and_sla_terms(manager_client):
    site, node = make_site(), make_node()
    response = manager_client.post(reverse("planning:contract_add"), form_data(**{
        "sites": [site.pk], "nodes": [node.pk],
        "sla-0-priority": "P1", "sla-0-response_hours": "4", "sla-0-resolution_hours": "24",
        "sla-1-priority": "P4", "sla-1-response_hours": "72", "sla-1-resolution_hours": "240",
    }))
    contract = Contract.objects.get()
    assert response.status_code == 302 and response.url == contract.get_absolute_url()
    assert contract.currency == "USD"
    assert list(contract.sites.all()) == [site] and list(contract.nodes.all()) == [node]
    assert [(t.priority, t.response_hours) for t in contract.sla_terms.all()] == [("P1", 4), ("P4", 72)]


def test_an_sla_term_resolving_before_responding_is_refused(manager_client):
    response = manager_client.post(reverse("planning:contract_add"), form_data(**{
        "sla-0-priority": "P1", "sla-0-response_hours": "8", "sla-0-resolution_hours": "4"}))
    assert response.status_code == 400
    assert "Resolution cannot come before the first response." in response.content.decode()
    assert not Contract.objects.exists()


def test_the_edit_form_groups_nodes_by_site(manager_client):
    node = make_node(site=make_site(name="zurich"))
    contract = make_contract()
    response = manager_client.get(reverse("planning:contract_edit", args=[contract.pk]))
    assert response.status_code == 200
    assert '<optgroup label="zurich">' in response.content.decode()
    assert node.hostname in response.content.decode()


def purchase_form(**overrides):
    return form_data(**{"kind": "purchase", "end": "", "monthly_cost": "0", "one_off_cost": "300000", **overrides})


def test_the_form_refuses_a_second_purchase_of_a_node_and_allows_support_over_it(manager_client):
    node, gpu = make_node(hostname="gva-001"), make_gpu()
    bought = make_contract(Contract.Kind.PURCHASE, vendor="NVIDIA", reference="PO-1", end=None, covers=[node, gpu])
    response = manager_client.post(reverse("planning:contract_add"), purchase_form(
        reference="PO-2", nodes=[node.pk], gpus=[gpu.pk]))
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert "Already bought under the purchase contract NVIDIA PO-1: gva-001." in errors["nodes"][0]
    assert "NVIDIA PO-1" in errors["gpus"][0] and gpu.uuid in errors["gpus"][0]
    assert Contract.objects.count() == 1
    # a support contract (or rental, expansion) may cover what was bought
    response = manager_client.post(reverse("planning:contract_add"), form_data(reference="S-9", nodes=[node.pk]))
    assert response.status_code == 302
    # editing the purchase itself keeps passing; another purchase without the node too
    response = manager_client.post(reverse("planning:contract_edit", args=[bought.pk]), purchase_form(
        vendor="NVIDIA", reference="PO-1", nodes=[node.pk], gpus=[gpu.pk], title="renamed"))
    assert response.status_code == 302
    assert Contract.objects.get(pk=bought.pk).title == "renamed"
    other = make_node()
    response = manager_client.post(reverse("planning:contract_add"), purchase_form(reference="PO-3", nodes=[other.pk]))
    assert response.status_code == 302


def test_purchase_conflicts_whatever_the_dates_and_only_for_purchases():
    node = make_node(hostname="gva-002")
    make_contract(Contract.Kind.PURCHASE, reference="OLD", start=TODAY - 900 * D, end=TODAY - 400 * D, covers=[node])
    new = Contract(kind=Contract.Kind.PURCHASE, vendor="Acme", reference="NEW", start=TODAY)
    assert list(coverage.purchase_conflicts(new, [node.pk], [])) == ["nodes"]
    assert coverage.purchase_conflicts(new, [node.pk], [], kind=Contract.Kind.EXPANSION) == {}
    assert coverage.purchase_conflicts(new, [], []) == {}


def test_the_api_refuses_a_second_purchase_of_a_node(admin_user):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(admin_user)
    node = make_node(hostname="gva-003")
    url = "/api/planning/contracts/"
    body = {"kind": "purchase", "vendor": "NVIDIA", "reference": "PO-1", "start": "2025-01-01", "nodes": [node.pk]}
    first = client.post(url, body, format="json")
    assert first.status_code == 201, first.data
    second = client.post(url, {**body, "reference": "PO-2"}, format="json")
    assert second.status_code == 400
    assert "NVIDIA PO-1: gva-003" in str(second.data["nodes"][0])
    support = client.post(url, {**body, "kind": "support", "reference": "S-1", "end": "2027-12-31"}, format="json")
    assert support.status_code == 201, support.data
    edited = client.patch(f"{url}{first.data['id']}/", {"title": "renamed", "nodes": [node.pk]}, format="json")
    assert edited.status_code == 200, edited.data
    assert client.patch(f"{url}{first.data['id']}/", {"notes": "x"}, format="json").status_code == 200
    # turning the support contract into a second purchase is refused too (its nodes are the instance's)
    turned = client.patch(f"{url}{support.data['id']}/", {"kind": "purchase", "end": None}, format="json")
    assert turned.status_code == 400 and "nodes" in turned.data


# --- List and detail --------------------------------------------------------------------------------


def test_list_filters_by_kind_vendor_active_and_expiring_within(viewer_client):
    soon = make_contract(reference="SOON", end=TODAY + 20 * D)
    later = make_contract(reference="LATER", vendor="Other", end=TODAY + 200 * D)
    ended = make_contract(reference="ENDED", start=TODAY - 400 * D, end=TODAY - 10 * D)
    bought = make_contract(Contract.Kind.PURCHASE, reference="BUY", end=None, one_off_cost=100)

    def shown(query):
        response = viewer_client.get(reverse("planning:contract_list") + query)
        assert response.status_code == 200
        return {row.record.reference for row in response.context["table"].rows}

    assert shown("") == {"SOON", "LATER", "ENDED", "BUY"}
    assert shown("?expiring_within=30") == {soon.reference}
    assert shown("?expiring_within=365") == {soon.reference, later.reference}
    assert shown("?kind=purchase") == {bought.reference}
    assert shown("?vendor=other") == {later.reference}
    assert shown("?active=false") == {ended.reference}
    assert shown("?q=soo") == {"SOON"}


def test_list_page_carries_the_timeline_of_the_filtered_contracts(viewer_client):
    make_contract(reference="SOON", end=TODAY + 20 * D)
    make_contract(reference="LATER", end=TODAY + 200 * D)
    response = viewer_client.get(reverse("planning:contract_list") + "?expiring_within=30")
    timeline = response.context["timeline"]
    assert [bar["label"] for bar in timeline["bars"]] == ["Acme SOON"]
    assert timeline["today"] == TODAY.isoformat()
    assert 'id="contract-timeline"' in response.content.decode()
    htmx = viewer_client.get(reverse("planning:contract_list"), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="object-table")
    assert 'data-chart="timeline"' in htmx.content.decode() and "<html" not in htmx.content.decode()


def test_detail_shows_coverage_sla_and_alerts(viewer_client):
    site, node = make_site(name="geneva"), make_node(hostname="gva-001")
    contract = make_contract(covers=[site, node])
    SLATerm.objects.create(contract=contract, priority="P1", response_hours=4, resolution_hours=24)
    RenewalAlert.objects.create(contract=contract, notice_deadline=TODAY + 5 * D)
    page = viewer_client.get(contract.get_absolute_url()).content.decode()
    assert "geneva" in page and "gva-001" in page and node.get_absolute_url() in page
    assert "P1 critical" in page
    assert "Renewal alerts" in page
    assert 'enctype="multipart/form-data"' not in page  # a viewer cannot upload


# --- Documents ---------------------------------------------------------------------------------------


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    return tmp_path


def upload(client, contract, name, content, content_type="application/octet-stream"):
    return client.post(reverse("planning:contract_document_upload", args=[contract.pk]),
                       {"file": SimpleUploadedFile(name, content, content_type=content_type)})


def test_a_pdf_is_accepted_stored_and_downloaded_with_the_view_permission(manager_client, media, client):
    contract = make_contract()
    response = upload(manager_client, contract, "contract.pdf", PDF)
    assert response.status_code == 302
    document = ContractDocument.objects.get()
    assert (document.name, document.content_type, document.size) == ("contract.pdf", "application/pdf", len(PDF))
    assert (media / document.file.name).read_bytes() == PDF
    download = reverse("planning:contractdocument_download", args=[document.pk])
    assert b"".join(manager_client.get(download).streaming_content) == PDF
    client.logout()
    assert client.get(download).status_code == 302  # to the login page
    client.force_login(make_user("nobody", None))
    assert client.get(download).status_code == 403


@pytest.mark.parametrize(("name", "content", "message"), [
    ("setup.exe", b"MZ\x90\x00", "are not accepted"),
    ("fake.pdf", b"MZ\x90\x00 this is not a pdf", "its content is not a .pdf file"),
    ("photo.png", b"\xff\xd8\xff\xe0 jpeg bytes", "its content is not a .png file"),
    ("notes.txt", b"text\x00with a NUL", "is not text"),
])
def test_wrong_types_are_refused_by_extension_and_content(manager_client, media, name, content, message):
    response = upload(manager_client, make_contract(), name, content)
    assert response.status_code == 400
    assert message in " ".join(response.context["upload_form"].errors["file"])
    assert not ContractDocument.objects.exists()


def test_a_file_over_the_size_limit_is_refused(manager_client, media, settings):
    settings.CONTRACT_DOCUMENT_MAX_BYTES = 1024
    response = upload(manager_client, make_contract(), "big.pdf", PDF + b"0" * 2000)
    assert response.status_code == 400
    assert "the limit is 1.0" in " ".join(response.context["upload_form"].errors["file"])


def test_a_viewer_cannot_upload_or_edit(viewer_client, media):
    contract = make_contract()
    assert upload(viewer_client, contract, "contract.pdf", PDF).status_code == 403
    assert viewer_client.get(reverse("planning:contract_edit", args=[contract.pk])).status_code == 403
    assert viewer_client.post(reverse("planning:contract_add"), form_data()).status_code == 403
    assert viewer_client.post(reverse("planning:contract_delete", args=[contract.pk])).status_code == 403
    assert viewer_client.get(contract.get_absolute_url()).status_code == 200


# --- Coverage ----------------------------------------------------------------------------------------


def test_a_node_is_covered_through_its_site_rack_or_itself():
    site = make_site()
    rack = make_rack(site=site)
    node = make_node(rack=rack)
    gpu = make_gpu(node=node)
    by_site, by_rack, by_node = (make_contract(covers=[x]) for x in (site, rack, node))
    make_contract(covers=[make_site()])  # another site
    assert set(coverage.contracts_covering_node(node)) == {by_site, by_rack, by_node}
    assert set(coverage.contracts_covering_gpu(gpu)) == {by_site, by_rack, by_node}
    assert coverage.nodes_covered_by([by_site, by_rack, by_node]) == {
        by_site.pk: {node.pk}, by_rack.pk: {node.pk}, by_node.pk: {node.pk}}


def test_an_ended_or_future_contract_does_not_cover():
    node = make_node()
    make_contract(covers=[node], start=TODAY - 400 * D, end=TODAY - D)
    make_contract(covers=[node], start=TODAY + D, end=TODAY + 400 * D)
    assert not coverage.contracts_covering_node(node).exists()


def in_service_node(**kw):
    return make_node(state=LifecycleState.IN_SERVICE, **kw)


def test_uncovered_nodes_with_their_reason():
    site = make_site()
    covered = in_service_node(site=site, warranty_end=TODAY + 100 * D)
    expired_support = in_service_node(warranty_end=TODAY + 100 * D)
    past_warranty = in_service_node(site=site, warranty_end=TODAY - D)
    neither = in_service_node(warranty_end=TODAY - D)
    make_node(state=LifecycleState.BURN_IN)  # not in service: not listed
    make_contract(covers=[site])
    make_contract(covers=[expired_support], start=TODAY - 400 * D, end=TODAY - D)
    make_contract(Contract.Kind.PURCHASE, covers=[expired_support], end=None)  # not a support contract
    reasons = {n.hostname: n.reason for n in coverage.uncovered_nodes()}
    assert reasons == {expired_support.hostname: coverage.NO_SUPPORT, past_warranty.hostname: coverage.WARRANTY_ENDED,
                       neither.hostname: coverage.BOTH}
    assert covered.hostname not in reasons


def test_uncovered_nodes_take_one_query_whatever_the_fleet(django_assert_num_queries):
    for _ in range(5):
        make_contract(covers=[in_service_node(rack=make_rack())])
        in_service_node()
    with django_assert_num_queries(1):
        assert len(list(coverage.uncovered_nodes())) == 5


def test_uncovered_page_lists_and_exports(viewer_client):
    node = in_service_node(warranty_end=TODAY - D)
    response = viewer_client.get(reverse("planning:uncovered"))
    assert response.status_code == 200
    assert node.hostname in response.content.decode()
    export = viewer_client.get(reverse("planning:uncovered") + "?_export=csv")
    rows = list(csv.DictReader(io.StringIO(export.content.decode())))
    assert [(r["Hostname"], r["Reason"]) for r in rows] == [(node.hostname, coverage.BOTH)]
    with CaptureQueriesContext(connection) as few:
        viewer_client.get(reverse("planning:uncovered"))
    for _ in range(5):
        in_service_node(rack=make_rack())
    with CaptureQueriesContext(connection) as more:
        viewer_client.get(reverse("planning:uncovered"))
    assert len(more) == len(few)


# --- Renewal alerts ----------------------------------------------------------------------------------


def test_alerts_come_within_the_window_once_per_deadline_with_one_digest_per_owner(mailoutbox, settings):
    settings.RENEWAL_ALERT_DAYS = 30
    alice, bob = make_user("alice", None), make_user("bob", None)
    day = date(2026, 6, 1)
    # Notice deadlines: end − notice days.
    a1 = make_contract(owner=alice, start=date(2025, 1, 1), end=date(2026, 8, 30), notice_days=60)  # 2026-07-01
    a2 = make_contract(owner=alice, start=date(2025, 1, 1), end=date(2026, 6, 20), notice_days=0)  # 2026-06-20
    b1 = make_contract(owner=bob, start=date(2025, 1, 1), end=date(2026, 6, 15), notice_days=10)  # 2026-06-05
    make_contract(owner=bob, start=date(2025, 1, 1), end=date(2026, 9, 30), notice_days=30)  # 2026-08-31: too early
    make_contract(owner=bob, start=date(2025, 1, 1), end=date(2026, 6, 10), notice_days=30)  # 2026-05-11: passed
    make_contract(Contract.Kind.PURCHASE, owner=bob, start=date(2025, 1, 1), end=None)  # no end, no deadline

    assert tasks.raise_renewal_alerts(day) == 3
    assert set(RenewalAlert.objects.values_list("contract", "notice_deadline")) == {
        (a1.pk, date(2026, 7, 1)), (a2.pk, date(2026, 6, 20)), (b1.pk, date(2026, 6, 5))}
    assert sorted(m.to[0] for m in mailoutbox) == ["alice@example.org", "bob@example.org"]
    alice_mail = next(m for m in mailoutbox if m.to == ["alice@example.org"])
    assert str(a1) in alice_mail.body and str(a2) in alice_mail.body and "2 notice deadlines" in alice_mail.subject
    assert alice_mail.body.index(str(a2)) < alice_mail.body.index(str(a1))  # soonest first
    assert f"{settings.PORTAL_URL}{a1.get_absolute_url()}" in alice_mail.body  # a link a mail reader can open
    assert RenewalAlert.objects.get(contract=b1).emailed_to == "bob@example.org"

    # The next day: nothing new, nothing mailed twice.
    assert tasks.raise_renewal_alerts(day + D) == 0
    assert len(mailoutbox) == 2
    # A renewed contract has a new deadline: a new alert when it comes within the window.
    b1.end = date(2027, 6, 15)
    b1.save()
    assert tasks.raise_renewal_alerts(date(2027, 5, 10)) == 1


def test_the_alert_emits_the_contract_expiring_event(monkeypatch):
    sent = []
    monkeypatch.setattr(events, "_subscribers", [lambda event, payload: sent.append((event, payload))])
    contract = make_contract(end=TODAY + 10 * D, notice_days=5)
    tasks.raise_renewal_alerts(TODAY)
    assert [(e, p["contract"]["id"], p["notice_deadline"]) for e, p in sent] == [
        ("contract.expiring", contract.pk, TODAY + 5 * D)]


def test_dashboard_lists_open_alerts_and_a_manager_dismisses_one(client, viewer, manager):
    contract = make_contract(reference="RENEW-ME", end=TODAY + 10 * D)
    alert = RenewalAlert.objects.create(contract=contract, notice_deadline=TODAY + 10 * D)
    client.force_login(viewer)
    page = client.get("/").content.decode()
    assert "RENEW-ME" in page and "Dismiss" not in page
    assert client.post(reverse("planning:renewalalert_dismiss", args=[alert.pk])).status_code == 403
    manager_client = client
    manager_client.force_login(manager)
    assert "Dismiss" in manager_client.get("/").content.decode()
    assert manager_client.post(reverse("planning:renewalalert_dismiss", args=[alert.pk])).status_code == 302
    alert.refresh_from_db()
    assert alert.dismissed
    assert manager_client.get("/").context["renewal_alerts"] == []


def test_model_refuses_an_end_before_the_start():
    with pytest.raises(ValidationError, match="before the start"):
        make_contract(start=TODAY, end=TODAY - D)


# --- Demo data ---------------------------------------------------------------------------------------


def test_seed_demo_adds_the_demo_contracts(settings):
    from django.core.management import call_command

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    call_command("seed_demo", stdout=io.StringIO())
    kinds = dict(Contract.objects.values_list("reference", "kind"))
    assert sorted(kinds.values()) == ["expansion", "purchase", "purchase", "rental", "support"]
    rental = Contract.objects.get(kind=Contract.Kind.RENTAL)
    assert TODAY < rental.end <= TODAY + 60 * D and rental.rented_gpus == 64
    uncovered = {n.hostname for n in coverage.uncovered_nodes()}
    assert uncovered and all(name.startswith("lys-a100") for name in uncovered)  # most, not all, are supported
    assert Contract.objects.get(kind=Contract.Kind.SUPPORT).sla_terms.count() == 4
    history = Contract.history.count()
    call_command("seed_demo", stdout=io.StringIO())
    assert Contract.history.count() == history  # a second run writes nothing


def test_the_contract_page_reads_the_same_queries_however_often_its_coverage_changed(
        client, django_assert_max_num_queries):
    """Each change of coverage is a history row with many-to-many rows: the page reads them all at once."""
    client.force_login(make_user("mgr", "manager"))
    once, often = make_contract(reference="ONCE"), make_contract(reference="OFTEN")
    for contract, changes in ((once, 2), (often, 10)):
        for _ in range(changes):
            contract.nodes.add(make_node())
            contract.save()
    client.get(once.get_absolute_url())
    with django_assert_max_num_queries(40) as few:
        assert client.get(once.get_absolute_url()).status_code == 200
    with django_assert_max_num_queries(len(few)):
        page = client.get(often.get_absolute_url()).content.decode()
    assert page.count("<b>nodes</b>") >= 9  # every coverage change is in the history
