"""The mapping from directory groups to roles and teams, and the log of what logins changed."""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from simple_history.models import HistoricalRecords

from ..history import ChangeRecord
from ..models import PortalModel
from ..roles import ADMIN, MANAGER, PROCUREMENT, RESEARCHER, SUPPORT, VIEWER

ROLES = [(role, role) for role in (VIEWER, RESEARCHER, SUPPORT, PROCUREMENT, MANAGER, ADMIN)]


class LoginSource(models.TextChoices):
    ANY = "any", "any directory"
    LDAP = "ldap", "LDAP"
    OIDC = "oidc", "OpenID Connect"
    REMOTE_USER = "remote_user", "remote-user header"


class DirectoryGroupMapping(PortalModel):
    """One row: members of ``group`` (as the directory names it at login) get ``role`` and/or a membership of
    ``team`` (the team's name, its Slurm account) as ``team_role``. Every role and every team a row names is the
    mapping's to give and take: at each login a user gets exactly what their groups map to there."""

    source = models.CharField(max_length=20, choices=LoginSource.choices, default=LoginSource.ANY,
                              help_text="Where the group comes from; 'any directory' matches every login.")
    group = models.CharField(max_length=200, help_text="The directory group as the login brings it: an LDAP "
                             "group's cn, an OpenID Connect groups claim value, a remote-user header group.")
    role = models.CharField(max_length=20, choices=ROLES, blank=True, help_text="The role its members get.")
    team = models.CharField(max_length=100, blank=True, help_text="The team (its Slurm account name) its members "
                            "join.")
    team_role = models.CharField(max_length=20, choices=[("member", "member"), ("manager", "manager")],
                                 default="member", help_text="As what they join the team.")
    history = HistoricalRecords(bases=[ChangeRecord])  # who changed which row when (admins only: portal.roles)

    class Meta:
        ordering = ["group", "source", "pk"]
        verbose_name = "directory group mapping"
        constraints = [models.UniqueConstraint(fields=["source", "group", "role", "team"],
                                               name="directory_group_mapping_once",
                                               violation_error_message="This group already maps to that.")]

    def __str__(self):
        given = [f"role {self.role}"] if self.role else []
        if self.team:
            given.append(f"team {self.team} ({self.team_role})")
        return f"{self.group} → {', '.join(given) or 'nothing'}"

    def clean(self):
        if not self.role and not self.team:
            raise ValidationError("Map the group to a role, a team or both.")
        if self.team:
            from .mapping import team_problem

            problem = team_problem(self.team)
            if problem:
                raise ValidationError({"team": problem})


class LoginGrantChange(models.Model):
    """A role or team membership a login gave or took, with the directory groups that decided it: the history of
    what the mapping did to a user."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="login_grant_changes")
    at = models.DateTimeField(auto_now_add=True)
    source = models.CharField(max_length=20, choices=LoginSource.choices)
    action = models.CharField(max_length=10, choices=[("added", "added"), ("removed", "removed"),
                                                      ("changed", "changed")])
    role = models.CharField(max_length=20, blank=True)
    team = models.CharField(max_length=100, blank=True)
    team_role = models.CharField(max_length=20, blank=True)
    groups = models.JSONField(default=list, help_text="The user's directory groups at that login.")

    class Meta:
        ordering = ["-at", "-pk"]

    def __str__(self):
        what = f"role {self.role}" if self.role else f"team {self.team} ({self.team_role})"
        return f"{self.user}: {what} {self.action} by a {self.get_source_display()} login"
