from django.apps import AppConfig
from django.db.models.signals import post_migrate


class PortalConfig(AppConfig):
    name = "portal"
    verbose_name = "Cluster Portal"

    def ready(self):
        from . import roles

        post_migrate.connect(roles.sync_role_permissions, dispatch_uid="portal-sync-roles")
