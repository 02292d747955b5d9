from django.contrib.auth import get_user_model
from rest_framework import serializers

from portal.api.serializers import COMMON, TIMESTAMPS, EnumChoiceField, PortalModelSerializer

from ..membership import Wanted, set_members
from ..models import Team, TeamMember


def people():
    return get_user_model().objects.filter(is_active=True)


class TeamMemberSerializer(serializers.Serializer):
    user = serializers.SlugRelatedField(slug_field="username", queryset=people())
    slurm_user = serializers.CharField(
        max_length=100, allow_blank=True, default="",
        help_text="The member's user name in Slurm; empty: their username.",
    )
    slurm_name = serializers.CharField(read_only=True, help_text="The Slurm user name in effect.")
    role = EnumChoiceField(TeamMember.Role, default=TeamMember.Role.MEMBER,
                           help_text="A manager edits the team and requests its allocations.")


class TeamSerializer(PortalModelSerializer):
    """A team: its name is its Slurm account and cannot change. ``members`` given on a write replaces the members
    (``membership.set_members``, as the team's page does); left out, they stay."""

    pi = serializers.SlugRelatedField(slug_field="username", queryset=people(), required=False, allow_null=True,
                                      help_text="The principal investigator / owner, by username.")
    members = TeamMemberSerializer(many=True, required=False, source="memberships")

    class Meta:
        model = Team
        fields = [*COMMON, "name", "description", "pi", "email", "members", *TIMESTAMPS]

    def validate_pi(self, value):
        request = self.context.get("request")
        if self.instance is not None and value != self.instance.pi and request is not None \
                and not request.user.has_perm("inventory.change_team_pi", self.instance):
            raise serializers.ValidationError("Managers and admins change a team's PI.")
        return value

    def validate_members(self, value):
        users = [row["user"].get_username() for row in value]
        repeated = sorted({name for name in users if users.count(name) > 1})
        if repeated:
            raise serializers.ValidationError(f"Each member once: {', '.join(repeated)} more than once.")
        return value

    def validate(self, attrs):
        members = attrs.pop("memberships", None)  # no field of the model: the base class sets the others on it
        attrs = super().validate(attrs)
        if members is not None:
            attrs["memberships"] = members
        return attrs

    def create(self, validated_data):
        members = validated_data.pop("memberships", None)
        team = super().create(validated_data)
        return self._save_members(team, members)

    def update(self, instance, validated_data):
        members = validated_data.pop("memberships", None)
        team = super().update(instance, validated_data)
        return self._save_members(team, members)

    def _save_members(self, team, members):
        if members is not None:
            set_members(team, [Wanted(row["user"], row.get("slurm_user", ""), row.get("role") or "member")
                               for row in members])
            team._prefetched_objects_cache = {}  # the answer reads the members as saved
        return team
