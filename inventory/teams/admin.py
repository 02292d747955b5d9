from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from .models import Team, TeamMember


class TeamMemberInline(admin.TabularInline):
    model = TeamMember
    fields = ("user", "slurm_user", "role")
    autocomplete_fields = ("user",)
    extra = 0


@admin.register(Team)
class TeamAdmin(SimpleHistoryAdmin):
    list_display = ("name", "pi", "email")
    list_select_related = ("pi",)
    search_fields = ("name", "description", "email")
    autocomplete_fields = ("pi",)
    inlines = [TeamMemberInline]

    def get_readonly_fields(self, request, obj=None):
        # A team's name is its Slurm account: given once (Slurm cannot rename one either).
        return ("name",) if obj is not None else ()


@admin.register(TeamMember)
class TeamMemberAdmin(SimpleHistoryAdmin):
    list_display = ("team", "user", "slurm_user", "role")
    list_select_related = ("team", "user")
    list_filter = ("role",)
    search_fields = ("team__name", "user__username", "slurm_user")
    autocomplete_fields = ("team", "user")
