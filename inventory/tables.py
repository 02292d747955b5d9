"""Tables for the list pages (django-tables2): sortable columns, CSV export of the filtered rows."""

import django_tables2 as tables
from django.utils import timezone
from django.utils.functional import cached_property

from portal.tables import ColumnChoice, PortalTable, RelatedColumn, SelectColumn, cell_html

from .lifecycle import time_in_state
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
)
from .teams.models import team_url


class StateColumn(tables.Column):
    """The lifecycle state as a coloured badge; exported as the API value."""

    def render(self, record, value):
        # value: the state's label (django-tables2 shows a choices field by its get_FOO_display())
        return cell_html('<span class="badge state-{}">{}</span>', record.state, value)

    def value(self, record, value):
        return record.state


class GPUModelTable(ColumnChoice, tables.Table):
    name = tables.Column(linkify=True)
    gpu_count = tables.Column("GPUs")

    required_columns = ("name",)
    # Fits 1280 px (the headers are long); the GPU-to-GPU bandwidth is a tick away (Columns) and in the exports.
    default_columns = ("name", "vendor", "form_factor", "memory_gb", "memory_bandwidth_tbs", "bf16_tflops",
                       "fp8_tflops", "tdp_w", "gpu_count")

    class Meta:
        model = GPUModel
        fields = ("name", "vendor", "form_factor", "memory_gb", "memory_bandwidth_tbs", "bf16_tflops", "fp8_tflops",
                  "tdp_w", "nvlink_gbs", "gpu_count")


class NodeModelTable(tables.Table):
    name = tables.Column(linkify=True)
    node_count = tables.Column("Nodes")

    class Meta:
        model = NodeModel
        fields = ("name", "vendor", "cpu_cores", "ram_gb", "gpu_slots", "max_power_w", "height_u", "node_count")


class SiteTable(tables.Table):
    name = tables.Column(linkify=True)
    rack_count = tables.Column("Racks")
    node_count = tables.Column("Nodes")
    # Not on the page but in the files, so that an exported list imports back whole (the import takes them).
    pue = tables.Column(visible=False)
    energy_price_per_kwh = tables.Column(visible=False)
    rack_cost_per_month = tables.Column(visible=False)
    description = tables.Column(visible=False)

    class Meta:
        model = Site
        fields = ("name", "location", "power_capacity_kw", "cooling_capacity_kw", "rack_count", "node_count",
                  "pue", "energy_price_per_kwh", "rack_cost_per_month", "description")


class RackTable(tables.Table):
    name = tables.Column(linkify=True)
    site = tables.Column(linkify=True)
    node_count = tables.Column("Nodes")

    class Meta:
        model = Rack
        fields = ("name", "site", "height_u", "power_budget_kw", "node_count")


class TeamColumn(tables.Column):
    """A team by its name, the foreign key's own value (no team built per row), linked to the team's page."""

    def __init__(self, accessor="owner_team_id", verbose_name="Owner team", **kwargs):
        super().__init__(accessor=accessor, verbose_name=verbose_name, linkify=lambda value: team_url(value),
                         **kwargs)


def days_in_state(since, now=None):
    """Days since ``since`` to the hundredth (a file's "In state for (days)"); None without a time."""
    if since is None:
        return None
    return round(max(0.0, ((now or timezone.now()) - since).total_seconds()) / 86400, 2)


class TimeInStateColumn(tables.Column):
    """How long the object has been in its state ("23 days"), from the ``state_since`` annotation
    (``lifecycle.state_since``); exported as a number of days, the unit in the header. Longest in state first when
    sorted descending."""

    export_header = "In state for (days)"

    def __init__(self, **kwargs):
        super().__init__(accessor="state_since", verbose_name="In state for", **kwargs)

    def render(self, record, value):
        return cell_html('<span title="since {}">{}</span>', value.strftime("%Y-%m-%d %H:%M"), time_in_state(value))

    def value(self, record, value):
        return days_in_state(value)

    def order(self, queryset, is_descending):
        # Longest in state = earliest since: "descending" reads as the longest first.
        return queryset.order_by("state_since" if is_descending else "-state_since"), True


class NodeTable(ColumnChoice, PortalTable):
    select = SelectColumn(label=lambda record: record.hostname)
    hostname = tables.Column(linkify=True)
    state = StateColumn()
    in_state = TimeInStateColumn()
    # Names joined in (``querysets.node_rows``), linked by the ids: no related objects to build per row.
    site = RelatedColumn(Site, "site_id", accessor="site_name", verbose_name="Site", order_by=("site",))
    rack = RelatedColumn(Rack, "rack_id", accessor="rack_name", verbose_name="Rack", order_by=("rack__name",))
    node_model = RelatedColumn(NodeModel, "node_model_id", accessor="node_model_name", verbose_name="Node model",
                               order_by=("node_model",))
    gpu_count = tables.Column("GPUs")
    owner_team = TeamColumn()
    warranty_end = tables.Column()

    required_columns = ("select", "hostname")
    # What fits 1280 px; position, serial and asset tag are a tick away (Columns) and always in the exports.
    default_columns = ("select", "hostname", "state", "in_state", "site", "rack", "node_model", "gpu_count",
                       "partition", "owner_team", "warranty_end")

    class Meta:
        model = Node
        fields = ("select", "hostname", "state", "in_state", "site", "rack", "position", "node_model", "gpu_count",
                  "partition", "owner_team", "warranty_end", "serial", "asset_tag")

    @cached_property
    def today(self):
        return timezone.localdate()  # once per page, not per row

    def render_warranty_end(self, value):
        if value < self.today:  # as Node.warranty_expired
            return cell_html('<span class="expired" title="Warranty expired">{}</span>', value.isoformat())
        return value.isoformat()

    def value_warranty_end(self, value):
        return value.isoformat()  # the date a file imports back; "expired" follows from it


class GPUTable(PortalTable):
    select = SelectColumn(label=lambda record: GPUTable.render_gpu(None, record))
    gpu = tables.Column("GPU", accessor="pk", linkify=True, order_by=("node__hostname", "slot"))
    state = StateColumn()
    in_state = TimeInStateColumn()
    # Names joined in (``querysets.gpu_rows``), links made from the ids, as in NodeTable.
    node = RelatedColumn(Node, "node_id", accessor="node_hostname", verbose_name="Node", order_by=("node",))
    gpu_model = RelatedColumn(GPUModel, "gpu_model_id", accessor="gpu_model_name", verbose_name="GPU model",
                              order_by=("gpu_model",))

    class Meta:
        model = GPU
        fields = ("select", "gpu", "state", "in_state", "node", "slot", "gpu_model", "serial", "uuid")

    def render_gpu(self, record):
        return f"{record.node_hostname}/gpu{record.slot}" if record.node_id else f"spare #{record.pk}"

    def value_gpu(self, record):
        return self.render_gpu(record)


class FabricTable(tables.Table):
    name = tables.Column(linkify=True)
    site = tables.Column(linkify=True)
    switch_count = tables.Column("Switches")
    node_count = tables.Column("Nodes attached")

    class Meta:
        model = Fabric
        fields = ("name", "kind", "link_speed_gbps", "site", "switch_count", "node_count")


class SwitchTable(tables.Table):
    name = tables.Column(linkify=True)
    fabric = tables.Column(linkify=True)
    site = tables.Column(linkify=True)
    rack = tables.Column(accessor="rack__name", verbose_name="Rack")

    class Meta:
        model = Switch
        fields = ("name", "fabric", "site", "rack", "model", "ports", "uplinks", "oversubscription_ratio", "serial")


class FabricAttachmentTable(tables.Table):
    attachment = tables.Column("Attachment", accessor="pk", linkify=True, orderable=False)
    node = tables.Column(linkify=True)
    fabric = tables.Column(linkify=True)
    switch = tables.Column(linkify=True)
    bandwidth = tables.Column("Bandwidth (Gb/s)", accessor="bandwidth_gbps", orderable=False)

    class Meta:
        model = FabricAttachment
        fields = ("attachment", "node", "fabric", "switch", "ports", "speed_gbps", "bandwidth")

    def render_attachment(self, record):
        return f"#{record.pk}"


class StorageSystemTable(tables.Table):
    name = tables.Column(linkify=True)
    site = tables.Column(linkify=True)
    used_percent = tables.Column("Used %", orderable=False)

    class Meta:
        model = StorageSystem
        fields = ("name", "site", "kind", "tier", "capacity_tb", "used_tb", "used_percent", "read_gbs", "write_gbs")
