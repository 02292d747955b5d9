from rest_framework.permissions import DjangoModelPermissions


class RolePermission(DjangoModelPermissions):
    """Model permissions for every method, reads included: a user needs ``view_<model>`` to read,
    ``add``/``change``/``delete`` to write. Roles (groups) grant these; see ``portal.roles``."""

    perms_map = {
        **DjangoModelPermissions.perms_map,
        "GET": ["%(app_label)s.view_%(model_name)s"],
        "HEAD": ["%(app_label)s.view_%(model_name)s"],
        "OPTIONS": ["%(app_label)s.view_%(model_name)s"],
    }
