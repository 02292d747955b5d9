"""The statement list (month × team), a statement's lines, and the rate cards (django-tables2)."""

import django_tables2 as tables
from django.utils.html import format_html

from portal.tables import PortalTable

from .models import NO_TEAM, Rate, RateCard, Statement, StatementLine

NUM = {"td": {"class": "num"}, "th": {"class": "num"}}


class StatementTable(PortalTable):
    month = tables.Column(linkify=True, order_by=("month", "team__name"))
    team = tables.Column(default=NO_TEAM, order_by=("team__name",))
    gpu_hours = tables.Column("GPU-hours", attrs=NUM)
    charges = tables.Column(attrs=NUM)
    credit = tables.Column(attrs=NUM)
    adjustments = tables.Column(attrs=NUM)
    total = tables.Column(attrs=NUM)
    currency = tables.Column()

    class Meta:
        model = Statement
        fields = ("month", "team", "gpu_hours", "charges", "credit", "adjustments", "total", "currency")

    def render_month(self, record):
        return record.month_label

    def value_month(self, record):
        return record.month_label

    def render_team(self, record):
        return record.team_name


class StatementLineTable(tables.Table):
    kind = tables.Column()
    partition = tables.Column(default="—")
    gpu_model_name = tables.Column("GPU model", default="—")
    user = tables.Column(default="—")
    gpu_hours = tables.Column("GPU-hours", attrs=NUM)
    price_per_gpu_hour = tables.Column("Price / GPU-hour", attrs=NUM)
    amount = tables.Column(attrs=NUM)

    class Meta:
        model = StatementLine
        fields = ("kind", "partition", "gpu_model_name", "user", "gpu_hours", "price_per_gpu_hour", "amount")
        attrs = {"class": "table", "id": "statement-lines"}
        order_by = ("kind", "partition", "gpu_model_name", "user")


class RateCardTable(PortalTable):
    effective_from = tables.Column(linkify=True)
    rates = tables.Column("Rates", accessor="pk", orderable=False)

    class Meta:
        model = RateCard
        fields = ("effective_from", "currency", "note", "rates")

    def render_rates(self, record):
        return format_html("{}", len(record.rates.all()))

    def value_rates(self, record):
        return len(record.rates.all())


class RateTable(tables.Table):
    gpu_model = tables.Column("GPU model", default="any model")
    partition = tables.Column(default="any partition")
    price_per_gpu_hour = tables.Column("Price / GPU-hour", attrs=NUM)

    class Meta:
        model = Rate
        fields = ("gpu_model", "partition", "price_per_gpu_hour")
        attrs = {"class": "table", "id": "rates"}
