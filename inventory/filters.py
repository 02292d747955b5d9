"""Filter sets shared by the list pages and the API (``?state=in_service&site=2&q=gpu-a``)."""

from functools import cached_property

import django_filters
from django import forms
from django.db.models import F, Q
from django.utils import timezone

from portal.db import without_timestamps
from portal.filters import STATE_WIDGET, SearchFilterSet, yes_no_filter
from portal.forms import Select

from . import capacity
from .models import (
    GPU,
    Fabric,
    FabricAttachment,
    GPUModel,
    LifecycleState,
    Node,
    NodeModel,
    Rack,
    Site,
    StorageSystem,
    Switch,
)
from .queries import chosen_site, fleet_gpu_models, in_state_longer_than, partitions, unknown_partition
from .telemetry import recent_faults


class GPUModelFilterSet(SearchFilterSet):
    search_fields = ("vendor", "name")

    class Meta:
        model = GPUModel
        fields = ["vendor", "form_factor"]


class NodeModelFilterSet(SearchFilterSet):
    search_fields = ("vendor", "name")

    class Meta:
        model = NodeModel
        fields = ["vendor", "gpu_slots"]


class SiteFilterSet(SearchFilterSet):
    search_fields = ("name", "location")

    class Meta:
        model = Site
        fields = []


class RackFilterSet(SearchFilterSet):
    search_fields = ("name", "site__name")

    class Meta:
        model = Rack
        fields = ["site"]


def racks(request=None):
    return without_timestamps(Rack.objects.annotate(site_name=F("site__name")))  # a rack is shown with its site


class RackChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj):
        return f"{obj.site_name} / {obj.name}"  # Rack.__str__ from the joined-in name: no site object per rack


class RackFilter(django_filters.ModelChoiceFilter):
    """A rack drop-down (125 racks on the node list) labelled as ``Rack.__str__`` labels them."""

    field_class = RackChoiceField


def node_id_filter():
    """Nodes by id for the API and links; fleets have thousands, too many for a drop-down."""
    return django_filters.NumberFilter(field_name="node", label="Node ID", widget=forms.HiddenInput)


class NodeFilterSet(SearchFilterSet):
    """The partition select offers the chosen site's partitions (the list page redraws it when the site changes,
    as the utilization dashboard does); a partition no node of the chosen site is in is an error (the API's 400),
    or, with ``drop_unknown_partition`` (the list page), dropped: it is what is left in the URL when the site
    changed."""

    search_fields = ("hostname", "serial", "asset_tag", "partition", "owner_team__name")
    rack = RackFilter(queryset=racks)
    state = django_filters.MultipleChoiceFilter(choices=LifecycleState.choices, widget=STATE_WIDGET)
    partition = django_filters.CharFilter(lookup_expr="iexact", widget=Select)
    drop_unknown_partition = False
    owner_team = django_filters.CharFilter(field_name="owner_team__name", lookup_expr="iexact", label="Owner team")
    warranty_expired = yes_no_filter(method="filter_warranty_expired", label="Warranty expired")
    in_state_days = django_filters.NumberFilter(
        method="filter_in_state_days", label="In its state for more than (days)", min_value=0, max_value=36500,
        widget=forms.NumberInput(attrs={"min": 0, "placeholder": "e.g. 14"}),
    )

    class Meta:
        model = Node
        fields = ["site", "rack", "node_model", "state", "partition", "owner_team"]

    def __init__(self, data=None, *args, **kwargs):
        super().__init__(data, *args, **kwargs)
        if self.drop_unknown_partition and self.unknown_partition():
            self.data = self.data.copy()
            self.data.pop("partition")

    @cached_property
    def partitions(self):
        return partitions(chosen_site(self.data))

    def unknown_partition(self):
        """The error for the chosen partition, None if the chosen site has it (any case) or no site is chosen."""
        site, partition = chosen_site(self.data), self.data.get("partition")
        if site and partition and partition.lower() not in {p.lower() for p in self.partitions}:
            return unknown_partition(site, partition, self.partitions)
        return None

    @property
    def form(self):
        if not hasattr(self, "_form"):
            field = super().form.fields["partition"]
            field.widget.choices = [("", "All partitions"), *((p, p) for p in self.partitions)]
            if error := self.unknown_partition():
                self._form.add_error("partition", error)
        return self._form

    def filter_warranty_expired(self, queryset, name, value):
        expired = Q(warranty_end__lt=timezone.localdate())
        return queryset.filter(expired) if value else queryset.exclude(expired)

    def filter_in_state_days(self, queryset, name, value):
        return in_state_longer_than(queryset, int(value))


class NodeListFilterSet(NodeFilterSet):
    drop_unknown_partition = True


class GPUFilterSet(SearchFilterSet):
    search_fields = ("serial", "uuid", "node__hostname")
    state = django_filters.MultipleChoiceFilter(choices=LifecycleState.choices, widget=STATE_WIDGET)
    site = django_filters.ModelChoiceFilter(field_name="node__site", queryset=Site.objects.all(), label="Site")
    node = node_id_filter()
    hostname = django_filters.CharFilter(field_name="node__hostname", lookup_expr="iexact", label="Node hostname")
    spare = yes_no_filter(field_name="node", lookup_expr="isnull", label="Spare (no node)")
    # What the home page's health tiles count (issue 37): their links list exactly those GPUs.
    capacity = django_filters.ChoiceFilter(choices=list(capacity.STATES.items()), method="in_capacity_state",
                                           label="Capacity state")
    xid_hours = django_filters.ChoiceFilter(choices=list(recent_faults.WINDOWS.items()), method="with_xid",
                                            label="Hardware XID event in the")
    ecc_hours = django_filters.ChoiceFilter(choices=list(recent_faults.WINDOWS.items()), method="with_ecc",
                                            label="ECC errors in the")
    row_remap_failed = django_filters.BooleanFilter(method="with_remap_failed", label="Row remap failed")

    class Meta:
        model = GPU
        fields = ["node", "gpu_model", "state", "site"]

    def in_capacity_state(self, queryset, name, value):
        return queryset.filter(capacity.state_q(value))

    def with_xid(self, queryset, name, value):
        return queryset.filter(pk__in=recent_faults.gpu_ids(recent_faults.xid_events(int(value))))

    def with_ecc(self, queryset, name, value):
        return queryset.filter(pk__in=recent_faults.gpu_ids(recent_faults.ecc_hours(int(value))))

    def with_remap_failed(self, queryset, name, value):
        failed = recent_faults.gpu_ids(recent_faults.remap_failed())
        return queryset.filter(pk__in=failed) if value else queryset.exclude(pk__in=failed)

    @property
    def form(self):
        if not hasattr(self, "_form"):
            # The drop-down offers the models the fleet has (the catalog lists many more); any still validates.
            field = super().form.fields["gpu_model"]
            field.widget.choices = [("", field.empty_label), *((m.pk, str(m)) for m in fleet_gpu_models())]
        return self._form


class FabricFilterSet(SearchFilterSet):
    search_fields = ("name",)

    class Meta:
        model = Fabric
        fields = ["kind", "site"]


class SwitchFilterSet(SearchFilterSet):
    search_fields = ("name", "model", "serial")
    rack = RackFilter(queryset=racks)

    class Meta:
        model = Switch
        fields = ["fabric", "site", "rack"]


class FabricAttachmentFilterSet(SearchFilterSet):
    search_fields = ("node__hostname", "fabric__name")
    node = node_id_filter()

    class Meta:
        model = FabricAttachment
        fields = ["node", "fabric", "switch"]


class StorageSystemFilterSet(SearchFilterSet):
    search_fields = ("name",)

    class Meta:
        model = StorageSystem
        fields = ["site", "kind", "tier"]
