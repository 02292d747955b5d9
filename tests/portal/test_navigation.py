"""The main menu: the sections apps register (``portal.registry.register_menu``), each item shown to the roles
whose permission or policy rule allows it, and no empty section."""

import re

import pytest

from portal import roles
from tests.helpers.accounts import make_user


def menu_of(client, user):
    client.force_login(user)
    nav = client.get("/").content.decode().split("</nav>")[0]
    sections = re.findall(r'class="menu-button"[^>]*>([^<▾]+)', nav)
    return [s.strip() for s in sections], nav


@pytest.mark.django_db
@pytest.mark.parametrize("role, sections, shown, hidden", [
    (roles.VIEWER, ["Inventory", "Telemetry", "Planning", "Support", "Catalog"],
     ["Nodes", "Utilization", "Capacity plans", "Support metrics"], ["Report a problem"]),
    (roles.RESEARCHER, ["Inventory", "Telemetry", "Planning", "Support", "Catalog"],
     ["Nodes", "Utilization", "Tickets", "Report a problem", "Workload sizing"],
     ["Contracts", "Support metrics", "Capacity plans"]),
    (roles.SUPPORT, ["Inventory", "Telemetry", "Planning", "Support", "Catalog"],
     ["Tickets", "Report a problem", "Support metrics"], []),
])
def test_each_role_sees_the_registered_sections_in_order_and_only_its_items(client, role, sections, shown, hidden):
    found, nav = menu_of(client, make_user(f"u-{role}", role))
    assert found[:len(sections)] == sections
    for label in shown:
        assert f">{label}<" in nav, label
    for label in hidden:
        assert f">{label}<" not in nav, label


@pytest.mark.django_db
def test_an_account_without_a_role_gets_no_menu(client):
    found, _ = menu_of(client, make_user("nobody", None))
    assert found == []


@pytest.mark.django_db
def test_menu_links_follow_the_script_prefix(client):
    """The menu's URLs are reversed once per URLconf and prefix: a portal served under a path prefix links there."""
    from django.urls import reverse, set_script_prefix

    from portal.registry import menu

    user = make_user("prefixed", roles.VIEWER)
    items = dict(item for _, section in menu(user) for item in section)
    assert items["Nodes"] == reverse("inventory:node_list") == "/inventory/nodes/"
    set_script_prefix("/portal/")
    try:
        items = dict(item for _, section in menu(user) for item in section)
        assert items["Nodes"] == "/portal/inventory/nodes/"
    finally:
        set_script_prefix("/")
