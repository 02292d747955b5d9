"""Daily rows count the hours with a utilization reading (``hours``), as the hourly ranges do: an hour with only
power is no longer an observed GPU-hour. The daily rows whose hourly rows are still stored are recounted from them,
in SQL; the first stored day is left as it was (retention may have cut its first hours), and so are older days."""

from datetime import datetime, time, timedelta

from django.db import migrations, models
from django.db.models import Count, Min
from django.db.models.functions import TruncDate
from django.utils import timezone


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
    ]
