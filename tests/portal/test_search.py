"""The global search (issue 19): inventory, tickets, contracts, purchase orders, plans and workloads, each for those
who may see them; only an exact, unique match opens its object; results capped per group with the total shown, in
one query per group."""

import re

import pytest
from django.test import Client
from django.urls import reverse

from portal import registry
from portal.roles import MANAGER, PROCUREMENT, RESEARCHER, SUPPORT, VIEWER
from portal.search import LIMIT
from tests.factories import (
    CapacityPlanFactory,
    ContractFactory,
    PlanWorkloadFactory,
    PurchaseOrderFactory,
    bulk_make,
    make_gpu,
    make_node,
    make_team,
    make_ticket,
)
from tests.helpers.accounts import make_user

pytestmark = pytest.mark.django_db


def logged_in(user):
    client = Client()
    client.force_login(user)
    return client


def search(client, term):
    return client.get(reverse("search"), {"q": term})


def group(page, title):
    """The titles of the results listed under ``title`` on the search page, '(exact)' after the exact ones."""
    html = page.content.decode()
    found = re.search(rf'<section class="card" id="search-[^"]*">\s*<h2>{re.escape(title)} .*?</section>', html, re.S)
    if not found:
        return None
    items = re.findall(r'<li><a href="[^"]*">([^<]*)</a>( <span class="muted">[^<]*</span>)?'
                       r'( <span class="badge">exact</span>)?</li>', found.group(0))
    return [f"{text} (exact)" if exact else text for text, _, exact in items]


def count_badge(page, title):
    html = page.content.decode()
    return re.search(rf'<h2>{re.escape(title)} <span class="count">([^<]*)</span>', html).group(1)


def test_each_kind_is_found_by_its_fields_and_opened_by_its_number():
    manager = logged_in(make_user("max", MANAGER))
    node = make_node(hostname="dgx-zrh-007")
    ticket = make_ticket(title="Fans loud", node=node)
    contract = ContractFactory(vendor="Lambda Labs", reference="LL-2026-17", title="Rental of 64 H100")
    order = PurchaseOrderFactory(vendor="Supermicro", reference="4500012345")
    plan = CapacityPlanFactory(name="FY27 expansion")
    workload = PlanWorkloadFactory(plan=plan, name="Llama pretraining")

    page = search(manager, "zrh-007")  # the node's and the ticket's hostname: two partial matches, listed
    assert page.status_code == 200
    assert group(page, "Nodes") == ["dgx-zrh-007"] and group(page, "Tickets") == [str(ticket)]
    assert group(search(manager, "lambda"), "Contracts") == [str(contract)]  # vendor
    assert group(search(manager, "rental of"), "Contracts") == [str(contract)]  # title
    assert group(search(manager, "supermicro"), "Purchase orders") == [str(order)]  # vendor
    assert group(search(manager, "fy27"), "Capacity plans") == [str(plan)]
    assert group(search(manager, "pretrain"), "Workloads") == ["Llama pretraining"]
    assert group(search(manager, "fans"), "Tickets") == [str(ticket)]  # title

    # Exact numbers and names open the object.
    assert search(manager, "dgx-zrh-007").url == node.get_absolute_url()
    assert search(manager, f"#{ticket.pk}").url == ticket.get_absolute_url()
    assert search(manager, str(ticket.pk)).url == ticket.get_absolute_url()
    assert search(manager, "ll-2026-17").url == contract.get_absolute_url()
    assert search(manager, "4500012345").url == order.get_absolute_url()
    assert search(manager, "fy27 EXPANSION").url == plan.get_absolute_url()
    assert group(search(manager, "Llama pretraining"), "Workloads") == ["Llama pretraining"]  # a name, not an id
    assert workload.get_absolute_url() == f"{plan.get_absolute_url()}#workload-{workload.pk}"
    # Orders are named "PO <number>" across the portal: that finds and opens the order too.
    assert search(manager, "PO 4500012345").url == order.get_absolute_url()
    assert search(manager, "po  45000").status_code == 200
    assert group(search(manager, "po  45000"), "Purchase orders") == [str(order)]
    assert manager.get(workload.get_absolute_url()).status_code == 200


def test_workloads_of_two_plans_with_one_name_say_which_plan_they_are_in():
    manager = logged_in(make_user("max", MANAGER))
    for name in ("FY27 expansion", "FY28 rental"):
        PlanWorkloadFactory(plan=CapacityPlanFactory(name=name), name="Llama pretraining")
    html = search(manager, "llama pre").content.decode()
    assert group(search(manager, "llama pre"), "Workloads") == ["Llama pretraining", "Llama pretraining"]
    assert html.count('<span class="muted">in FY27 expansion</span>') == 1
    assert html.count('<span class="muted">in FY28 rental</span>') == 1


def test_a_researcher_finds_their_tickets_only_and_no_planning():
    rita, bob = make_user("rita", RESEARCHER), make_user("bob", RESEARCHER)
    team = make_team("team-rita", members=[rita])
    own = make_ticket(requester=rita, title="NCCL timeout on gpu-a")
    teams = make_ticket(requester=make_user("tom", RESEARCHER), team=team, title="NCCL timeout on gpu-b")
    hidden = make_ticket(requester=bob, title="NCCL timeout on gpu-c (secret run)")
    ContractFactory(reference="NCCL-1")
    researcher = logged_in(rita)

    page = search(researcher, "nccl")
    assert sorted(group(page, "Tickets")) == sorted([str(own), str(teams)])
    assert "secret run" not in page.content.decode()
    assert group(page, "Contracts") is None  # researchers read no contracts
    # Another user's ticket number does not open it, nor list it.
    page = search(researcher, f"#{hidden.pk}")
    assert page.status_code == 200 and "secret run" not in page.content.decode()
    assert search(researcher, f"#{own.pk}").url == own.get_absolute_url()
    # The page says what was searched: what a researcher may see, no planning.
    text = search(researcher, "nothing-like-this").content.decode()
    assert "Nothing matches" in text and "ticket numbers" in text and "node hostnames" in text
    assert "contract numbers" not in text and "purchase order numbers" not in text


def test_support_staff_find_every_ticket_and_procurement_finds_orders():
    ticket = make_ticket(requester=make_user("bob", RESEARCHER), title="Secret run crashed")
    assert group(search(logged_in(make_user("sam", SUPPORT)), "secret"), "Tickets") == [str(ticket)]
    order = PurchaseOrderFactory(reference="PO-77", vendor="Dell")
    PurchaseOrderFactory(reference="PO-770", vendor="Dell")
    procurement = logged_in(make_user("pia", PROCUREMENT))
    assert search(procurement, "po-77").url == order.get_absolute_url()  # PO-770 matches only in part


def test_a_partial_match_does_not_open_an_exact_one_does():
    viewer = logged_in(make_user("vera", VIEWER))
    node = make_node(hostname="gpu-node-a1b2", serial="SN-XA1-9")
    gpu = make_gpu(node=node, uuid="GPU-1234abcd-0000-0000-0000-000000000000", serial="GPU-SN-77")
    # One object matches, but only in part: it is listed, not opened.
    page = search(viewer, "a1b2")
    assert page.status_code == 200 and group(page, "Nodes") == ["gpu-node-a1b2"]
    page = search(viewer, "1234abcd")
    assert page.status_code == 200 and group(page, "GPUs") == [str(gpu)]
    # Equal to a hostname, serial, UUID, in any case: opened.
    assert search(viewer, "GPU-NODE-A1B2").url == node.get_absolute_url()
    assert search(viewer, "sn-xa1-9").url == node.get_absolute_url()
    assert search(viewer, gpu.uuid.lower()).url == gpu.get_absolute_url()
    # Exact plus partial matches elsewhere: the one exact match still opens.
    make_node(hostname="gpu-node-a1b2-spare")
    assert search(viewer, "gpu-node-a1b2").url == node.get_absolute_url()


def test_two_exact_matches_are_listed_exact_first():
    manager = logged_in(make_user("max", MANAGER))
    make_node(hostname="alpha-9")
    node = make_node(hostname="alpha", serial="S-1")
    ContractFactory(vendor="Acme", reference="alpha")  # a contract numbered like the node
    page = search(manager, "alpha")
    assert page.status_code == 200
    assert group(page, "Nodes") == ["alpha (exact)", "alpha-9"]
    assert group(page, "Contracts") == ["Acme alpha (exact)"]
    assert node.get_absolute_url() in page.content.decode()


def test_groups_with_an_exact_match_come_first():
    manager = logged_in(make_user("max", MANAGER))
    make_node(hostname="dell-node-1")
    order = PurchaseOrderFactory(vendor="Dell", reference="dell")
    PurchaseOrderFactory(vendor="Dell", reference="dell-2")
    ContractFactory(vendor="Dell", reference="dell")  # a second exact match: the page lists them
    page = search(manager, "dell")
    assert page.status_code == 200
    html = page.content.decode()
    assert group(page, "Purchase orders")[0] == f"{order} (exact)"
    assert html.index("<h2>Contracts") < html.index("<h2>Purchase orders") < html.index("<h2>Nodes")


def test_many_matches_show_the_first_twenty_of_all_in_one_query_per_group(django_assert_max_num_queries):
    manager = make_user("max", MANAGER)
    client = logged_in(manager)
    bulk_make("node", 45)  # hostnames gpu-NNNNN
    for i in range(25):
        make_ticket(title=f"gpu fault {i}")
    for i in range(25):
        ContractFactory(reference=f"gpu-{i}")
    with django_assert_max_num_queries(16):  # session, user, groups, perms + 6 inventory + 1 tickets + 4 planning
        page = client.get(reverse("search"), {"q": "gpu"})
    assert page.status_code == 200
    assert count_badge(page, "Nodes") == "first 20 of 45"
    assert len(group(page, "Nodes")) == 20
    assert count_badge(page, "Tickets") == "first 20 of 25"
    assert count_badge(page, "Contracts") == "first 20 of 25"


def test_the_query_count_does_not_grow_with_rows(django_assert_num_queries):
    user = make_user("max", MANAGER)
    bulk_make("node", 3)
    registry.search("warm", user)  # loads the user's permissions (cached on the user)
    with django_assert_num_queries(11) as few_rows:  # six inventory kinds, tickets, four planning kinds
        registry.search("gpu", user)
    bulk_make("node", 60)
    with django_assert_num_queries(len(few_rows.captured_queries)):
        groups = registry.search("gpu", user)
    nodes = next(g for g in groups if g.title == "Nodes")
    assert len(nodes.objects) == LIMIT and nodes.total == 63


def test_the_empty_page_says_what_is_searched():
    manager = logged_in(make_user("max", MANAGER))
    text = manager.get(reverse("search")).content.decode()
    for what in (
        "node hostnames",
        "GPU serials and UUIDs",
        "ticket numbers",
        "contract numbers",
        "purchase order numbers",
        "capacity plans",
    ):
        assert what in text
    assert "Nothing matches" not in text


def test_odd_terms_find_nothing_or_the_named_object_without_an_error():
    manager = logged_in(make_user("max", MANAGER))
    node = make_node(hostname="gpu-1")
    assert search(manager, "gpu-1\x00").url == node.get_absolute_url()  # NUL dropped: PostgreSQL refuses it
    for term in ("#" + "9" * 30, "%", "_"):  # past a bigint, LIKE wildcards
        page = search(manager, term)
        assert page.status_code == 200 and "Nothing matches" in page.content.decode(), term
