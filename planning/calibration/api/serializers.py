"""``GET /api/planning/calibration/``: per team, realized against estimated GPU-hours of its planned workloads
(``planning.calibration.calibration``)."""

from rest_framework import serializers


class CalibrationRunSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="workload.pk")
    name = serializers.CharField(source="workload.name")
    plan = serializers.IntegerField(source="workload.plan_id")
    plan_name = serializers.CharField(source="workload.plan.name")
    window_start = serializers.DateField(source="start", allow_null=True, help_text="The window's first day.")
    window_end = serializers.DateField(source="end", allow_null=True,
                                       help_text="The day after the window (the first of the month after its last).")
    status = serializers.CharField(help_text=(
        "finished: counted; running: its window is not over; no_jobs: no jobs under the account in its window; "
        "unsized: it cannot be sized. Only finished ones count."))
    estimate_gpu_hours = serializers.FloatField(source="estimate", allow_null=True,
                                                help_text="The sizing model's GPU-hours, without a sizing factor.")
    realized_gpu_hours = serializers.FloatField(source="realized", allow_null=True, help_text=(
        "GPU-hours of the account's jobs in the window (so far, while it runs); null when no jobs were found."))
    jobs = serializers.IntegerField(help_text="Jobs under the account whose run overlaps the window.")
    ratio = serializers.FloatField(allow_null=True, help_text="Realized / estimate; finished workloads only.")
    notes = serializers.ListField(child=serializers.CharField(), help_text="Why it does not count, and caveats.")


class CalibrationTeamSerializer(serializers.Serializer):
    team = serializers.CharField(help_text="The Slurm account.")
    finished_workloads = serializers.SerializerMethodField()
    estimate_gpu_hours = serializers.FloatField(source="estimate", allow_null=True,
                                                help_text="Σ estimates of its finished workloads.")
    realized_gpu_hours = serializers.FloatField(source="realized", allow_null=True,
                                                help_text="Σ realized GPU-hours of its finished workloads.")
    ratio = serializers.FloatField(allow_null=True, help_text="Σ realized / Σ estimated: the team's sizing factor "
                                                              "(the sizing input `team`); null without a finished one.")
    note = serializers.CharField(source="why_no_ratio", help_text="Why it has no ratio; empty when it has one.")
    workloads = CalibrationRunSerializer(source="runs", many=True)

    def get_finished_workloads(self, team) -> int:
        return len(team.counted)
