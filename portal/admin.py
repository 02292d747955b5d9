"""Django admin for the portal's own models: API tokens, worker heartbeats, the directory group mapping."""

from django.contrib import admin, messages

from .models import APIToken, DirectoryGroupMapping, LoginGrantChange, WorkerHeartbeat


class ReadOnlyMixin:
    """An admin (or inline) that shows records and never writes them: history, deliveries, telemetry rows."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(APIToken)
class APITokenAdmin(admin.ModelAdmin):
    """Only the hash is stored. A token added here gets a fresh key, shown once in a message."""

    list_display = ("name", "user", "prefix", "created", "expires", "last_used", "expired")
    list_filter = ("user", "expires")
    list_select_related = ("user",)
    search_fields = ("name", "prefix", "user__username")
    raw_id_fields = ("user",)
    fields = ("user", "name", "expires", "prefix", "key_hash", "created", "last_used")
    readonly_fields = ("prefix", "key_hash", "created", "last_used")
    ordering = ("user__username", "-created")

    @admin.display(boolean=True)
    def expired(self, token):
        return token.is_expired

    def get_readonly_fields(self, request, obj=None):
        # A token's owner cannot change after it is issued.
        return (*self.readonly_fields, "user") if obj is not None else self.readonly_fields

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
            return
        token, key = APIToken.issue(obj.user, obj.name, expires=obj.expires)
        obj.pk, obj.key_hash, obj.prefix, obj.created = token.pk, token.key_hash, token.prefix, token.created
        self.message_user(
            request, f"Key for “{token.name}”: {key} — copy it now, it is not shown again.", messages.WARNING
        )


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(admin.ModelAdmin):
    list_display = ("worker", "last_seen")
    search_fields = ("worker",)
    readonly_fields = ("worker", "last_seen")
    ordering = ("-last_seen",)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(DirectoryGroupMapping)
class DirectoryGroupMappingAdmin(admin.ModelAdmin):
    """The one table from directory groups to roles and teams (``portal.sso.mapping``), applied at every login."""

    list_display = ("group", "source", "role", "team", "team_role")
    list_filter = ("source", "role")
    search_fields = ("group", "team")
    ordering = ("group", "source")


@admin.register(LoginGrantChange)
class LoginGrantChangeAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """What directory logins gave and took, with the groups that decided it."""

    list_display = ("at", "user", "source", "action", "role", "team", "team_role")
    list_filter = ("source", "action")
    list_select_related = ("user",)
    search_fields = ("user__username", "role", "team")
