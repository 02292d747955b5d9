"""Allocations and their requests over REST."""

from rest_framework import serializers

from inventory.models import GPUModel

from ...teams.models import Team
from ...teams.slurm_sync import Change
from ..models import AllocationApproval, AllocationRequest, SlurmSync, SlurmSyncChange, TeamAllocation


class UseSerializer(serializers.Serializer):
    """``usage.Figures``: the allocation's use at the time of the answer."""

    used = serializers.FloatField(help_text="GPU-hours used in the period so far, as every allocation figure counts.")
    budget = serializers.FloatField(allow_null=True)
    left = serializers.FloatField(allow_null=True)
    percent = serializers.FloatField(allow_null=True, help_text="Used, in per cent of the budget.")
    running = serializers.IntegerField(help_text="GPUs the team's running jobs in scope hold now.")
    burn_rate = serializers.FloatField(help_text="GPU-hours a day over the last ALLOCATION_BURN_RATE_DAYS days.")
    exhausted_on = serializers.DateField(allow_null=True, help_text="The day the budget runs out at that rate, if "
                                         "before the period ends.")
    level = serializers.IntegerField(allow_null=True, help_text="The highest warning level reached (80, 100).")
    state = serializers.ChoiceField(choices=["upcoming", "active", "ended"])
    billing = serializers.FloatField(allow_null=True, help_text="Used, in Slurm's billing units: each partition's "
                                     "GPU-hours × its TRESBillingWeights weight of GRES/gpu (null: not known).")


class BurnDownSerializer(serializers.Serializer):
    """``usage.burn_down``: day by day from the period's first day to its last."""

    days = serializers.ListField(child=serializers.DateField())
    used = serializers.ListField(child=serializers.FloatField(allow_null=True),
                                 help_text="GPU-hours used from the start to each day's end; null after today.")
    budget = serializers.FloatField(allow_null=True)
    projected = serializers.ListField(child=serializers.FloatField(allow_null=True),
                                      help_text="GPU-hours projected at each day's end from today on at the burn rate.")
    use = UseSerializer()


TERMS = ["team", "partition", "gpu_model", "start", "end", "gpu_hours", "max_gpus", "fairshare"]


class TeamAllocationSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="inventory-api:teamallocation-detail")
    team = serializers.SlugRelatedField(slug_field="name", read_only=True)
    use = serializers.SerializerMethodField()

    class Meta:
        model = TeamAllocation
        fields = ["id", "url", *TERMS, "use", "created", "updated"]

    def get_use(self, obj) -> UseSerializer:
        figures = self.context.get("figures", {}).get(obj.pk)
        return None if figures is None else UseSerializer(figures).data


class ApprovalSerializer(serializers.ModelSerializer):
    user = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = AllocationApproval
        fields = ["user", "created", "comment"]


class AllocationRequestSerializer(serializers.ModelSerializer):
    """A request; on ``POST`` the team (by name) and the terms, or for a change or renewal the ``allocation`` and
    the terms that differ from it."""

    url = serializers.HyperlinkedIdentityField(view_name="inventory-api:allocationrequest-detail")
    team = serializers.SlugRelatedField(slug_field="name", queryset=Team.objects.all(), required=False)
    gpu_model = serializers.PrimaryKeyRelatedField(queryset=GPUModel.objects.all(), required=False, allow_null=True)
    allocation = serializers.PrimaryKeyRelatedField(queryset=TeamAllocation.objects.all(), required=False,
                                                    allow_null=True)
    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    decided_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    approvals = ApprovalSerializer(many=True, read_only=True)
    approvals_needed = serializers.IntegerField(read_only=True)

    class Meta:
        model = AllocationRequest
        fields = ["id", "url", "kind", "status", "allocation", *TERMS, "reason", "requested_by", "approvals",
                  "approvals_needed", "decided_by", "decided_at", "decision_comment", "created", "updated"]
        read_only_fields = ["status", "decided_at", "decision_comment"]
        extra_kwargs = {name: {"required": False} for name in ("start", "end")}

    def validate(self, attrs):
        # The model's own checks run in ``workflow.request`` (the view turns its errors into field errors).
        if attrs.get("allocation") is None and attrs.get("team") is None:
            raise serializers.ValidationError({"team": "Name the team (or, for a change or renewal, the allocation)."})
        return attrs


class DecisionSerializer(serializers.Serializer):
    comment = serializers.CharField(allow_blank=True, default="", max_length=2000)


class SlurmSyncChangeSerializer(serializers.ModelSerializer):
    """What one applied change did: ``status`` verified, failed, stale (Slurm no longer held ``before``) or error."""

    applied_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = SlurmSyncChange
        fields = ["position", "description", "command", "before", "after", "status", "read_back", "output",
                  "applied_at", "applied_by"]
        read_only_fields = fields


class SlurmSyncSerializer(serializers.ModelSerializer):
    """A look at Slurm: the changes to approve (each with its `command`, `before`, `after`, `overrides_drift`), the
    drift, the warnings about Slurm's settings, the billing weights read, and once applied what each change did."""

    url = serializers.HyperlinkedIdentityField(view_name="inventory-api:slurmsync-detail")
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True,
                                              help_text="null: beat's daily look.")
    approved_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    changes = serializers.SerializerMethodField()
    applied = SlurmSyncChangeSerializer(many=True, read_only=True)

    class Meta:
        model = SlurmSync
        fields = ["id", "url", "cluster", "status", "created", "created_by", "changes", "drift", "warnings",
                  "billing_weights", "error", "approved_by", "applied_at", "applied", "desired", "actual"]
        read_only_fields = fields

    def get_changes(self, obj) -> list[dict]:
        return [{**change, "description": found.describe(), "command": found.command()}
                for change, found in ((change, Change.from_dict(change)) for change in obj.changes)]
