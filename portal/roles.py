"""Roles are Django groups whose permissions are kept in sync after every migration.

- ``viewer``: read everything in the portal's apps.
- ``manager``: read, create, edit, delete and import in the portal's apps.
- ``admin``: everything, including users and groups (Django admin needs ``is_staff`` as well).
- ``procurement``: for a procurement system's token: read everything, create purchase orders and
  deliveries (which create the delivered nodes and GPUs), but not edit the inventory directly.

Views and the API check ordinary model permissions (``inventory.change_node``), so a new model is
covered by the roles as soon as its migration runs.
"""

from django.contrib.auth.models import Group, Permission
from django.db import models

VIEWER, MANAGER, ADMIN, PROCUREMENT = "viewer", "manager", "admin", "procurement"
PROCUREMENT_WRITES = ("purchaseorder", "orderline", "delivery", "deliveryitem")
ROLE_APPS = ("inventory", "planning", "support", "portal")


def sync_role_permissions(sender=None, **kwargs):
    using = kwargs.get("using", "default")
    portal_perms = Permission.objects.using(using).filter(content_type__app_label__in=ROLE_APPS)
    wanted = {
        VIEWER: portal_perms.filter(codename__startswith="view_"),
        MANAGER: portal_perms,
        ADMIN: Permission.objects.using(using).all(),
        PROCUREMENT: portal_perms.filter(
            models.Q(codename__startswith="view_")
            | models.Q(content_type__app_label="planning", content_type__model__in=PROCUREMENT_WRITES,
                       codename__startswith="add_")
        ),
    }
    for name, perms in wanted.items():
        group, _ = Group.objects.using(using).get_or_create(name=name)
        group.permissions.set(perms)


def role_of(user):
    """The strongest role a user holds, for display."""
    if not user.is_authenticated:
        return None
    if user.is_superuser:
        return ADMIN
    names = {g.name for g in user.groups.all()}
    for role in (ADMIN, MANAGER, PROCUREMENT, VIEWER):
        if role in names:
            return role
    return None
