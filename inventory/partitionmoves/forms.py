"""The proposal form: which nodes, from which partition (theirs), to which, why; ``workflow.propose`` validates."""

from django import forms

from ..models import LifecycleState, Node


class PartitionMoveForm(forms.Form):
    nodes = forms.ModelMultipleChoiceField(
        queryset=Node.objects.exclude(state=LifecycleState.RETIRED).order_by("hostname"),
        widget=forms.SelectMultiple(attrs={"size": 8}),
        help_text="The nodes to move, all from one partition.")
    to_partition = forms.CharField(max_length=100, label="To partition",
                                   help_text="The Slurm partition they move to.")
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}),
                             help_text="Why: the idle figures, the queue that needs them.")
    recommendation = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)

    def __init__(self, *args, partitions=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["to_partition"].widget.attrs["list"] = "partitions"
        self.partitions = partitions
