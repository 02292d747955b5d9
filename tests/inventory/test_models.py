"""Inventory model rules: uniqueness, rack placement, GPU slots, storage, the catalog and change history."""

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from inventory.catalog import GPU_MODELS, NODE_MODELS
from inventory.models import GPU, GPUModel, Node, NodeModel, Site, StorageSystem
from tests.factories import (
    build_gpu,
    build_node,
    make_attachment,
    make_fabric,
    make_gpu,
    make_gpu_model,
    make_node,
    make_node_model,
    make_rack,
    make_site,
    make_storage,
    make_switch,
    make_team,
)

pytestmark = pytest.mark.django_db


def errors_of(obj):
    with pytest.raises(ValidationError) as info:
        obj.full_clean()
    return info.value.message_dict


def assert_db_refuses(obj):
    with pytest.raises(IntegrityError), transaction.atomic():
        obj.save()


# --- Uniqueness ----------------------------------------------------------------------------------


def test_hostname_is_unique():
    node = make_node(hostname="gpu-a-001")
    twin = build_node(node.site, node.node_model, hostname="gpu-a-001", serial="")
    assert "hostname" in errors_of(twin)
    assert_db_refuses(twin)


def test_node_serial_unique_but_blank_allowed_many_times():
    site, node_model = make_site(), make_node_model()
    make_node(site, node_model, serial="", asset_tag="")
    make_node(site, node_model, serial="", asset_tag="")  # a second blank serial is fine
    make_node(site, node_model, serial="SN-1")
    twin = build_node(site, node_model, serial="SN-1")
    assert errors_of(twin)["__all__"] == ["Another node already has this serial."]
    assert_db_refuses(twin)
    assert Node.objects.filter(serial="").count() == 2


def test_node_asset_tag_unique():
    make_node(asset_tag="ZRH-10001")
    twin = build_node(make_site(), make_node_model(), asset_tag="ZRH-10001")
    assert errors_of(twin)["__all__"] == ["Another node already has this asset tag."]


def test_gpu_uuid_unique_but_blank_allowed():
    gpu_model = make_gpu_model()
    make_gpu(gpu_model=gpu_model, uuid="GPU-0b1f6a2e-5c3d-4e7f-8a9b-0c1d2e3f4a5b")
    make_gpu(gpu_model=gpu_model, uuid="")
    make_gpu(gpu_model=gpu_model, uuid="")
    twin = build_gpu(gpu_model, uuid="GPU-0b1f6a2e-5c3d-4e7f-8a9b-0c1d2e3f4a5b")
    assert errors_of(twin)["__all__"] == ["Another gpu already has this uuid."]
    assert_db_refuses(twin)


# --- Racks and positions -------------------------------------------------------------------------


def test_position_above_rack_height_refused():
    rack = make_rack(height_u=42)
    node_model = make_node_model(height_u=8)
    node = build_node(rack.site, node_model, rack=rack, position=36)  # U36-U43
    errors = errors_of(node)
    assert list(errors) == ["position"]
    assert errors["position"] == ["A 8U node at U36 reaches U43, above the rack's 42U."]
    node.position = 35  # U35-U42: the top unit is fine
    node.full_clean()


def test_overlapping_positions_refused():
    rack = make_rack()
    node_model = make_node_model(height_u=8)
    make_node(node_model=node_model, rack=rack, position=3, hostname="gpu-low")  # U3-U10
    clash = build_node(rack.site, node_model, rack=rack, position=10)
    assert errors_of(clash)["position"] == ["U3-U10 is taken by gpu-low."]
    below = build_node(rack.site, node_model, rack=rack, position=1)  # U1-U8 overlaps U3
    assert "position" in errors_of(below)
    clash.position = 11  # U11-U18 is free
    clash.full_clean()


def test_node_may_keep_its_own_position():
    rack = make_rack()
    node = make_node(rack=rack, position=3)
    node.owner_team = make_team("vision")
    node.full_clean()  # does not overlap with itself


def test_position_needs_rack():
    node = build_node(make_site(), make_node_model(), position=3)
    assert errors_of(node)["position"] == ["A position needs a rack."]


def test_rack_of_another_site_refused():
    rack = make_rack()
    node = build_node(make_site(name="Elsewhere"), make_node_model(), rack=rack)
    assert errors_of(node)["rack"] == [f"Rack {rack} is not in site Elsewhere."]


def test_rack_cannot_be_lowered_under_its_nodes():
    rack = make_rack(height_u=42)
    make_node(rack=rack, position=30, node_model=make_node_model(height_u=8))  # U30-U37
    rack.height_u = 36
    assert errors_of(rack)["height_u"] == ["Nodes in this rack reach U37; the rack cannot be lower."]
    rack.height_u = 37
    rack.full_clean()


# --- GPU slots -----------------------------------------------------------------------------------


def test_gpu_slot_beyond_node_model_refused():
    node = make_node(node_model=make_node_model(gpu_slots=8))
    gpu = build_gpu(make_gpu_model(), node=node, slot=8)
    assert errors_of(gpu)["slot"] == [f"{node.node_model} has slots 0-7."]


def test_ninth_gpu_in_eight_slot_node_refused():
    node = make_node(node_model=make_node_model(gpu_slots=8))
    gpu_model = make_gpu_model()
    for _ in range(8):
        make_gpu(node=node, gpu_model=gpu_model)
    ninth = build_gpu(gpu_model, node=node, slot=8)
    errors = errors_of(ninth)
    assert errors["node"] == [f"{node} already holds 8 GPUs, all of its 8 slots."]
    assert GPU.objects.filter(node=node).count() == 8


def test_gpu_slot_taken_refused():
    node = make_node()
    gpu = make_gpu(node=node, slot=0)
    twin = build_gpu(gpu.gpu_model, node=node, slot=0)
    assert errors_of(twin)["__all__"] == ["This slot of the node already holds a GPU."]
    assert_db_refuses(twin)


def test_gpu_in_node_needs_slot_and_spare_has_none():
    node = make_node()
    assert errors_of(build_gpu(make_gpu_model(), node=node, slot=None))["slot"] == ["A GPU in a node needs a slot."]
    assert errors_of(build_gpu(make_gpu_model(), slot=2))["slot"] == ["A spare GPU (no node) has no slot."]


def test_node_model_with_fewer_slots_than_installed_gpus_refused():
    node = make_node(node_model=make_node_model(gpu_slots=8))
    for _ in range(5):
        make_gpu(node=node)
    node.node_model = make_node_model(gpu_slots=4, name="4-GPU box")
    assert errors_of(node)["node_model"] == ["4-GPU box has 4 GPU slots; this node holds 5 GPUs."]


# --- Network and storage -------------------------------------------------------------------------


def test_storage_used_above_capacity_refused():
    storage = make_storage(capacity_tb=Decimal("100.0"), used_tb=Decimal("100.0"))  # full is allowed
    storage.used_tb = Decimal("100.1")
    assert errors_of(storage)["used_tb"] == ["Used (100.1 TB) exceeds capacity (100.0 TB)."]
    assert storage.used_percent == Decimal("100.1")


def test_switch_uplinks_and_rack_checked():
    switch = make_switch(ports=64, uplinks=32)
    switch.uplinks = 65
    switch.rack = make_rack()  # another site's rack
    errors = errors_of(switch)
    assert errors["uplinks"] == ["A 64-port switch cannot have 65 uplinks."]
    assert "rack" in errors


def test_attachment_switch_must_be_on_its_fabric():
    attachment = make_attachment()
    attachment.switch = make_switch(fabric=make_fabric())
    assert "switch" in errors_of(attachment)
    assert attachment.bandwidth_gbps == 8 * 400


# --- Catalog (data migration 0002) ---------------------------------------------------------------


def test_catalog_loaded_by_migration():
    assert set(GPUModel.objects.values_list("name", flat=True)) >= {row["name"] for row in GPU_MODELS}
    assert set(NodeModel.objects.values_list("name", flat=True)) >= {row["name"] for row in NODE_MODELS}
    assert {
        "A100 40GB SXM", "A100 80GB SXM", "H100 SXM 80GB", "H100 PCIe 80GB", "H200 SXM 141GB", "B200", "L40S",
        "MI300X",
    } <= {row["name"] for row in GPU_MODELS}


def test_catalog_figures():
    h100 = GPUModel.objects.get(name="H100 SXM 80GB")
    assert (h100.vendor, h100.form_factor, h100.memory_gb) == ("NVIDIA", "SXM", 80)
    assert h100.memory_bandwidth_tbs == Decimal("3.35")
    assert h100.bf16_tflops == Decimal("989.4")  # dense: the datasheet's 1,979 is with sparsity
    assert h100.fp8_tflops == Decimal("1978.9")
    assert (h100.tdp_w, h100.nvlink_gbs) == (700, 900)

    a100 = GPUModel.objects.get(name="A100 80GB SXM")
    assert a100.fp8_tflops is None  # Ampere has no FP8
    assert a100.bf16_tflops == Decimal("312.0")
    assert (a100.memory_gb, a100.tdp_w, a100.nvlink_gbs) == (80, 400, 600)
    assert GPUModel.objects.get(name="A100 40GB SXM").fp8_tflops is None

    h200 = GPUModel.objects.get(name="H200 SXM 141GB")
    assert (h200.memory_gb, h200.memory_bandwidth_tbs, h200.bf16_tflops) == (141, Decimal("4.80"), h100.bf16_tflops)
    assert GPUModel.objects.get(name="L40S").nvlink_gbs == 0
    mi300x = GPUModel.objects.get(name="MI300X")
    assert (mi300x.vendor, mi300x.memory_gb, mi300x.bf16_tflops, mi300x.nvlink_gbs) == (
        "AMD", 192, Decimal("1307.4"), 896
    )
    b200 = GPUModel.objects.get(name="B200")
    assert (b200.bf16_tflops, b200.fp8_tflops, b200.tdp_w, b200.nvlink_gbs) == (
        Decimal("2250.0"), Decimal("4500.0"), 1000, 1800
    )

    dgx = NodeModel.objects.get(name="DGX H100")
    assert (dgx.cpu_cores, dgx.ram_gb, dgx.gpu_slots, dgx.max_power_w, dgx.height_u) == (112, 2048, 8, 10200, 8)
    assert NodeModel.objects.get(name="DGX B200").max_power_w == 14300


def test_catalog_rows_are_valid_and_have_history():
    for model in (GPUModel, NodeModel):
        for obj in model.objects.all():
            obj.full_clean()
            assert obj.history.filter(history_type="+").exists()


def test_catalog_fp8_is_twice_bf16_where_published():
    for row in GPU_MODELS:
        if row["fp8_tflops"] is not None and row["vendor"] == "NVIDIA" and row["name"] != "L40S":
            assert abs(row["fp8_tflops"] - 2 * row["bf16_tflops"]) <= 1, row["name"]


# --- History -------------------------------------------------------------------------------------


def test_history_rows_on_create_update_delete():
    site = make_site(name="Zurich DC9")
    site_id = site.pk
    assert [h.history_type for h in site.history.all()] == ["+"]
    site.power_capacity_kw = Decimal("750.0")
    site.save()
    latest = site.history.first()
    assert latest.history_type == "~"
    assert latest.power_capacity_kw == Decimal("750.0")
    assert latest.prev_record.power_capacity_kw == Decimal("2000.0")
    site.delete()
    rows = Site.history.filter(id=site_id)
    assert [h.history_type for h in rows] == ["-", "~", "+"]


def test_history_on_node_and_gpu():
    node = make_node()
    gpu = make_gpu(node=node)
    node.partition = "train-h100"
    node.save()
    assert node.history.count() == 2
    assert node.history.first().partition == "train-h100"
    assert gpu.history.count() == 1
    storage = make_storage()
    storage.used_tb = Decimal("300.0")
    storage.save()
    assert StorageSystem.history.filter(id=storage.pk).count() == 2
