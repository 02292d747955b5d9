"""Interruptions of Slurm jobs, written by ``recording.record_interruptions`` (attribution rules:
``attribution.py``). Like the telemetry models, inventory models are named by string: ``inventory/models.py``
imports this module."""

from django.db import models

from inventory.telemetry.models import TeamRowQuerySet

from . import attribution


class Interruption(models.Model):
    """A job that ended in anything but COMPLETED: who ended it (cause and reason), the fault near its end when one
    was found, and for the infrastructure's, the GPU-hours it cost (an estimate: ``attribution.py``).

    The run is copied from the job's row (start, end, GPUs, team, partition); each run of a requeued job is a
    row of its own (``SlurmJob``), so the interrupted run and its interruption stay as they were when the job
    runs again. One row per job run and end (``ended_at``): recording a window again replaces its rows instead
    of adding to them."""

    class Cause(models.TextChoices):
        INFRASTRUCTURE = attribution.INFRASTRUCTURE, "Infrastructure"
        USER = attribution.USER, "User"
        SCHEDULER = attribution.SCHEDULER, "Scheduler"

    Reason = models.TextChoices("Reason", [(code, (code, words)) for code, words in attribution.REASONS.items()])

    job = models.ForeignKey("inventory.SlurmJob", on_delete=models.CASCADE, related_name="interruptions")
    state = models.CharField(max_length=40, help_text="The job's Slurm state at its end.")
    started_at = models.DateTimeField(help_text="When the interrupted run started.")
    ended_at = models.DateTimeField(help_text="When the run ended: the interruption's time.")
    gpus = models.PositiveIntegerField(default=0)
    account = models.CharField("account / team", max_length=100, blank=True, db_index=True)
    partition = models.CharField(max_length=100, blank=True, db_index=True)
    cause = models.CharField(max_length=20, choices=Cause.choices, db_index=True)
    reason = models.CharField(max_length=20, choices=Reason.choices)
    # The fault near the end (infrastructure only), and where: its node and GPU when known; for a NODE_FAIL
    # without a fault on record, the job's node when it ran on one.
    node = models.ForeignKey("inventory.Node", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    gpu = models.ForeignKey("inventory.GPU", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    xid_event = models.ForeignKey("inventory.XidEvent", on_delete=models.SET_NULL, null=True, blank=True,
                                  related_name="+")
    transition = models.ForeignKey("inventory.StateTransition", on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    fault_ts = models.DateTimeField(null=True, blank=True, help_text="When the fault was read.")
    # The estimate (infrastructure only; null for the others).
    checkpoint_minutes = models.PositiveIntegerField(null=True, blank=True,
                                                     help_text="The checkpoint interval assumed.")
    lost_run_gpu_hours = models.FloatField(null=True, blank=True,
                                           help_text="GPUs × the run since its last checkpoint (run mod interval).")
    next_start = models.DateTimeField(null=True, blank=True,
                                      help_text="When the team's next job on the partition started.")
    restart_wait_hours = models.FloatField(null=True, blank=True,
                                           help_text="Until that start, at most the cap; null while not known.")
    lost_wait_gpu_hours = models.FloatField(null=True, blank=True, help_text="GPUs × the restart wait.")
    lost_gpu_hours = models.FloatField(null=True, blank=True, help_text="The two together.")
    assumptions = models.CharField(max_length=300, blank=True, help_text="The estimate's assumptions, in words.")

    objects = TeamRowQuerySet.as_manager()  # ``visible_to(user)``: a researcher's own teams' interruptions

    class Meta:
        ordering = ["-ended_at", "-pk"]
        constraints = [models.UniqueConstraint(fields=["job", "ended_at"], name="interruption_unique_job_end")]
        # The list's order (newest first), the lost GPU-hours of a cause in a range, a node's interruptions.
        indexes = [models.Index(fields=["ended_at", "id"]), models.Index(fields=["cause", "ended_at"]),
                   models.Index(fields=["node", "ended_at"])]

    def __str__(self):
        return f"job {self.job_id} {self.reason} at {self.ended_at:%Y-%m-%d %H:%M}"
