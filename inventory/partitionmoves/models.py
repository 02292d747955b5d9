"""A proposed move of nodes from one partition to another, and its decision."""

from django.conf import settings
from django.db import models
from simple_history.models import HistoricalRecords

from portal.history import ChangeRecord
from portal.models import PortalModel


class PartitionMoveStatus(models.TextChoices):
    PROPOSED = "proposed", "Proposed"
    DONE = "done", "Approved and done"
    REJECTED = "rejected", "Rejected"
    WITHDRAWN = "withdrawn", "Withdrawn"


class PartitionMove(PortalModel):
    """Nodes to move from ``from_partition`` to ``to_partition``, why, and optionally the recommendation it carries
    out (by number: inventory does not import planning). A second manager's approval does the move."""

    Status = PartitionMoveStatus

    nodes = models.ManyToManyField("inventory.Node", related_name="partition_moves")
    from_partition = models.CharField(max_length=100, blank=True,
                                      help_text="Where the nodes are now (empty: no partition).")
    to_partition = models.CharField(max_length=100, help_text="The Slurm partition they move to.")
    reason = models.TextField(help_text="Why: the idle figures, the queue that needs them.")
    recommendation = models.PositiveIntegerField(null=True, blank=True,
                                                 help_text="The number of the recommendation it carries out.")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PROPOSED, db_index=True)
    proposed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True,
                                   related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_comment = models.TextField(blank=True)
    history = HistoricalRecords(bases=[ChangeRecord])

    class Meta:
        ordering = ["-created", "-pk"]
        verbose_name = "partition move"
        constraints = [
            models.CheckConstraint(condition=~models.Q(from_partition=models.F("to_partition")),
                                   name="partition_move_changes_partition",
                                   violation_error_message="A move goes to another partition."),
        ]

    def __str__(self):
        return f"Move #{self.pk}: {self.from_partition or '(none)'} → {self.to_partition}"

    @property
    def is_proposed(self):
        return self.status == self.Status.PROPOSED
