"""Add the GPU models the catalog gained in issue 18 (H800, A800, V100 16/32 GB, GH200, GB200, B300, MI250X,
Gaudi 3, L4, RTX 6000 Ada) with ``0002_catalog``'s idempotent load: rows matched by name, a history row for each
row created or changed. Reversing deletes them (refused while a node or GPU still uses one)."""

from importlib import import_module

from django.db import migrations
from django.utils import timezone

from inventory.catalog import GPU_MODELS

catalog = import_module("inventory.migrations.0002_catalog")  # a module name that starts with a digit
REASON = "Hardware catalog: more GPU models (migration 0011)"
NEW = {"H800", "A800 80GB SXM", "V100 SXM2 16GB", "V100 SXM2 32GB", "GH200 144GB", "GB200", "B300", "MI250X",
       "Gaudi 3", "L4", "RTX 6000 Ada"}
ROWS = [row for row in GPU_MODELS if row["name"] in NEW]


def load(apps, schema_editor):
    catalog.load_catalog(apps, schema_editor, (("GPUModel", ROWS),), REASON)


def unload(apps, schema_editor):
    db = schema_editor.connection.alias
    model, historical = apps.get_model("inventory", "GPUModel"), apps.get_model("inventory", "HistoricalGPUModel")
    doomed = model.objects.using(db).filter(name__in=NEW)
    for obj in doomed:
        catalog.write_history(model, historical, obj, "-", db, timezone.now(), REASON)
    doomed.delete()


class Migration(migrations.Migration):

    dependencies = [
        ("inventory", "0010_partition_hourly_rollups"),
    ]

    operations = [
        migrations.RunPython(load, unload),
    ]
