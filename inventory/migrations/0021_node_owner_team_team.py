# A node's owner team becomes a foreign key to its team, by name: the column keeps the name (0020 made a team of
# every name it held), so the queries that group and filter by it are unchanged. Its own migration: PostgreSQL
# cannot alter a table whose rows 0020 changed in the same transaction.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('inventory', '0020_team'),
    ]

    operations = [
        migrations.AlterField(
            model_name='historicalnode',
            name='owner_team',
            field=models.ForeignKey(blank=True, db_column='owner_team', db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='inventory.team', to_field='name'),
        ),
        migrations.AlterField(
            model_name='node',
            name='owner_team',
            field=models.ForeignKey(blank=True, db_column='owner_team', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='owned_nodes', to='inventory.team', to_field='name'),
        ),
    ]
