"""Load the hardware catalog (GPU and node models) from ``inventory.catalog``.

Idempotent: rows are matched by name and updated in place; a history row is written for each row created
or changed, so the catalog's history starts here. Reversing deletes the rows by name (refused while a
node or GPU still uses one).
"""

from django.db import migrations
from django.utils import timezone

from inventory.catalog import GPU_MODELS, NODE_MODELS

REASON = "Hardware catalog (migration 0002)"
CATALOG = (("GPUModel", GPU_MODELS), ("NodeModel", NODE_MODELS))


def write_history(model, historical, obj, history_type, db, now, reason=REASON):
    fields = {f.attname: getattr(obj, f.attname) for f in model._meta.concrete_fields}
    historical.objects.using(db).create(
        **fields, history_date=now, history_type=history_type, history_change_reason=reason
    )


def load_catalog(apps, schema_editor, catalog=CATALOG, reason=REASON):
    db = schema_editor.connection.alias
    now = timezone.now()
    for model_name, rows in catalog:
        model = apps.get_model("inventory", model_name)
        historical = apps.get_model("inventory", f"Historical{model_name}")
        for row in rows:
            values = {k: v for k, v in row.items() if k != "name"}
            obj = model.objects.using(db).filter(name=row["name"]).first()
            if obj is None:
                obj = model.objects.using(db).create(**row)
                history_type = "+"
            elif any(getattr(obj, k) != v for k, v in values.items()):
                for k, v in values.items():
                    setattr(obj, k, v)
                obj.save(using=db)
                history_type = "~"
            else:
                continue
            write_history(model, historical, obj, history_type, db, now, reason)


def unload_catalog(apps, schema_editor):
    db = schema_editor.connection.alias
    now = timezone.now()
    for model_name, rows in CATALOG:
        model = apps.get_model("inventory", model_name)
        historical = apps.get_model("inventory", f"Historical{model_name}")
        doomed = model.objects.using(db).filter(name__in=[row["name"] for row in rows])
        for obj in doomed:
            write_history(model, historical, obj, "-", db, now)
        doomed.delete()


class Migration(migrations.Migration):

    dependencies = [
        ("inventory", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(load_catalog, unload_catalog),
    ]
