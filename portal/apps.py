from django.apps import AppConfig
from django.db.models.signals import post_migrate


class PortalConfig(AppConfig):
    name = "portal"
    verbose_name = "Cluster Portal"

    def ready(self):
        from django.conf import settings

        from . import roles

        post_migrate.connect(roles.sync_role_permissions, dispatch_uid="portal-sync-roles")
        for folder in settings.VAR_FOLDERS:  # before the SQLite file or the filesystem broker is first used
            folder.mkdir(parents=True, exist_ok=True)
