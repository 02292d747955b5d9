"""The goodput API: the goodput report and the interruptions list. Registered by ``inventory/api/urls.py`` under
``/api/inventory/``."""

from datetime import UTC, datetime, time

import django_filters
from django import forms
from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import viewsets
from rest_framework.response import Response
from rest_framework.views import APIView

from inventory.telemetry import queries as telemetry_queries
from inventory.telemetry import ranges
from inventory.telemetry.api.views import ID_GROUPS, CanViewTelemetry
from inventory.telemetry.models import TelemetrySource
from portal.api.viewsets import ValuesList
from portal.filters import MonthFilter

from .. import hooks, queries
from ..models import Interruption
from . import serializers as api

ASSUMPTIONS = (
    "Estimate. Lost work: GPUs × the run since its last checkpoint, checkpoints every {minutes} min from the job's "
    "start unless the team's plan says otherwise (run time mod interval). Restart wait: GPUs × the time until the "
    "team's next job on the partition started, at most {cap:g} h. An interruption is the infrastructure's when "
    "Slurm says NODE_FAIL or BOOT_FAIL, or the job failed or was requeued from {window} min before to {lag} min "
    "after a hardware XID, double-bit ECC errors or a move to degraded on one of its nodes."
)


def assumptions():
    return ASSUMPTIONS.format(minutes=settings.GOODPUT_CHECKPOINT_MINUTES, cap=settings.GOODPUT_RESTART_WAIT_CAP_HOURS,
                              window=settings.GOODPUT_FAULT_WINDOW_MINUTES, lag=settings.GOODPUT_FAULT_LAG_MINUTES)


class GoodputView(APIView):
    """Goodput per team, partition, site, GPU model or node over a range: infrastructure interruptions, their rate,
    the mean time between them for an N-GPU job, the GPU-hours they lost and their cost, the queue-wait share and
    the goodput ratio."""

    permission_classes = [CanViewTelemetry]

    @extend_schema(
        summary="Goodput, interruptions and lost GPU-hours per group",
        description="Figures of `inventory.goodput.queries.goodput_by`. Lost GPU-hours are an estimate: "
                    "`assumptions` says under what assumptions. Groups without allocation have null rates.",
        parameters=[api.GoodputQuerySerializer],
        responses={200: api.GoodputSerializer,
                   400: OpenApiResponse(description='Unknown parameter, e.g. `{"range": ["Unknown range ..."]}`.')},
        filters=False,
    )
    def get(self, request):
        params = api.GoodputQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        now = timezone.now()
        gpus = data.get("gpus") or settings.GOODPUT_MTBI_GPUS
        compute = queries.goodput_by_month_of if data.get("by") else queries.goodput_by
        groups = compute(data["group_by"], data["range"], params.filters(), now=now, gpus=gpus,
                         job_hours=data["job_hours"])
        span = telemetry_queries.get_range(data["range"])
        answer = {
            "group_by": data["group_by"], "by": data.get("by"), "range": data["range"],
            "start": span.start(now), "end": span.end(now),
            "gpus": gpus, "job_hours": data["job_hours"],
            "currency": settings.COST_CURRENCY, "idle_gpu_hour_cost": settings.IDLE_GPU_HOUR_COST,
            "cost_basis": queries.cost_basis(groups), "assumptions": assumptions(),
            "groups": [{**g, "id": g["key"] if data["group_by"] in ID_GROUPS else None} for g in groups],
            "stale_sources": [source for source in telemetry_queries.stale_sources()
                              if source.kind == TelemetrySource.Kind.SLURM],
        }
        return Response(api.GoodputSerializer(answer, context={"request": request}).data)


class RangeField(forms.CharField):
    """Any range of the goodput report (``ranges.get_range``): a rolling one, last_month, a month or dates."""

    def clean(self, value):
        value = super().clean(value)
        if value:
            try:
                ranges.get_range(value)
            except ranges.UnknownParameter as error:
                raise forms.ValidationError(str(error), code="invalid") from None
        return value


class RangeFilter(django_filters.CharFilter):
    field_class = RangeField


class InterruptionFilterSet(django_filters.FilterSet):
    """Interruptions by cause, reason, team (Slurm account), partition, node, site, GPU model (of the fault's node),
    range (ended since the range's start) and month (ended in that calendar month, UTC: the goodput report's)."""

    cause = django_filters.ChoiceFilter(choices=Interruption.Cause.choices)
    reason = django_filters.ChoiceFilter(choices=Interruption.Reason.choices)
    team = django_filters.CharFilter(field_name="account")
    partition = django_filters.CharFilter()
    node = django_filters.NumberFilter(field_name="node")
    site = django_filters.NumberFilter(method="by_nodes")
    gpu_model = django_filters.NumberFilter(method="by_nodes")
    range = RangeFilter(method="in_range", max_length=40, help_text=f"Ended in the range: {ranges.KEYS_HELP}.")
    month = MonthFilter(method="in_month", label="Ended in month (UTC)")

    class Meta:
        model = Interruption
        fields = ["cause", "reason", "team", "partition", "node", "site", "gpu_model", "range", "month"]

    def by_nodes(self, rows, name, value):
        return rows.filter(node__in=queries.matching_nodes({name: value}))

    def in_range(self, rows, name, value):
        span, now = ranges.get_range(value), timezone.now()
        return rows.filter(ended_at__gte=span.start(now), ended_at__lte=span.end(now))

    def in_month(self, rows, name, value):
        begin = datetime.combine(value, time(), UTC)
        return rows.filter(ended_at__gte=begin, ended_at__lt=queries.next_month(begin))


class InterruptionViewSet(ValuesList, viewsets.ReadOnlyModelViewSet):
    """Jobs that ended in anything but COMPLETED, newest first: cause (infrastructure, user, scheduler), reason, the
    job, node, GPU, fault (XID event, ECC hour, move to degraded) and ticket, and for the infrastructure's the
    estimate of the GPU-hours lost (with its assumptions). Researchers read their own teams' only: every team's
    figures are in `goodput/`."""

    permission_classes = [CanViewTelemetry]
    queryset = Interruption.objects.select_related("job", "node", "gpu", "xid_event", "transition")
    serializer_class = api.InterruptionSerializer
    filterset_class = InterruptionFilterSet
    ordering = ["-ended_at", "-pk"]
    ordering_fields = ["ended_at", "lost_gpu_hours", "gpus"]
    values_list = True  # pages of up to 1,000 rows: model instances and serializer fields cost 10× the rows' read
    values_lookups = hooks.TICKET_LOOKUPS

    def get_queryset(self):
        return super().get_queryset().visible_to(self.request.user)  # a researcher's own teams' (inventory.policy)

    def page_context(self, rows):
        return {"tickets": hooks.tickets(list(rows))}  # one read for the page (the serializer's ticket)

    def retrieve(self, request, *args, **kwargs):
        row = self.get_object()
        context = {**self.get_serializer_context(), "tickets": hooks.tickets([row])}
        return Response(self.serializer_class(row, context=context).data)
