"""The goodput API's serializers: the goodput report's query parameters and answer, and the interruptions list."""

from rest_framework import serializers

from inventory.telemetry import xid
from inventory.telemetry.api.serializers import StaleSourceSerializer, UtilizationQuerySerializer, choices_error
from portal.api.rows import reads

from ..models import Interruption
from ..queries import GOODPUT_GROUPS, MONTH


class GoodputQuerySerializer(UtilizationQuerySerializer):
    """The query parameters of ``/api/inventory/goodput/``: the utilization report's (same choices, same 400s),
    read for jobs (``inventory.goodput.queries``), calendar months as a grouping too, and the MTBI's job size."""

    group_by = serializers.ChoiceField(
        choices=list(GOODPUT_GROUPS), default="site", error_messages=choices_error("group_by", GOODPUT_GROUPS),
        help_text='What one row of the answer is; `month`: a calendar month of the range (UTC), oldest first, '
                  'named "2026-11".')

    by = serializers.ChoiceField(
        choices=[MONTH], required=False, error_messages=choices_error("by", [MONTH]),
        help_text="`month`: each group month by month, one row per group and calendar month (local midnights, "
        "as `range=2026-11`), oldest month first; e.g. `group_by=team&by=month` for team × month.")
    team = serializers.CharField(required=False, help_text="Only jobs of this Slurm account (team).")
    partition = serializers.CharField(required=False, help_text="Only jobs of this Slurm partition.")
    site = serializers.IntegerField(required=False, help_text="Only jobs that ran on nodes of this site (id).")
    gpu_model = serializers.IntegerField(required=False,
                                         help_text="Only jobs that ran on nodes with GPUs of this model (id).")
    gpus = serializers.IntegerField(required=False, min_value=1, max_value=1_000_000,
                                    help_text="N of the mean time between interruptions of an N-GPU job "
                                    "(default GOODPUT_MTBI_GPUS, 8).")
    job_hours = serializers.FloatField(default=24.0, min_value=0.01, max_value=100_000,
                                       help_text="Length of the job whose expected restarts are given (hours).")


    def validate(self, data):
        data = super().validate(data)
        if data.get("by") == MONTH and data.get("group_by") == MONTH:
            raise serializers.ValidationError({"by": ["Months are split by month already: group by team, partition, "
                                                      "site, GPU model or node to split them."]})
        return data


class GoodputGroupSerializer(serializers.Serializer):
    id = serializers.IntegerField(allow_null=True, help_text="Site, GPU model or node id; null for partition, "
                                  "team and month, and for jobs on no known node.")
    name = serializers.CharField(help_text='The group\'s name ("2026-11" for a month); "(none)" for jobs without '
                                 "one.")
    month = serializers.CharField(required=False, help_text='With `by=month`: the calendar month of the row, '
                                  '"2026-11".')
    allocated_gpu_hours = serializers.FloatField(help_text="Allocated GPUs × the hours of the jobs' runs in the "
                                                 "range, clipped per node to its GPUs.")
    interruptions = serializers.IntegerField(help_text="Infrastructure interruptions that ended in the range.")
    user_interruptions = serializers.IntegerField(help_text="Jobs ended by their user (failed with no fault "
                                                  "nearby, out of memory, cancelled, time limit).")
    scheduler_interruptions = serializers.IntegerField(help_text="Jobs preempted or requeued with no fault nearby.")
    interruptions_per_1000_gpu_days = serializers.FloatField(allow_null=True, help_text="Null without allocation.")
    mtbi_hours = serializers.FloatField(
        allow_null=True, help_text="Mean time between infrastructure interruptions for a job of `gpus` GPUs: "
        "allocated GPU-hours per interruption / `gpus`. Null without an interruption.")
    expected_restarts = serializers.FloatField(
        allow_null=True, help_text="Expected restarts of a `gpus`-GPU job of `job_hours` hours: job_hours / mtbi.")
    lost_gpu_hours = serializers.FloatField(help_text="Estimate: lost work plus restart wait (see `assumptions`).")
    lost_run_gpu_hours = serializers.FloatField(help_text="Estimate: GPU-hours since the last checkpoint, in range.")
    lost_wait_gpu_hours = serializers.FloatField(help_text="Estimate: GPUs × the wait until the team's next job.")
    lost_cost = serializers.FloatField(help_text="Lost GPU-hours × each node's cost per GPU-hour from its contracts, "
                                       "else × idle_gpu_hour_cost.")
    lost_gpu_hours_at_default_cost = serializers.FloatField(help_text="Of them, those priced at idle_gpu_hour_cost.")
    queue_wait_share = serializers.FloatField(allow_null=True, help_text="GPUs × wait / GPUs × (wait + run) of the "
                                              "jobs that started in the range (0–1).")
    goodput_ratio = serializers.FloatField(allow_null=True, help_text="(allocated − lost work) / allocated (0–1); "
                                           "null without allocation.")
    lost_gpu_fault_gpu_hours = serializers.FloatField(help_text="Of lost_gpu_hours, those of GPU faults (XID, ECC).")
    lost_node_fault_gpu_hours = serializers.FloatField(help_text="Of lost_gpu_hours, the others (node failures, "
                                                       "degraded).")
    lost_preemption_gpu_hours = serializers.FloatField(
        help_text="Estimate: GPUs × the run since the last checkpoint of the jobs preempted or requeued (default "
        "checkpoint interval), in range.")
    lost_user_gpu_hours = serializers.FloatField(help_text="The same for the jobs the user's failures ended.")
    queue_wait_gpu_hours = serializers.FloatField(help_text="GPUs × queue wait of the jobs that started in the "
                                                  "range (the team's time, not the fleet's).")


class GoodputSerializer(serializers.Serializer):
    group_by = serializers.CharField()
    by = serializers.CharField(allow_null=True, help_text="`month` when each group is split by month.")
    range = serializers.CharField()
    start = serializers.DateTimeField(help_text="Start of the range (its first hour or day).")
    end = serializers.DateTimeField(help_text="End of the range: when the figures were computed (running jobs count "
                                    "until then), or a calendar range's last midnight.")
    gpus = serializers.IntegerField(help_text="N of the MTBI.")
    job_hours = serializers.FloatField()
    currency = serializers.CharField()
    idle_gpu_hour_cost = serializers.FloatField(help_text="The cost per GPU-hour of nodes without a contract cost.")
    cost_basis = serializers.CharField(help_text="What the lost cost priced, in words.")
    assumptions = serializers.CharField(help_text="The lost GPU-hours are an estimate: its assumptions.")
    groups = GoodputGroupSerializer(many=True, help_text="Most lost GPU-hours first.")
    stale_sources = StaleSourceSerializer(many=True, help_text="Enabled Slurm sources whose pulls fail: their jobs "
                                          "are missing from these figures.")


class InterruptionSerializer(serializers.ModelSerializer):
    """A job that ended in anything but COMPLETED: cause, reason, the fault near its end, and (infrastructure only)
    the estimate of the GPU-hours it lost, with its assumptions."""

    job = serializers.HyperlinkedRelatedField(view_name="inventory-api:slurmjob-detail", read_only=True)
    job_id = serializers.CharField(source="job.job_id", read_only=True, help_text="Slurm's job id.")
    node = serializers.HyperlinkedRelatedField(view_name="inventory-api:node-detail", read_only=True, allow_null=True)
    node_id = serializers.IntegerField(read_only=True, allow_null=True)
    hostname = serializers.CharField(source="node.hostname", read_only=True, allow_null=True)
    gpu = serializers.HyperlinkedRelatedField(view_name="inventory-api:gpu-detail", read_only=True, allow_null=True)
    gpu_id = serializers.IntegerField(read_only=True, allow_null=True)
    fault = serializers.SerializerMethodField(help_text="The fault near the end: an XID event, an hour with "
                                              "double-bit ECC errors, or a move to degraded; null when none.")
    ticket = serializers.SerializerMethodField(help_text="The support ticket opened for the fault, when known.")

    class Meta:
        model = Interruption
        fields = ["id", "job", "job_id", "state", "account", "partition", "started_at", "ended_at", "gpus", "cause",
                  "reason", "node", "node_id", "hostname", "gpu", "gpu_id", "fault", "ticket", "checkpoint_minutes",
                  "lost_run_gpu_hours", "next_start", "restart_wait_hours", "lost_wait_gpu_hours", "lost_gpu_hours",
                  "assumptions"]
        read_only_fields = fields

    @reads("xid_event_id", "xid_event__pk", "xid_event__code", "xid_event__ts", "transition_id", "transition__pk",
           "transition__to_state", "transition__reason", "transition__created", "reason", "fault_ts")
    def get_fault(self, obj) -> dict | None:
        if obj.xid_event_id:
            event = obj.xid_event
            return {"kind": "xid", "id": event.pk, "code": event.code, "meaning": xid.meaning(event.code),
                    "ts": event.ts}
        if obj.transition_id:
            moved = obj.transition
            return {"kind": "degraded", "id": moved.pk, "to_state": moved.to_state, "reason": moved.reason,
                    "ts": moved.created}
        if obj.reason == "ecc_dbe" and obj.fault_ts:
            return {"kind": "ecc_dbe", "id": None, "hour": obj.fault_ts, "ts": obj.fault_ts}
        return None

    @reads("pk")
    def get_ticket(self, obj) -> dict | None:
        return self.context.get("tickets", {}).get(obj.pk)
