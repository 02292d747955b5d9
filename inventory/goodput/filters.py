"""The interruptions page's filters: the API's (``api.views.InterruptionFilterSet``), with labels and selects."""

import django_filters
from django import forms

from inventory.models import GPUModel, Node, Site
from inventory.queries import fleet_gpu_models

from .api.views import InterruptionFilterSet


class InterruptionPageFilterSet(InterruptionFilterSet):
    """Site, GPU model and node are chosen by name; the API takes their ids under the same names."""

    team = django_filters.CharFilter(field_name="account", label="Team (Slurm account)")
    node = django_filters.ModelChoiceFilter(queryset=Node.objects.order_by("hostname"), label="Node")
    site = django_filters.ModelChoiceFilter(queryset=Site.objects.order_by("name"), method="by_nodes", label="Site")
    gpu_model = django_filters.ModelChoiceFilter(queryset=GPUModel.objects.none(), method="by_nodes", label="GPU model")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.filters["gpu_model"].queryset = fleet_gpu_models()
        self.filters["range"].label = "Ended in"
        self.filters["range"].extra["widget"] = forms.TextInput(attrs={"placeholder": "7d, last_month, 2026-11, …"})
