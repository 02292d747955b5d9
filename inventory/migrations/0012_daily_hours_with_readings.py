"""Daily rows count the hours with a utilization reading (``hours``), as the hourly ranges do: an hour with only
power is no longer an observed GPU-hour. The daily rows whose hourly rows are still stored are recounted from them,
in SQL; the first stored day is left as it was (retention may have cut its first hours), and so are older days.

Then the usage days (``UsageDaily``: per node, GPU model and day, what the long ranges read) are created and filled
from every daily GPU row with ``rollups.rollup_usage``: one INSERT … SELECT, about 10 s per 10 million daily rows."""

from datetime import datetime, time, timedelta

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import Count, Min
from django.db.models.functions import TruncDate
from django.utils import timezone

from inventory.telemetry.rollups import rollup_usage


def recount(apps, schema_editor):
    db = schema_editor.connection.alias
    quote = schema_editor.connection.ops.quote_name
    for hourly_name, daily_name, key in (("GPUHourly", "GPUDaily", "gpu_id"), ("NodeHourly", "NodeDaily", "node_id")):
        hourly, daily = apps.get_model("inventory", hourly_name), apps.get_model("inventory", daily_name)
        first = hourly.objects.using(db).aggregate(first=Min("hour"))["first"]
        if first is None:
            continue
        complete = timezone.make_aware(datetime.combine(timezone.localdate(first) + timedelta(days=1), time.min))
        counts = (hourly.objects.using(db).filter(hour__gte=complete).annotate(day=TruncDate("hour"))
                  .values(key, "day").annotate(readings=Count("util_mean")).order_by())
        sql, params = counts.query.sql_with_params()
        table = quote(daily._meta.db_table)
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(f"UPDATE {table} SET hours = r.readings FROM ({sql}) r "
                           f"WHERE {table}.{key} = r.{key} AND {table}.day = r.day AND {table}.hours <> r.readings",
                           params)


def fill_usage(apps, schema_editor):
    rollup_usage(gpu_daily=apps.get_model("inventory", "GPUDaily"), usage_daily=apps.get_model("inventory", "UsageDaily"),
                 usage_hourly=None)  # created by 0018


class Migration(migrations.Migration):
    dependencies = [("inventory", "0011_catalog_more_gpus")]

    operations = [
        migrations.AlterField(
            model_name="gpudaily", name="hours",
            field=models.PositiveIntegerField(db_default=0, help_text="Hours of the day with a utilization reading."),
        ),
        migrations.AlterField(
            model_name="nodedaily", name="hours",
            field=models.PositiveIntegerField(db_default=0, help_text="Hours of the day with a utilization reading."),
        ),
        migrations.RunPython(recount, migrations.RunPython.noop),
        migrations.CreateModel(
            name="UsageDaily",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("day", models.DateField()),
                ("gpus", models.PositiveIntegerField(help_text="GPUs with a utilization reading that day.")),
                ("gpu_hours", models.PositiveIntegerField(help_text="Their hours with a utilization reading, summed.")),
                ("util_hours", models.FloatField(help_text="Their hourly utilization (%) summed over those hours.")),
                ("gpu_model", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                                to="inventory.gpumodel")),
                ("node", models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+",
                                           to="inventory.node")),
            ],
            options={
                "verbose_name_plural": "usage days",
                "indexes": [models.Index(fields=["day"], name="inventory_u_day_c16487_idx")],
                "constraints": [models.UniqueConstraint(fields=("node", "gpu_model", "day"), name="usage_daily_unique")],
            },
        ),
        migrations.RunPython(fill_usage, migrations.RunPython.noop),
    ]
