"""Small factories for tests: ``make_<model>(**overrides)`` saves one object with unique, valid
defaults (and creates what it needs: a node gets a site and a node model unless given), and
``bulk_make(model_name, n)`` inserts ``n`` rows in a few queries (no history, no ``clean()``) for
tests that need volume, e.g. constant query counts on list pages and API endpoints.
"""

import itertools
from decimal import Decimal

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
)

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
    n = _n()
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


# --- Support ----------------------------------------------------------------------------------------


def make_team(name=None, members=()):
    from support.models import Team

    team = Team.objects.create(name=name or f"team-{_n()}")
    team.members.set(members)
    return team


def make_ticket(requester=None, notify=False, **kw):
    """A ticket opened through the workflow (SLA due times set); no mail unless ``notify``."""
    from support import workflow
    from support.models import Ticket

    ticket = Ticket(**{"title": f"ticket {_n()}", "description": "It broke.", "requester": requester, **kw})
    return workflow.open_ticket(ticket, requester, notify=notify)


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
