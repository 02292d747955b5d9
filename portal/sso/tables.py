import django_tables2 as tables

from ..tables import ColumnChoice
from .models import DirectoryGroupMapping


class DirectoryGroupMappingTable(ColumnChoice, tables.Table):
    group = tables.Column(linkify=True)

    required_columns = ("group",)
    default_columns = ("group", "source", "role", "team", "team_role")

    class Meta:
        model = DirectoryGroupMapping
        fields = ("group", "source", "role", "team", "team_role", "updated")
