"""Tables for the contract pages (django-tables2): sortable columns, CSV export of the filtered rows."""

import django_tables2 as tables
from django.utils import timezone
from django.utils.html import format_html

from inventory.models import Node
from inventory.tables import TeamColumn
from portal.tables import ColumnChoice

from ..common import money
from .models import Contract


class ContractTable(ColumnChoice, tables.Table):
    reference = tables.Column(linkify=True)
    kind = tables.Column()
    title = tables.Column(attrs={"td": {"class": "wrap"}})
    auto_renew = tables.BooleanColumn(verbose_name="Auto-renew")
    start = tables.DateColumn(format="Y-m-d")
    notice_deadline = tables.DateColumn(format="Y-m-d", verbose_name="Notice by", orderable=False)
    owner = tables.Column(accessor="owner__username", verbose_name="Owner")

    required_columns = ("reference",)
    # What a renewal review needs first (end, notice, costs), so it fits 1280 px; the rest (a rental's cost per
    # GPU-hour among them) is a tick away in Columns, and always in the exports.
    default_columns = ("reference", "vendor", "kind", "title", "end", "notice_deadline", "monthly_cost",
                       "one_off_cost")

    class Meta:
        model = Contract
        fields = ("reference", "vendor", "kind", "title", "end", "notice_deadline", "monthly_cost", "one_off_cost",
                  "gpu_hour_cost", "start", "auto_renew", "owner", "currency")

    # Costs on the page: grouped digits and the contract's currency, "—" for none; the CSV keeps the plain numbers.
    def render_monthly_cost(self, record, value):
        return money(value, record.currency)

    def render_one_off_cost(self, record, value):
        return money(value, record.currency)

    def render_gpu_hour_cost(self, record, value):
        return money(value, record.currency)

    def value_monthly_cost(self, value):
        return value

    def value_one_off_cost(self, value):
        return value

    def value_gpu_hour_cost(self, value):
        return value

    def render_end(self, record, value):
        if value is None:
            return "—"
        if value < timezone.localdate():
            return format_html('<span class="expired" title="Ended">{}</span>', value.isoformat())
        return value.isoformat()


class UncoveredNodeTable(tables.Table):
    hostname = tables.Column(linkify=True)
    site = tables.Column(linkify=True)
    rack = tables.Column(accessor="rack__name", verbose_name="Rack")
    reason = tables.Column()
    warranty_end = tables.DateColumn(format="Y-m-d")
    owner_team = TeamColumn()

    class Meta:
        model = Node
        fields = ("hostname", "site", "rack", "reason", "warranty_end", "owner_team", "serial")
        empty_text = "Every in-service node has an active support contract and a warranty that has not ended."
