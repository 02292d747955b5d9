from django.apps import AppConfig
from django.db.backends.signals import connection_created
from django.db.models.signals import post_migrate


class PortalConfig(AppConfig):
    name = "portal"
    verbose_name = "Cluster Portal"

    def ready(self):
        from django.conf import settings

        from . import db, roles

        post_migrate.connect(roles.sync_role_permissions, dispatch_uid="portal-sync-roles")
        connection_created.connect(db.speed_up_timestamps, dispatch_uid="portal-fast-timestamps")
        for folder in settings.VAR_FOLDERS:  # before the SQLite file or the filesystem broker is first used
            folder.mkdir(parents=True, exist_ok=True)
