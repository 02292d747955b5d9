"""Edit forms for the pages and row forms for CSV import.

Model validation (rack height, GPU slots, uniqueness) lives in the models, so these forms, the API
and the import all refuse the same things with the same messages.
"""

from django import forms
from django.core.exceptions import ValidationError

from portal.forms import DateInput
from portal.imports import ImportForm, NamedChoiceField

from . import lifecycle, power
from .models import (
    GPU,
    Fabric,
    FabricAttachment,
    GPUModel,
    Node,
    NodeModel,
    Rack,
    Site,
    StorageSystem,
    Switch,
    Team,
)


class LifecycleFormMixin:
    """The state is chosen when an object is created; afterwards it changes only through the
    lifecycle (detail page or bulk change), which checks the rules and records the reason."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and "state" in self.fields:
            del self.fields["state"]


class GPUModelForm(forms.ModelForm):
    class Meta:
        model = GPUModel
        fields = ["vendor", "name", "form_factor", "memory_gb", "memory_bandwidth_tbs", "bf16_tflops",
                  "fp8_tflops", "tdp_w", "nvlink_gbs"]


class NodeModelForm(forms.ModelForm):
    class Meta:
        model = NodeModel
        fields = ["vendor", "name", "cpu_cores", "ram_gb", "gpu_slots", "max_power_w", "height_u", "list_price"]


class SiteForm(forms.ModelForm):
    class Meta:
        model = Site
        fields = ["name", "location", "power_capacity_kw", "cooling_capacity_kw", "pue", "energy_price_per_kwh",
                  "rack_cost_per_month", "description"]


class RackForm(forms.ModelForm):
    class Meta:
        model = Rack
        fields = ["site", "name", "height_u", "power_budget_kw"]


class NodeForm(LifecycleFormMixin, forms.ModelForm):
    class Meta:
        model = Node
        fields = ["hostname", "serial", "asset_tag", "site", "rack", "position", "node_model", "partition",
                  "owner_team", "warranty_end", "state"]
        widgets = {"warranty_end": DateInput()}


class GPUForm(LifecycleFormMixin, forms.ModelForm):
    class Meta:
        model = GPU
        fields = ["node", "slot", "gpu_model", "serial", "uuid", "state"]


class FabricForm(forms.ModelForm):
    class Meta:
        model = Fabric
        fields = ["name", "kind", "link_speed_gbps", "site", "description"]


class SwitchForm(forms.ModelForm):
    class Meta:
        model = Switch
        fields = ["name", "fabric", "site", "rack", "model", "serial", "ports", "uplinks", "oversubscription_ratio"]


class FabricAttachmentForm(forms.ModelForm):
    class Meta:
        model = FabricAttachment
        fields = ["node", "fabric", "switch", "ports", "speed_gbps"]


class StorageSystemForm(forms.ModelForm):
    class Meta:
        model = StorageSystem
        fields = ["name", "site", "kind", "tier", "capacity_tb", "used_tb", "read_gbs", "write_gbs"]


# --- CSV import: one form per row; related objects are named, not numbered --------------------------


def by_name(queryset, field="name", **kwargs):
    return NamedChoiceField(queryset=queryset, to_field_name=field, **kwargs)


class LifecycleImportMixin:
    """On re-import, a changed ``state`` is applied as a lifecycle transition (checked and recorded)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.previous_state = self.instance.state if self.instance.pk else None
        if self.instance.pk and not (self.data.get("state") or "").strip():
            self.data = {**self.data, "state": self.previous_state}

    def clean_state(self):
        state = self.cleaned_data["state"]
        if self.previous_state and state != self.previous_state:
            try:
                lifecycle.check_transition(self.previous_state, state)
            except ValidationError as error:
                raise ValidationError(error.message_dict["to"]) from error
        return state

    def needs_own_save(self):
        return bool(self.previous_state and self.instance.state != self.previous_state)

    def save(self, commit=True):
        target = self.instance.state
        if self.previous_state and target != self.previous_state:
            self.instance.state = self.previous_state
            obj = super().save(commit)
            return lifecycle.transition(obj, target, self.user, "CSV import")
        return super().save(commit)


class SiteImportForm(ImportForm):
    class Meta:
        model = Site
        fields = ["name", "location", "power_capacity_kw", "cooling_capacity_kw", "pue", "energy_price_per_kwh",
                  "rack_cost_per_month", "description"]

    @classmethod
    def warnings(cls, valid):
        return power.overcommitted(sites=[form.instance for form in valid])  # a capacity lowered under the draw


class RackImportForm(ImportForm):
    site = by_name(Site.objects.all())

    class Meta:
        model = Rack
        fields = ["site", "name", "height_u", "power_budget_kw"]

    @classmethod
    def warnings(cls, valid):
        return power.overcommitted(racks=[form.instance for form in valid])


class NodeImportForm(LifecycleImportMixin, ImportForm):
    site = by_name(Site.objects.all())
    owner_team = by_name(Team.objects.all(), required=False, error_messages={
        "invalid_choice": "No team named '%(value)s': add it on the teams page first."})
    rack = forms.CharField(required=False, help_text="Rack name within the site.")
    node_model = by_name(NodeModel.objects.all())
    resolved_fields = ("rack",)

    class Meta:
        model = Node
        fields = ["hostname", "serial", "asset_tag", "site", "rack", "position", "node_model", "partition",
                  "owner_team", "warranty_end", "state"]

    @classmethod
    def prefetch(cls, rows):
        """Also the racks the rows name, by (site, rack name), in one query."""
        known = super().prefetch(rows)
        names = {data["rack"] for _, data in rows if data.get("rack")}
        racks = Rack.objects.filter(site__in=known["site"].values(), name__in=names) if names else []
        known["racks"] = {(rack.site_id, rack.name): rack for rack in racks}
        for rack in known["racks"].values():
            rack.placed_nodes = []
        placed = Node.objects.filter(rack__in=known["racks"].values()).exclude(position=None)
        by_pk = {rack.pk: rack for rack in known["racks"].values()}
        for node in placed.select_related("node_model"):
            by_pk[node.rack_id].placed_nodes.append(node)
        return known

    @classmethod
    def check_rows(cls, valid):
        """Nodes of the file that take the same rack units as each other (each is checked against the
        nodes already in the rack by the model)."""
        problems, placed = [], {}
        for form in valid:
            node = form.instance
            if not (node.rack_id and node.position):
                continue
            for other, row in placed.get(node.rack_id, []):
                if other.position <= node.top_u and node.position <= other.top_u:
                    problems.append((form, "position", f"U{other.position}-U{other.top_u} is taken by "
                                                       f"{other.hostname} (row {row})."))
                    break
            else:
                placed.setdefault(node.rack_id, []).append((node, form.row_number))
        return problems

    @classmethod
    def warnings(cls, valid):
        """Sites and racks the file's nodes would put over their power, racks over their height."""
        return power.overcommitted(nodes=[form.instance for form in valid])

    def clean(self):
        cleaned = super().clean()
        name, site = cleaned.get("rack"), cleaned.get("site")
        cleaned["rack"] = None
        if name and site:
            if "racks" in self.known:
                rack = self.known["racks"].get((site.pk, name))
            else:
                rack = Rack.objects.filter(site=site, name=name).first()
            if rack is None:
                self.add_error("rack", f"No rack '{name}' in site {site}.")
            cleaned["rack"] = rack
        # The form's own rack field is text; put the resolved rack on the instance for model validation.
        self.instance.rack = cleaned["rack"]
        return cleaned


class GPUImportForm(LifecycleImportMixin, ImportForm):
    node = by_name(Node.objects.select_related("node_model"), field="hostname", required=False)
    gpu_model = by_name(GPUModel.objects.all())

    class Meta:
        model = GPU
        fields = ["serial", "uuid", "node", "slot", "gpu_model", "state"]

    @classmethod
    def prefetch(cls, rows):
        """Also the GPUs already in the named nodes, in one query (the model checks a node's free slots)."""
        known = super().prefetch(rows)
        by_pk = {node.pk: node for node in known["node"].values()}
        for node in by_pk.values():
            node.installed_gpu_ids = set()
        for node_id, pk in GPU.objects.filter(node__in=by_pk).values_list("node_id", "pk"):
            by_pk[node_id].installed_gpu_ids.add(pk)
        return known

    def clean_serial(self):
        serial = self.cleaned_data["serial"].strip()
        if not serial:
            raise ValidationError("Every imported GPU needs a serial: re-imports match on it.")
        return serial
