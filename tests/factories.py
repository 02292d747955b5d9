"""Small factories for tests.

Inventory: ``make_<model>(**overrides)`` saves one object with unique, valid defaults (and creates what it
needs: a node gets a site and a node model unless given), and ``bulk_make(model_name, n)`` inserts ``n`` rows
in a few queries (no history, no ``clean()``) for tests that need volume, e.g. constant query counts on list
pages and API endpoints.

Planning, support and telemetry: factory_boy factories, ``<Model>Factory(**overrides)`` for one saved object,
``<Model>Factory.create_batch(n)`` for many; a factory creates the objects its model points at unless given.
"""

import itertools
from datetime import date, timedelta
from decimal import Decimal

import factory
from django.contrib.auth.models import User
from django.utils import timezone
from factory.django import DjangoModelFactory

from inventory.goodput.models import Interruption
from inventory.models import (
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
from inventory.telemetry.models import GPUHourly, SlurmJob, TelemetrySource, UnknownSeries
from planning.models import (
    CapacityPlan,
    Contract,
    ContractDocument,
    Delivery,
    DeliveryItem,
    OrderLine,
    PlanEvent,
    PlanItem,
    PlanWorkload,
    PurchaseOrder,
    Recommendation,
    RenewalAlert,
    SLATerm,
    Webhook,
    WebhookAttempt,
    WebhookDelivery,
)
from support.models import Ticket, TicketAttachment, TicketComment

_counter = itertools.count(1)


def _n():
    return next(_counter)


# --- Unsaved objects: shared by make_* (one, saved with history) and bulk_make (many) ----------------


def build_site(**kw):
    n = _n()
    return Site(**{"name": f"site-{n}", "location": f"Hall {n}", "power_capacity_kw": Decimal("2000.0"),
                   "cooling_capacity_kw": Decimal("2200.0"), **kw})


def build_rack(site, **kw):
    return Rack(**{"site": site, "name": f"rack-{_n()}", "height_u": 42, "power_budget_kw": Decimal("40.0"), **kw})


def build_gpu_model(**kw):
    n = _n()
    return GPUModel(**{"vendor": "NVIDIA", "name": f"GPU model {n}", "form_factor": "SXM", "memory_gb": 80,
                       "memory_bandwidth_tbs": Decimal("3.35"), "bf16_tflops": Decimal("989.0"),
                       "fp8_tflops": Decimal("1979.0"), "tdp_w": 700, "nvlink_gbs": 900, **kw})


def build_node_model(**kw):
    return NodeModel(**{"vendor": "Supermicro", "name": f"Node model {_n()}", "cpu_cores": 112, "ram_gb": 2048,
                        "gpu_slots": 8, "max_power_w": 10200, "height_u": 8, **kw})


def build_node(site, node_model, **kw):
    """``owner_team`` may be a team's name (its team is made when missing; "" for none)."""
    n = _n()
    if isinstance(kw.get("owner_team"), str):
        kw["owner_team"] = Team.objects.get_or_create(name=kw["owner_team"])[0] if kw["owner_team"] else None
    return Node(**{"hostname": f"gpu-{n:05d}", "serial": f"NODE-SN-{n}", "site": site, "node_model": node_model,
                   **kw})


def build_gpu(gpu_model, node=None, slot=None, **kw):
    n = _n()
    return GPU(**{"gpu_model": gpu_model, "node": node, "slot": slot, "serial": f"GPU-SN-{n}",
                  "uuid": f"GPU-{n:08d}-0000-0000-0000-000000000000", **kw})


def build_fabric(**kw):
    return Fabric(**{"name": f"fabric-{_n()}", "kind": Fabric.Kind.INFINIBAND, "link_speed_gbps": 400, **kw})


def build_switch(fabric, site, **kw):
    return Switch(**{"name": f"switch-{_n()}", "fabric": fabric, "site": site, "model": "QM9700", "ports": 64,
                     "uplinks": 32, **kw})


def build_attachment(node, fabric, **kw):
    return FabricAttachment(**{"node": node, "fabric": fabric, "ports": 8, "speed_gbps": 400, **kw})


def build_storage(site, **kw):
    return StorageSystem(**{"name": f"storage-{_n()}", "site": site, "kind": StorageSystem.Kind.PARALLEL_FS,
                            "tier": StorageSystem.Tier.HOT, "capacity_tb": Decimal("1000.0"),
                            "used_tb": Decimal("250.0"), "read_gbs": Decimal("200.0"),
                            "write_gbs": Decimal("150.0"), **kw})


# --- One saved object --------------------------------------------------------------------------------


def _save(obj):
    obj.full_clean()
    obj.save()
    return obj


def make_site(**kw):
    return _save(build_site(**kw))


def make_rack(site=None, **kw):
    return _save(build_rack(site or make_site(), **kw))


def make_gpu_model(**kw):
    return _save(build_gpu_model(**kw))


def make_node_model(**kw):
    return _save(build_node_model(**kw))


def make_node(site=None, node_model=None, **kw):
    """A node; ``rack`` defaults to none. With a rack and no site, the node goes to the rack's site."""
    rack = kw.get("rack")
    site = site or (rack.site if rack else make_site())
    return _save(build_node(site, node_model or make_node_model(), **kw))


def make_gpu(node=None, slot=None, gpu_model=None, **kw):
    """A GPU: in ``node`` (first free slot unless ``slot`` is given) or, without a node, a spare."""
    if node is not None and slot is None:
        taken = set(node.gpus.values_list("slot", flat=True))
        slot = next(i for i in itertools.count() if i not in taken)
    return _save(build_gpu(gpu_model or make_gpu_model(), node=node, slot=slot, **kw))


def make_fabric(**kw):
    return _save(build_fabric(**kw))


def make_switch(fabric=None, site=None, **kw):
    return _save(build_switch(fabric or make_fabric(), site or make_site(), **kw))


def make_attachment(node=None, fabric=None, **kw):
    return _save(build_attachment(node or make_node(), fabric or make_fabric(), **kw))


def make_storage(site=None, **kw):
    return _save(build_storage(site or make_site(), **kw))


# --- Many rows ---------------------------------------------------------------------------------------


def _bulk_nodes(n):
    site, node_model = make_site(), make_node_model()
    rack = make_rack(site)
    return Node.objects.bulk_create(build_node(site, node_model, rack=rack if i % 2 else None) for i in range(n))


def _bulk_racks(n):
    site = make_site()
    return Rack.objects.bulk_create(build_rack(site) for _ in range(n))


def _bulk_gpus(n):
    # Half in nodes (one per node, slot 0), half spares: both ways of showing a GPU are exercised.
    gpu_model = make_gpu_model()
    nodes = _bulk_nodes((n + 1) // 2)
    gpus = [build_gpu(gpu_model, node=node, slot=0) for node in nodes]
    gpus += [build_gpu(gpu_model) for _ in range(n - len(gpus))]
    return GPU.objects.bulk_create(gpus)


def _bulk_switches(n):
    fabric, site = make_fabric(), make_site()
    rack = make_rack(site)
    return Switch.objects.bulk_create(build_switch(fabric, site, rack=rack) for _ in range(n))


def _bulk_attachments(n):
    fabric, nodes = make_fabric(), _bulk_nodes(n)
    switch = make_switch(fabric=fabric, site=nodes[0].site)
    return FabricAttachment.objects.bulk_create(build_attachment(node, fabric, switch=switch) for node in nodes)


def _bulk_fabrics(n):
    site = make_site()
    return Fabric.objects.bulk_create(build_fabric(site=site) for _ in range(n))


def _bulk_storage(n):
    site = make_site()
    return StorageSystem.objects.bulk_create(build_storage(site) for _ in range(n))


BULK = {
    "site": lambda n: Site.objects.bulk_create(build_site() for _ in range(n)),
    "rack": _bulk_racks,
    "gpumodel": lambda n: GPUModel.objects.bulk_create(build_gpu_model() for _ in range(n)),
    "nodemodel": lambda n: NodeModel.objects.bulk_create(build_node_model() for _ in range(n)),
    "node": _bulk_nodes,
    "gpu": _bulk_gpus,
    "fabric": _bulk_fabrics,
    "switch": _bulk_switches,
    "fabricattachment": _bulk_attachments,
    "storagesystem": _bulk_storage,
}


def bulk_make(model_name, n):
    """Insert ``n`` rows of the model named ``model_name`` (``Model._meta.model_name``: ``node``,
    ``gpumodel``, ...) plus the few rows they point at; returns the new rows."""
    return BULK[model_name](n)


# --- factory_boy factories ---------------------------------------------------------------------------
# Inventory objects they point at come from the make_* functions above (one definition of valid defaults).


class UserFactory(DjangoModelFactory):
    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user-{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.org")


# Telemetry


class TelemetrySourceFactory(DjangoModelFactory):
    class Meta:
        model = TelemetrySource

    name = factory.Sequence(lambda n: f"source-{n}")
    kind = TelemetrySource.Kind.PROMETHEUS
    url = factory.LazyAttribute(lambda source: f"http://{source.name}:9090")


class UnknownSeriesFactory(DjangoModelFactory):
    class Meta:
        model = UnknownSeries

    source = factory.SubFactory(TelemetrySourceFactory)
    uuid = factory.Sequence(lambda n: f"GPU-unknown-{n}")
    key = factory.SelfAttribute("uuid")


class SlurmJobFactory(DjangoModelFactory):
    class Meta:
        model = SlurmJob

    source = factory.SubFactory(TelemetrySourceFactory, kind=TelemetrySource.Kind.SLURM)
    job_id = factory.Sequence(str)
    account = "vision"
    partition = "train"
    state = "COMPLETED"
    submit_time = factory.LazyFunction(lambda: timezone.now() - timedelta(hours=3))
    start_time = factory.LazyAttribute(lambda job: job.submit_time + timedelta(hours=1))
    end_time = factory.LazyAttribute(lambda job: job.start_time + timedelta(hours=1))
    node_count = 1
    gpus = 8


class InterruptionFactory(DjangoModelFactory):
    """A job its node failed under (NODE_FAIL), with the portal's estimate of the work lost."""

    class Meta:
        model = Interruption

    job = factory.SubFactory(SlurmJobFactory, state="NODE_FAIL", gpus=8)
    state = "NODE_FAIL"
    started_at = factory.SelfAttribute("job.start_time")
    ended_at = factory.SelfAttribute("job.end_time")
    gpus = 8
    account = "vision"
    partition = "train"
    cause = Interruption.Cause.INFRASTRUCTURE
    reason = "node_fail"
    lost_run_gpu_hours = 4.0
    lost_gpu_hours = 4.0


class GPUHourlyFactory(DjangoModelFactory):
    class Meta:
        model = GPUHourly

    gpu = factory.LazyFunction(make_gpu)
    hour = factory.Sequence(lambda n: timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=n))
    util_mean = 50.0
    samples = 60


# Contracts


class ContractFactory(DjangoModelFactory):
    class Meta:
        model = Contract

    kind = Contract.Kind.SUPPORT
    vendor = "Acme"
    reference = factory.Sequence(lambda n: f"S-{n}")
    start = date(2026, 1, 1)
    end = date(2027, 1, 1)


class SLATermFactory(DjangoModelFactory):
    class Meta:
        model = SLATerm

    contract = factory.SubFactory(ContractFactory)
    priority = SLATerm.Priority.P1
    response_hours = Decimal("4.0")
    resolution_hours = Decimal("24.0")


class ContractDocumentFactory(DjangoModelFactory):
    """Writes its file under MEDIA_ROOT: point that at a temporary folder (the ``settings`` fixture)."""

    class Meta:
        model = ContractDocument

    contract = factory.SubFactory(ContractFactory)
    file = factory.django.FileField(filename="contract.pdf", data=b"%PDF-1.4 contract")
    name = "contract.pdf"
    content_type = "application/pdf"
    size = 17


class RenewalAlertFactory(DjangoModelFactory):
    class Meta:
        model = RenewalAlert

    contract = factory.SubFactory(ContractFactory)
    notice_deadline = factory.LazyAttribute(lambda alert: alert.contract.end - timedelta(days=30))


# Procurement


class PurchaseOrderFactory(DjangoModelFactory):
    class Meta:
        model = PurchaseOrder

    vendor = "Acme"
    reference = factory.Sequence(lambda n: f"PO-{n}")
    site = factory.LazyFunction(make_site)


class OrderLineFactory(DjangoModelFactory):
    class Meta:
        model = OrderLine

    order = factory.SubFactory(PurchaseOrderFactory)
    description = "400G switch"
    quantity = 2
    unit_price = Decimal("40000.00")


class DeliveryFactory(DjangoModelFactory):
    class Meta:
        model = Delivery

    order = factory.SubFactory(PurchaseOrderFactory)


class DeliveryItemFactory(DjangoModelFactory):
    class Meta:
        model = DeliveryItem

    delivery = factory.SubFactory(DeliveryFactory)
    line = factory.SubFactory(OrderLineFactory, order=factory.SelfAttribute("..delivery.order"))
    serial = factory.Sequence(lambda n: f"DELIVERED-SN-{n}")


class WebhookFactory(DjangoModelFactory):
    class Meta:
        model = Webhook

    name = factory.Sequence(lambda n: f"hook-{n}")
    url = "https://erp.example.org/hook"
    secret = "s3cret"
    events = factory.LazyFunction(lambda: [Webhook.Event.DELIVERY_RECEIVED])


class WebhookDeliveryFactory(DjangoModelFactory):
    class Meta:
        model = WebhookDelivery

    webhook = factory.SubFactory(WebhookFactory)
    event = Webhook.Event.DELIVERY_RECEIVED
    payload = factory.LazyFunction(lambda: {"order": {"reference": "PO-1"}})


class WebhookAttemptFactory(DjangoModelFactory):
    class Meta:
        model = WebhookAttempt

    delivery = factory.SubFactory(WebhookDeliveryFactory)
    status_code = 200
    duration_ms = 12


# Capacity plans and recommendations


class CapacityPlanFactory(DjangoModelFactory):
    class Meta:
        model = CapacityPlan

    name = factory.Sequence(lambda n: f"plan {n}")


class PlanWorkloadFactory(DjangoModelFactory):
    class Meta:
        model = PlanWorkload

    plan = factory.SubFactory(CapacityPlanFactory)
    name = "70B pretraining"
    start = factory.LazyAttribute(lambda workload: workload.plan.first_month)
    gpu_model = factory.LazyFunction(make_gpu_model)
    inputs = factory.LazyFunction(lambda: {"params_billion": 70, "tokens_billion": 2000, "num_gpus": 512})


class PlanItemFactory(DjangoModelFactory):
    class Meta:
        model = PlanItem

    plan = factory.SubFactory(CapacityPlanFactory)
    description = "400G switches"
    quantity = 2
    unit_cost = Decimal("40000.00")


class PlanEventFactory(DjangoModelFactory):
    class Meta:
        model = PlanEvent

    plan = factory.SubFactory(CapacityPlanFactory)
    username = "max"
    from_status = CapacityPlan.Status.DRAFT
    to_status = CapacityPlan.Status.SUBMITTED


class RecommendationFactory(DjangoModelFactory):
    class Meta:
        model = Recommendation

    kind = Recommendation.Kind.CAPACITY
    partition = factory.Sequence(lambda n: f"p{n}")
    key = factory.LazyAttribute(lambda rec: f"{rec.kind}:partition={rec.partition}")
    title = factory.LazyAttribute(lambda rec: f"Partition {rec.partition} is capacity-bound")
    summary = "Busy."
    action = "Add nodes."


# Teams


class TeamFactory(DjangoModelFactory):
    """A team; one of the name given when it exists (a node's ``owner_team`` made it)."""

    class Meta:
        model = Team
        django_get_or_create = ("name",)
        skip_postgeneration_save = True  # members.set() saves what it changes

    name = factory.Sequence(lambda n: f"team-{n}")

    @factory.post_generation
    def members(team, create, members, **kwargs):
        if create and members:
            team.members.set(members)


# Support


class TicketFactory(DjangoModelFactory):
    """A ticket opened through the workflow (SLA due times set); no mail unless ``notify=True``."""

    class Meta:
        model = Ticket

    title = factory.Sequence(lambda n: f"ticket {n}")
    description = "It broke."

    @classmethod
    def _create(cls, model_class, *args, notify=False, **kwargs):
        from support import workflow

        ticket = model_class(*args, **kwargs)
        return workflow.open_ticket(ticket, ticket.requester, notify=notify)


class TicketCommentFactory(DjangoModelFactory):
    class Meta:
        model = TicketComment

    ticket = factory.SubFactory(TicketFactory)
    author_name = "max"
    body = "Looking into it."


class TicketAttachmentFactory(DjangoModelFactory):
    """Writes its file under MEDIA_ROOT: point that at a temporary folder (the ``settings`` fixture)."""

    class Meta:
        model = TicketAttachment

    ticket = factory.SubFactory(TicketFactory)
    file = factory.django.FileField(filename="dmesg.txt", data=b"XID 79")
    name = "dmesg.txt"
    content_type = "text/plain"
    size = 6


def make_team(name=None, members=()):
    return TeamFactory(**({"name": name} if name else {}), members=members)


def make_ticket(requester=None, notify=False, **kw):
    """A ticket opened through the workflow (SLA due times set); no mail unless ``notify``."""
    return TicketFactory(requester=requester, notify=notify, **kw)


# --- Planning -----------------------------------------------------------------------------------------


def make_capacity_recommendation(start):
    """A capacity-bound finding for partition train-h200, written as the daily analysis writes it: 32 GPUs at
    91 % against an 80 % target and 20 GPUs waiting, so 4 nodes of 8 GPUs at the node model's list price."""
    from datetime import timedelta

    from planning.models import Recommendation
    from planning.recommendations import rules, store

    node_model = make_node_model(name="HGX H200 8-GPU", list_price=Decimal("380000.00"))
    site = make_site(name="zrh-1")
    hours = [start + timedelta(hours=h) for h in range(48)]
    stats = rules.PartitionStats(
        partition="train-h200", gpus=32, gpu_hours=32 * 168.0, util_mean=91.0, jobs_started=40, wait_p50_hours=4.5,
        wait_p95_hours=11.0, gpus_waiting=20.0, site_id=site.pk, site_name=site.name, node_model_id=node_model.pk,
        node_model_name=node_model.name, node_price=node_model.list_price,
        series={"x": [h.isoformat() for h in hours], "util": [90 + h % 5 for h in range(48)]},
    )
    store.write([rules.capacity_bound(stats)], start + timedelta(days=7))
    return Recommendation.objects.get()
