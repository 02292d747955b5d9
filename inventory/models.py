"""The fleet: hardware catalog, sites, racks, nodes, GPUs, fabrics, switches and storage.

Every model keeps a change history (django-simple-history); nodes and GPUs also keep a lifecycle
record (``StateTransition``) written by ``inventory.lifecycle``.
"""

from django.conf import settings
from django.contrib.contenttypes.fields import GenericForeignKey, GenericRelation
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone
from simple_history.models import HistoricalRecords

from portal.history import ChangeRecord
from portal.models import PortalModel


class LifecycleState(models.TextChoices):
    ORDERED = "ordered", "Ordered"
    DELIVERED = "delivered", "Delivered"
    BURN_IN = "burn_in", "Burn-in"
    IN_SERVICE = "in_service", "In service"
    DEGRADED = "degraded", "Degraded"
    IN_REPAIR = "in_repair", "In repair"
    RETIRED = "retired", "Retired"


# States whose hardware serves jobs (a degraded node still runs them): idle capacity means something only here.
SERVING_STATES = (LifecycleState.IN_SERVICE, LifecycleState.DEGRADED)


def positive(**kwargs):
    return {"validators": [MinValueValidator(0)], **kwargs}


def unique_when_set(model_name, field):
    """Unique, but several rows may leave the field blank (e.g. a serial not known yet)."""
    return models.UniqueConstraint(
        fields=[field], condition=~Q(**{field: ""}), name=f"{model_name}_unique_{field}",
        violation_error_message=f"Another {model_name} already has this {field.replace('_', ' ')}.",
    )


# --- Hardware catalog ------------------------------------------------------------------------------


class GPUModel(PortalModel):
    vendor = models.CharField(max_length=50)
    name = models.CharField(max_length=100, unique=True)
    form_factor = models.CharField(max_length=20, blank=True, help_text="SXM, PCIe, OAM, ...")
    memory_gb = models.PositiveIntegerField("memory (GB)")
    memory_bandwidth_tbs = models.DecimalField("memory bandwidth (TB/s)", max_digits=6, decimal_places=3, **positive())
    bf16_tflops = models.DecimalField("dense BF16 (TFLOP/s)", max_digits=8, decimal_places=1, **positive())
    fp8_tflops = models.DecimalField(
        "dense FP8 (TFLOP/s)", max_digits=8, decimal_places=1, null=True, blank=True,
        help_text="Empty where the GPU has no FP8 tensor cores.", **positive(),
    )
    tdp_w = models.PositiveIntegerField("TDP (W)")
    nvlink_gbs = models.PositiveIntegerField(
        "GPU-to-GPU bandwidth (GB/s)", default=0, help_text="NVLink / Infinity Fabric, bidirectional; 0 if none."
    )
    history = HistoricalRecords(bases=[ChangeRecord])

    class Meta:
        ordering = ["vendor", "name"]
        verbose_name = "GPU model"

    def __str__(self):
        return self.name


class NodeModel(PortalModel):
    vendor = models.CharField(max_length=50)
    name = models.CharField(max_length=100, unique=True)
    cpu_cores = models.PositiveIntegerField("CPU cores")
    ram_gb = models.PositiveIntegerField("RAM (GB)")
    gpu_slots = models.PositiveIntegerField("GPU slots")
    max_power_w = models.PositiveIntegerField("max power (W)")
    height_u = models.PositiveIntegerField("height (U)", default=1, validators=[MinValueValidator(1)])
    list_price = models.DecimalField(
        max_digits=12, decimal_places=2, null=True, blank=True, **positive(),
        help_text="Indicative price of one node with its GPUs, in the portal's currency. Plans price a node at "
                  "the last order's unit price when there is one, else at this.",
    )
    history = HistoricalRecords(bases=[ChangeRecord])

    class Meta:
        ordering = ["vendor", "name"]
        verbose_name = "node model"

    def __str__(self):
        return self.name


# --- Places --------------------------------------------------------------------------------------


class Site(PortalModel):
    name = models.CharField(max_length=100, unique=True)
    location = models.CharField(max_length=200, blank=True)
    power_capacity_kw = models.DecimalField("power capacity (kW)", max_digits=10, decimal_places=1, **positive())
    cooling_capacity_kw = models.DecimalField("cooling capacity (kW)", max_digits=10, decimal_places=1, **positive())
    pue = models.DecimalField(
        "PUE", max_digits=4, decimal_places=2, null=True, blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(5)],
        help_text="Power usage effectiveness (facility power / IT power). Empty: the portal's default.",
    )
    energy_price_per_kwh = models.DecimalField(
        "energy price per kWh", max_digits=8, decimal_places=4, null=True, blank=True, **positive(),
        help_text="Empty: the portal's default price.",
    )
    rack_cost_per_month = models.DecimalField(
        "space cost per rack and month", max_digits=10, decimal_places=2, null=True, blank=True, **positive(),
        help_text="Colocation or floor space for one rack. Empty: the portal's default.",
    )
    description = models.TextField(blank=True)
    history = HistoricalRecords(bases=[ChangeRecord])

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    # The figures the cost models use: the site's own, else the portal's defaults from the settings.
    @property
    def effective_pue(self):
        return float(self.pue) if self.pue is not None else settings.DEFAULT_PUE

    @property
    def effective_energy_price(self):
        return float(self.energy_price_per_kwh) if self.energy_price_per_kwh is not None else \
            settings.ENERGY_PRICE_PER_KWH

    @property
    def effective_rack_cost(self):
        return float(self.rack_cost_per_month) if self.rack_cost_per_month is not None else \
            settings.RACK_COST_PER_MONTH


class Rack(PortalModel):
    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="racks")
    name = models.CharField(max_length=100)
    height_u = models.PositiveIntegerField("height (U)", default=42, validators=[MinValueValidator(1)])
    power_budget_kw = models.DecimalField("power budget (kW)", max_digits=8, decimal_places=1, **positive())
    history = HistoricalRecords(bases=[ChangeRecord])

    class Meta:
        ordering = ["site__name", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["site", "name"], name="rack_unique_name_per_site",
                violation_error_message="This site already has a rack with this name.",
            )
        ]

    def __str__(self):
        return f"{self.site} / {self.name}"

    def clean(self):
        if self.pk and self.height_u:
            highest = max((n.top_u for n in self.nodes.select_related("node_model") if n.position), default=0)
            if highest > self.height_u:
                raise ValidationError({"height_u": f"Nodes in this rack reach U{highest}; the rack cannot be lower."})


# --- Compute -------------------------------------------------------------------------------------


class LifecycleModel(PortalModel):
    """A node or GPU: it has a lifecycle state changed only through ``inventory.lifecycle``."""

    state = models.CharField(max_length=20, choices=LifecycleState.choices, default=LifecycleState.DELIVERED,
                             db_index=True)
    transitions = GenericRelation("inventory.StateTransition")

    class Meta:
        abstract = True


class Node(LifecycleModel):
    hostname = models.CharField(max_length=100, unique=True)
    serial = models.CharField(max_length=100, blank=True)
    asset_tag = models.CharField(max_length=100, blank=True)
    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="nodes")
    rack = models.ForeignKey(Rack, on_delete=models.PROTECT, related_name="nodes", null=True, blank=True)
    position = models.PositiveIntegerField(
        "position (U)", null=True, blank=True, validators=[MinValueValidator(1)],
        help_text="Lowest rack unit the node occupies.",
    )
    node_model = models.ForeignKey(NodeModel, on_delete=models.PROTECT, related_name="nodes")
    partition = models.CharField("partition / pool", max_length=100, blank=True, db_index=True)
    # The column holds the team's name (``to_field``): what the figures group and filter by, as before teams.
    owner_team = models.ForeignKey(
        "inventory.Team", to_field="name", db_column="owner_team", null=True, blank=True, on_delete=models.PROTECT,
        related_name="owned_nodes",
    )
    warranty_end = models.DateField(null=True, blank=True)
    history = HistoricalRecords(bases=[ChangeRecord])

    class Meta:
        ordering = ["hostname"]
        constraints = [unique_when_set("node", "serial"), unique_when_set("node", "asset_tag")]

    display_lookups = ("hostname",)  # what __str__ reads: API lists build it from .values() (portal.api.rows)

    def __str__(self):
        return self.hostname

    @property
    def top_u(self):
        return self.position + self.node_model.height_u - 1 if self.position else 0

    @property
    def warranty_expired(self):
        return self.warranty_end is not None and self.warranty_end < timezone.localdate()

    def rack_neighbours(self):
        """The other nodes placed in this node's rack. A CSV import gives the rack ``placed_nodes`` (found for
        all its rows in one query) to spare a query per row."""
        placed = getattr(self.rack, "placed_nodes", None)
        if placed is not None:
            return [node for node in placed if node.pk != self.pk]
        return self.rack.nodes.exclude(pk=self.pk).exclude(position=None).select_related("node_model")

    def clean(self):
        errors = {}
        if self.rack_id and self.site_id and self.rack.site_id != self.site_id:
            errors["rack"] = f"Rack {self.rack} is not in site {self.site}."
        if self.position and not self.rack_id:
            errors["position"] = "A position needs a rack."
        elif self.position and self.rack_id and self.node_model_id and "rack" not in errors:
            if self.top_u > self.rack.height_u:
                errors["position"] = (
                    f"A {self.node_model.height_u}U node at U{self.position} reaches U{self.top_u}, "
                    f"above the rack's {self.rack.height_u}U."
                )
            else:
                for other in self.rack_neighbours():
                    if other.position <= self.top_u and self.position <= other.top_u:
                        errors["position"] = f"U{other.position}-U{other.top_u} is taken by {other.hostname}."
                        break
        if self.pk and self.node_model_id:
            installed = self.gpus.count()
            if installed > self.node_model.gpu_slots:
                errors["node_model"] = (
                    f"{self.node_model} has {self.node_model.gpu_slots} GPU slots; this node holds {installed} GPUs."
                )
        if errors:
            raise ValidationError(errors)


class GPU(LifecycleModel):
    node = models.ForeignKey(Node, on_delete=models.PROTECT, related_name="gpus", null=True, blank=True,
                             help_text="Empty for a spare GPU on the shelf.")
    slot = models.PositiveIntegerField(null=True, blank=True, help_text="Index in the node, from 0.")
    gpu_model = models.ForeignKey(GPUModel, on_delete=models.PROTECT, related_name="gpus")
    serial = models.CharField(max_length=100, blank=True)
    uuid = models.CharField("UUID", max_length=100, blank=True, help_text="As nvidia-smi reports it: GPU-…")
    history = HistoricalRecords(bases=[ChangeRecord])

    class Meta:
        ordering = ["node__hostname", "slot", "pk"]
        verbose_name = "GPU"
        constraints = [
            unique_when_set("gpu", "serial"),
            unique_when_set("gpu", "uuid"),
            models.UniqueConstraint(
                fields=["node", "slot"], name="gpu_unique_slot_per_node",
                violation_error_message="This slot of the node already holds a GPU.",
            ),
        ]

    display_lookups = ("node_id", "node__hostname", "slot", "serial", "uuid")  # what __str__ reads (portal.api.rows)

    def __str__(self):
        where = f"{self.node.hostname}/gpu{self.slot}" if self.node_id else "spare"
        return f"{where} ({self.serial or self.uuid or self.pk})"

    def clean(self):
        errors = {}
        if self.node_id:
            slots = self.node.node_model.gpu_slots
            if self.slot is None:
                errors["slot"] = "A GPU in a node needs a slot."
            elif self.slot >= slots:
                errors["slot"] = f"{self.node.node_model} has slots 0-{slots - 1}."
            installed = getattr(self.node, "installed_gpu_ids", None)  # a CSV import's, for all its rows
            others = len(installed - {self.pk}) if installed is not None else self.node.gpus.exclude(pk=self.pk).count()
            if others >= slots:
                errors["node"] = f"{self.node} already holds {others} GPUs, all of its {slots} slots."
        elif self.slot is not None:
            errors["slot"] = "A spare GPU (no node) has no slot."
        if errors:
            raise ValidationError(errors)


class StateTransition(models.Model):
    """One lifecycle change of a node or GPU: who, when, from, to, why."""

    content_type = models.ForeignKey(ContentType, on_delete=models.CASCADE)
    object_id = models.PositiveBigIntegerField()
    obj = GenericForeignKey("content_type", "object_id")
    from_state = models.CharField(max_length=20, choices=LifecycleState.choices, blank=True)
    to_state = models.CharField(max_length=20, choices=LifecycleState.choices)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    username = models.CharField(max_length=150, blank=True, help_text="Kept as text: survives user deletion.")
    reason = models.CharField(max_length=500, blank=True)
    created = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created", "-pk"]
        indexes = [models.Index(fields=["content_type", "object_id"])]

    def __str__(self):
        return f"{self.from_state or '—'} → {self.to_state}"


# --- Network and storage -------------------------------------------------------------------------


class Fabric(PortalModel):
    class Kind(models.TextChoices):
        INFINIBAND = "infiniband", "InfiniBand"
        ROCE = "roce", "RoCE"
        ETHERNET = "ethernet", "Ethernet"

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    link_speed_gbps = models.PositiveIntegerField("link speed (Gb/s)")
    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="fabrics", null=True, blank=True)
    description = models.TextField(blank=True)
    history = HistoricalRecords(bases=[ChangeRecord])

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Switch(PortalModel):
    name = models.CharField(max_length=100, unique=True)
    fabric = models.ForeignKey(Fabric, on_delete=models.PROTECT, related_name="switches")
    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="switches")
    rack = models.ForeignKey(Rack, on_delete=models.PROTECT, related_name="switches", null=True, blank=True)
    model = models.CharField(max_length=100, blank=True, help_text="e.g. NVIDIA QM9700")
    serial = models.CharField(max_length=100, blank=True)
    ports = models.PositiveIntegerField()
    uplinks = models.PositiveIntegerField(default=0)
    oversubscription_ratio = models.DecimalField(
        max_digits=5, decimal_places=2, default=1, validators=[MinValueValidator(0)],
        help_text="Downlink to uplink bandwidth, e.g. 1.00 for a non-blocking fat tree.",
    )
    history = HistoricalRecords(bases=[ChangeRecord])

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "switches"
        constraints = [unique_when_set("switch", "serial")]

    def __str__(self):
        return self.name

    def clean(self):
        errors = {}
        if self.rack_id and self.site_id and self.rack.site_id != self.site_id:
            errors["rack"] = f"Rack {self.rack} is not in site {self.site}."
        if self.ports is not None and self.uplinks is not None and self.uplinks > self.ports:
            errors["uplinks"] = f"A {self.ports}-port switch cannot have {self.uplinks} uplinks."
        if errors:
            raise ValidationError(errors)


class FabricAttachment(PortalModel):
    """A node's connection to a fabric: how many ports at what speed."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="fabric_attachments")
    fabric = models.ForeignKey(Fabric, on_delete=models.PROTECT, related_name="attachments")
    switch = models.ForeignKey(Switch, on_delete=models.SET_NULL, related_name="attachments", null=True, blank=True)
    ports = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    speed_gbps = models.PositiveIntegerField("speed per port (Gb/s)")
    history = HistoricalRecords(bases=[ChangeRecord])

    class Meta:
        ordering = ["node__hostname", "fabric__name"]
        constraints = [
            models.UniqueConstraint(
                fields=["node", "fabric"], name="attachment_unique_node_fabric",
                violation_error_message="This node is already attached to this fabric.",
            )
        ]

    def __str__(self):
        return f"{self.node} ↔ {self.fabric}"

    @property
    def bandwidth_gbps(self):
        return self.ports * self.speed_gbps

    def clean(self):
        if self.switch_id and self.fabric_id and self.switch.fabric_id != self.fabric_id:
            raise ValidationError({"switch": f"Switch {self.switch} belongs to fabric {self.switch.fabric}."})


class StorageSystem(PortalModel):
    class Kind(models.TextChoices):
        PARALLEL_FS = "parallel_fs", "Parallel file system"
        NFS = "nfs", "NFS"
        OBJECT = "object", "Object store"

    class Tier(models.TextChoices):
        HOT = "hot", "Hot"
        WARM = "warm", "Warm"
        ARCHIVE = "archive", "Archive"

    name = models.CharField(max_length=100, unique=True)
    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="storage_systems")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    tier = models.CharField(max_length=20, choices=Tier.choices)
    capacity_tb = models.DecimalField("capacity (TB)", max_digits=10, decimal_places=1, **positive())
    used_tb = models.DecimalField("used (TB)", max_digits=10, decimal_places=1, default=0, **positive())
    read_gbs = models.DecimalField("read (GB/s)", max_digits=8, decimal_places=1, **positive())
    write_gbs = models.DecimalField("write (GB/s)", max_digits=8, decimal_places=1, **positive())
    history = HistoricalRecords(bases=[ChangeRecord])

    class Meta:
        ordering = ["name"]
        verbose_name = "storage system"

    def __str__(self):
        return self.name

    @property
    def used_percent(self):
        return round(100 * self.used_tb / self.capacity_tb, 1) if self.capacity_tb else None

    def clean(self):
        if self.used_tb is not None and self.capacity_tb is not None and self.used_tb > self.capacity_tb:
            raise ValidationError({"used_tb": f"Used ({self.used_tb} TB) exceeds capacity ({self.capacity_tb} TB)."})

# Telemetry's models live in their own package; Django finds an app's models by importing <app>.models.
from .allocations.models import (  # noqa: E402,F401
    AllocationAlert,
    AllocationApproval,
    AllocationRequest,
    SlurmApplied,
    SlurmSync,
    SlurmSyncChange,
    TeamAllocation,
)
from .goodput.models import Interruption  # noqa: E402,F401
from .partitionmoves.models import PartitionMove  # noqa: E402,F401
from .statements.models import Adjustment, ClosedMonth, Rate, RateCard, Statement, StatementLine  # noqa: E402,F401
from .teams.models import Team, TeamMember  # noqa: E402,F401
from .telemetry.models import (  # noqa: E402,F401
    AllocationDaily,
    AllocationExcess,
    AllocationHourly,
    GPUDaily,
    GPUHourly,
    MigInstance,
    NodeDaily,
    NodeHourly,
    PullReport,
    SlurmJob,
    SlurmJobNode,
    TelemetrySample,
    TelemetrySource,
    UnknownSeries,
    UsageDaily,
    UsageHourly,
    XidEvent,
    XidReading,
)
