from django.apps import AppConfig
from django.db.backends.signals import connection_created
from django.db.models.signals import post_migrate


class PortalConfig(AppConfig):
    name = "portal"
    verbose_name = "Cluster Portal"

    def ready(self):
        from django.conf import settings

        from . import db, roles
        from .sso import ldap as sso_ldap

        post_migrate.connect(roles.sync_role_permissions, dispatch_uid="portal-sync-roles")
        connection_created.connect(db.speed_up_timestamps, dispatch_uid="portal-fast-timestamps")
        if sso_ldap.BACKEND in settings.AUTHENTICATION_BACKENDS:
            sso_ldap.connect()  # directory groups mapped to roles and teams at every LDAP login
        for folder in settings.VAR_FOLDERS:  # before the SQLite file or the filesystem broker is first used
            folder.mkdir(parents=True, exist_ok=True)
