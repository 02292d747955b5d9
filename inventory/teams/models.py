"""A team: a Slurm account, the people in it, the nodes it owns.

Every app points at ``Team``: a node's ``owner_team``, a ticket's ``team``, and a Slurm job's ``account`` (the
team's ``name``: the figures group by it). A user's teams are ``user.teams``; their memberships (role, Slurm user
name) ``user.team_memberships``.
"""

import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.urls import reverse
from simple_history.models import HistoricalRecords

from portal.history import ChangeRecord
from portal.models import PortalModel

ACCOUNT_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")

validate_account_name = RegexValidator(
    ACCOUNT_NAME,
    "A team's name is its Slurm account: up to 64 lower-case letters, digits, '_', '-' or '.', starting with a "
    "letter or digit.",
)


def team_url(name):
    """The team page of ``name``, or None for no team (or a name kept from before validation that a URL cannot
    carry: a slash)."""
    if not name or "/" in name:
        return None
    return reverse("inventory:team", args=[name])


class Team(PortalModel):
    # Longer than a Slurm account may be: names kept from before teams were validated (up to 100 characters) still
    # fit; the validator holds new and edited teams to Slurm's rules.
    name = models.CharField(
        max_length=100, unique=True, validators=[validate_account_name],
        help_text="The team's Slurm account; every figure groups by it. It cannot change once the team exists.",
    )
    description = models.TextField(blank=True)
    pi = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="led_teams",
        verbose_name="PI", help_text="Principal investigator / owner.",
    )
    email = models.EmailField(blank=True, help_text="A list address that receives the team's notices.")
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="TeamMember", related_name="teams", blank=True)
    history = HistoricalRecords(bases=[ChangeRecord])

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    # The pages are named by the team's name (``/inventory/teams/<name>/``), as the figures are.
    def _url(self, action):
        if action == "detail":
            return team_url(self.name)
        return None if "/" in self.name else reverse(f"inventory:team_{action}", args=[self.name])

    def clean(self):
        # Immutable: Slurm cannot rename an account, and nodes, jobs and rollups hold the name itself.
        if self.pk is not None:
            stored = Team.objects.filter(pk=self.pk).values_list("name", flat=True).first()
            if stored is not None and stored != self.name:
                raise ValidationError({"name": f"A team's name cannot change (it is Slurm account {stored!r})."})


class TeamRole(models.TextChoices):
    MEMBER = "member", "Member"
    MANAGER = "manager", "Manager"  # may edit the team and request allocations for it


class TeamMember(models.Model):
    Role = TeamRole

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships")
    slurm_user = models.CharField(
        "Slurm user", max_length=100, blank=True, help_text="The member's user name in Slurm; empty: their username.",
    )
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.MEMBER)
    history = HistoricalRecords(bases=[ChangeRecord])

    class Meta:
        ordering = ["team__name", "user__username"]
        constraints = [
            models.UniqueConstraint(
                fields=["team", "user"], name="team_member_once",
                violation_error_message="This user is already a member of this team.",
            )
        ]

    def __str__(self):
        return f"{self.user} in {self.team}"

    @property
    def slurm_name(self):
        """The member's Slurm user name: the one given, else their username."""
        return self.slurm_user or self.user.username
