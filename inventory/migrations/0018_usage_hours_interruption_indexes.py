"""Usage hours (``UsageHourly``: per node, GPU model and hour, what the 24-hour and 7-day dashboards group, about one
row for every eight hourly GPU rows), filled from the stored hourly GPU rows with ``rollups.rollup_usage``; indexes for
the interruptions list's order and the lost GPU-hours of a cause; and room on the pages of the per-GPU gauge readings
(PostgreSQL's fillfactor 50), which every pull updates in place (issue 35)."""

import django.db.models.deletion
from django.db import migrations, models

from inventory.telemetry.rollups import rollup_usage


def fill_usage_hours(apps, schema_editor):
    rollup_usage(gpu_hourly=apps.get_model("inventory", "GPUHourly"), usage_daily=None,
                 usage_hourly=apps.get_model("inventory", "UsageHourly"))


def gauge_fillfactor(apps, schema_editor, percent=50):
    """Updated rows stay on their page (a HOT update, no index entry to write) while it has room."""
    if schema_editor.connection.vendor != "postgresql":
        return
    for model in ("XidReading", "HealthReading"):
        table = schema_editor.quote_name(apps.get_model("inventory", model)._meta.db_table)
        schema_editor.execute(f"ALTER TABLE {table} SET (fillfactor = {int(percent)})")


def default_fillfactor(apps, schema_editor):
    gauge_fillfactor(apps, schema_editor, percent=100)


class Migration(migrations.Migration):

    dependencies = [
        ('inventory', '0017_allocation_rollups'),
    ]

    operations = [
        migrations.CreateModel(
            name='UsageHourly',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('gpus', models.PositiveIntegerField(help_text='GPUs with a utilization reading in the period.')),
                ('util_hours', models.FloatField(help_text='Their hourly utilization (%) summed over their hours.')),
                ('hour', models.DateTimeField()),
            ],
            options={
                'verbose_name_plural': 'usage hours',
            },
        ),
        migrations.RemoveIndex(
            model_name='interruption',
            name='inventory_i_ended_a_176fc1_idx',
        ),
        migrations.AlterField(
            model_name='usagedaily',
            name='gpus',
            field=models.PositiveIntegerField(help_text='GPUs with a utilization reading in the period.'),
        ),
        migrations.AlterField(
            model_name='usagedaily',
            name='util_hours',
            field=models.FloatField(help_text='Their hourly utilization (%) summed over their hours.'),
        ),
        migrations.AddIndex(
            model_name='interruption',
            index=models.Index(fields=['ended_at', 'id'], name='inventory_i_ended_a_5e2c51_idx'),
        ),
        migrations.AddIndex(
            model_name='interruption',
            index=models.Index(fields=['cause', 'ended_at'], name='inventory_i_cause_b3157c_idx'),
        ),
        migrations.AddField(
            model_name='usagehourly',
            name='gpu_model',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='inventory.gpumodel'),
        ),
        migrations.AddField(
            model_name='usagehourly',
            name='node',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='inventory.node'),
        ),
        migrations.AddIndex(
            model_name='usagehourly',
            index=models.Index(fields=['hour'], name='inventory_u_hour_e7d4f8_idx'),
        ),
        migrations.AddConstraint(
            model_name='usagehourly',
            constraint=models.UniqueConstraint(fields=('node', 'hour', 'gpu_model'), name='usage_hourly_unique'),
        ),
        migrations.RunPython(fill_usage_hours, migrations.RunPython.noop),
        migrations.RunPython(gauge_fillfactor, default_fillfactor),
    ]
