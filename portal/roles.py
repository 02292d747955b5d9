"""Roles are Django groups whose permissions are kept in sync after every migration.

- ``viewer``: read everything in the portal's apps.
- ``manager``: read, create, edit, delete and import in the portal's apps.
- ``admin``: everything, including users and groups (Django admin needs ``is_staff`` as well).
- ``procurement``: for a procurement system's token: read everything, create purchase orders and
  deliveries (which create the delivered nodes and GPUs), but not edit the inventory directly.
- ``support``: support engineers: read everything, work tickets (every ticket, internal comments, triage,
  assign, RMA swaps: which change nodes and GPUs). Teams (``inventory.Team``) are managers' and admins' to
  create and edit, and a team's own managers' to edit (``inventory.policy``).
- ``researcher``: read the inventory and telemetry; open tickets, comment and attach files on their own and
  their teams' tickets only (``Ticket.objects.visible_to``), never internal comments.

Viewers and procurement read every ticket but not internal comments: those need ``support.work_ticket``
(support, managers, admins), as do triage, assignment and every status change.

Views and the API check ordinary model permissions (``inventory.change_node``), so a new model is
covered by the roles as soon as its migration runs; rules that combine them, or depend on the object, live in
the apps' policy modules (``portal.policy``).
"""

from django.contrib.auth.models import Group, Permission
from django.db import models

VIEWER, MANAGER, ADMIN, PROCUREMENT = "viewer", "manager", "admin", "procurement"
SUPPORT, RESEARCHER = "support", "researcher"
PROCUREMENT_WRITES = ("purchaseorder", "orderline", "delivery", "deliveryitem")
SUPPORT_INVENTORY_WRITES = ("add_gpu", "change_gpu", "add_node", "change_node")  # lifecycle changes, RMA swaps
# Without ``view_ticket`` (which reads every ticket and its history, as on the Changes page): the support pages
# and API show a researcher the tickets they may add to, their own and their teams' ones.
RESEARCHER_TICKET_PERMS = ("add_ticket", "add_ticketcomment", "add_ticketattachment", "view_support_pages")
ROLE_APPS = ("inventory", "planning", "support", "portal")
# Who gets which role is the admins' alone: a row of the directory group mapping grants roles (portal.sso), so
# only the admin role has its permissions (and its history's), not the managers who hold every other permission of
# the apps. Everyone's API tokens too: each user sees and revokes their own on the Tokens page without a permission.
ADMIN_ONLY_MODELS = ("directorygroupmapping", "historicaldirectorygroupmapping", "logingrantchange", "apitoken")


def sync_role_permissions(sender=None, **kwargs):
    using = kwargs.get("using", "default")
    portal_perms = Permission.objects.using(using).filter(content_type__app_label__in=ROLE_APPS).exclude(
        content_type__app_label="portal", content_type__model__in=ADMIN_ONLY_MODELS)
    wanted = {
        VIEWER: portal_perms.filter(codename__startswith="view_"),
        MANAGER: portal_perms,
        ADMIN: Permission.objects.using(using).all(),
        PROCUREMENT: portal_perms.filter(
            models.Q(codename__startswith="view_")
            | models.Q(content_type__app_label="planning", content_type__model__in=PROCUREMENT_WRITES,
                       codename__startswith="add_")
        ),
        SUPPORT: portal_perms.filter(
            models.Q(codename__startswith="view_")
            | models.Q(content_type__app_label="support")
            | models.Q(content_type__app_label="inventory", codename__in=SUPPORT_INVENTORY_WRITES)
        ),
        RESEARCHER: portal_perms.filter(
            models.Q(content_type__app_label="inventory", codename__startswith="view_")
            | models.Q(content_type__app_label="support", codename__in=RESEARCHER_TICKET_PERMS)
        ),
    }
    for name, perms in wanted.items():
        group, _ = Group.objects.using(using).get_or_create(name=name)
        group.permissions.set(perms)


def group_names(user):
    """The names of the user's groups, read once per user object into the cache django-rules'
    ``is_group_member`` reads (the menus' rules ask it too): one query for both on a page."""
    if not hasattr(user, "_group_names_cache"):
        user._group_names_cache = set(user.groups.values_list("name", flat=True))
    return user._group_names_cache


def role_of(user):
    """The strongest role a user holds, for display."""
    if not user.is_authenticated:
        return None
    if user.is_superuser:
        return ADMIN
    names = group_names(user)
    for role in (ADMIN, MANAGER, SUPPORT, PROCUREMENT, VIEWER, RESEARCHER):
        if role in names:
            return role
    return None


def sees_outbound_errors(user, permission):
    """Whether ``user`` may read the errors of outbound calls (a telemetry source's, a webhook's): those who
    may change the object (managers, admins). The reasons are the portal's own words, but they still say what
    the portal could or could not reach inside the network; everyone else sees only that it failed."""
    return bool(user and user.is_authenticated and user.has_perm(permission))
