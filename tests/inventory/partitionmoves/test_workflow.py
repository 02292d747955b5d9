"""Moves of nodes between partitions (issue 37, item 4b): proposed by a manager, approved by another (four eyes),
done: each node's partition changes and its history says which move did it; the refusals; the pages and the API."""

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import Client

from inventory.models import LifecycleState, Node, PartitionMove
from inventory.partitionmoves import workflow
from portal.roles import MANAGER, VIEWER
from tests.factories import make_node
from tests.helpers.accounts import make_user, token_client

pytestmark = pytest.mark.django_db

M = PartitionMove


@pytest.fixture
def nodes(db):
    return [make_node(hostname=f"gpu-{i:02d}", partition="research", state=LifecycleState.IN_SERVICE)
            for i in range(3)]


@pytest.fixture
def managers(db):
    return make_user("ana", MANAGER), make_user("bob", MANAGER)


def test_propose_then_a_second_manager_approves_and_the_nodes_move(nodes, managers):
    ana, bob = managers
    move = workflow.propose(ana, nodes[:2], "train", "Idle 5 of 7 days", recommendation=12)
    assert (move.status, move.from_partition, move.to_partition, move.recommendation) == (
        "proposed", "research", "train", 12)
    with pytest.raises(PermissionDenied, match="Four eyes"):
        workflow.approve(move, ana)
    assert set(Node.objects.values_list("hostname", "partition")) == {
        ("gpu-00", "research"), ("gpu-01", "research"), ("gpu-02", "research")}
    done = workflow.approve(move, bob, "ok")
    assert (done.status, done.decided_by, done.decision_comment) == ("done", bob, "ok")
    assert dict(Node.objects.values_list("hostname", "partition")) == {
        "gpu-00": "train", "gpu-01": "train", "gpu-02": "research"}
    record = Node.history.filter(hostname="gpu-00").latest("history_date")
    assert record.partition == "train"
    assert record.history_change_reason == f"Partition move #{move.pk}: research → train, approved by bob"
    with pytest.raises(ValidationError, match="approved and done; only a proposed one"):
        workflow.approve(move, make_user("cy", MANAGER))


def test_refusals(nodes, managers):
    ana, bob = managers
    with pytest.raises(PermissionDenied):
        workflow.propose(make_user("val", VIEWER), nodes, "train", "why")
    with pytest.raises(ValidationError, match="in research already"):
        workflow.propose(ana, nodes, "research", "why")
    with pytest.raises(ValidationError, match="Say why"):
        workflow.propose(ana, nodes, "train", " ")
    with pytest.raises(ValidationError, match="Name the nodes"):
        workflow.propose(ana, [], "train", "why")
    other = make_node(hostname="gpu-x", partition="inference")
    with pytest.raises(ValidationError, match=r"several partitions \(inference, research\)"):
        workflow.propose(ana, [nodes[0], other], "train", "why")
    workflow.propose(ana, nodes[:1], "train", "why")
    with pytest.raises(ValidationError, match="Already in a proposed move: gpu-00"):
        workflow.propose(bob, nodes[:2], "debug", "why")


def test_a_node_moved_meanwhile_stops_the_approval(nodes, managers):
    ana, bob = managers
    move = workflow.propose(ana, nodes[:2], "train", "why")
    Node.objects.filter(hostname="gpu-01").update(partition="inference")
    with pytest.raises(ValidationError, match="No longer in partition research: gpu-01"):
        workflow.approve(move, bob)
    assert Node.objects.get(hostname="gpu-00").partition == "research"  # nothing half-done
    assert workflow.reject(move, bob, "moved by hand").status == "rejected"


def test_reject_needs_a_reason_and_withdraw_is_the_proposers(nodes, managers):
    ana, bob = managers
    move = workflow.propose(ana, nodes, "train", "why")
    with pytest.raises(ValidationError, match="Say why the move is rejected"):
        workflow.reject(move, bob, "")
    with pytest.raises(PermissionDenied):
        workflow.withdraw(move, make_user("val", VIEWER))
    assert workflow.withdraw(move, ana).status == "withdrawn"
    assert set(Node.objects.values_list("partition", flat=True)) == {"research"}


def test_pages_propose_prefilled_then_approve(nodes, managers):
    ana, bob = managers
    first, second = Client(), Client()
    first.force_login(ana)
    second.force_login(bob)
    form = first.get("/inventory/partition-moves/propose/?nodes=gpu-00,gpu-01&reason=Idle&recommendation=7")
    html = form.content.decode()
    assert form.status_code == 200 and "recommendation #7" in html
    assert f'<option value="{nodes[0].pk}" selected>gpu-00</option>' in html
    answer = first.post("/inventory/partition-moves/propose/", {
        "nodes": [nodes[0].pk, nodes[1].pk], "to_partition": "train", "reason": "Idle", "recommendation": "7"})
    assert answer.status_code == 302
    move = M.objects.get()
    page = first.get(move.get_absolute_url()).content.decode()
    assert "A manager other than you approves or rejects it." in page and 'id="approve"' not in page
    page = second.get(move.get_absolute_url()).content.decode()
    assert 'id="approve"' in page and "recommendation #7" in page
    done = second.post(f"/inventory/partition-moves/{move.pk}/decide/", {"action": "approve"}, follow=True)
    assert "Approved and done: 2 node(s) now in partition train." in done.content.decode()
    node_page = second.get(nodes[0].get_absolute_url()).content.decode()
    assert f"Partition move #{move.pk}: research → train, approved by bob" in node_page
    listing = second.get("/inventory/partition-moves/").content.decode()
    assert "gpu-00, gpu-01" in listing


def test_pages_refuse_a_viewer(nodes, managers):
    viewer = Client()
    viewer.force_login(make_user("val", VIEWER))
    assert viewer.get("/inventory/partition-moves/propose/").status_code == 403
    move = workflow.propose(managers[0], nodes, "train", "why")
    assert viewer.get(move.get_absolute_url()).status_code == 200
    viewer.post(f"/inventory/partition-moves/{move.pk}/decide/", {"action": "approve"})
    assert M.objects.get().status == "proposed"


def test_api_propose_and_approve(nodes, managers):
    ana, bob = managers
    created = token_client(ana).post("/api/inventory/partition-moves/", {
        "nodes": ["gpu-00", "gpu-02"], "to_partition": "train", "reason": "idle"}, format="json")
    assert created.status_code == 201, created.data
    assert (created.data["from_partition"], created.data["proposed_by"], created.data["nodes"]) == (
        "research", "ana", ["gpu-00", "gpu-02"])
    url = f"/api/inventory/partition-moves/{created.data['id']}/approve/"
    assert token_client(ana).post(url, {}, format="json").status_code == 403
    approved = token_client(bob).post(url, {"comment": "go"}, format="json")
    assert approved.status_code == 200 and approved.data["status"] == "done"
    assert Node.objects.get(hostname="gpu-02").partition == "train"
    assert token_client(bob).post(url, {}, format="json").status_code == 400


def test_home_page_says_which_moves_await_a_second_manager(nodes, managers):
    ana, bob = managers
    workflow.propose(ana, nodes, "train", "why")

    def line(user):
        client = Client()
        client.force_login(user)
        return {d.key: d for d in client.get("/").context["decisions"] or []}.get("partition-moves")

    assert line(ana) is None  # four eyes: not the proposer's to approve (nothing to decide: no line)
    mine = line(bob)
    assert (mine.count, mine.url) == (1, "/inventory/partition-moves/?status=proposed")
    assert line(make_user("val", VIEWER)) is None
