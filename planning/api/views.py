"""Contracts, purchase orders and deliveries over REST. Order and delivery creation is idempotent
(``Idempotency-Key`` header, or the client's ``external_id``; see ``portal.api.idempotency``)."""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api.idempotency import KEY_PARAMETER, IdempotentCreateMixin
from portal.api.viewsets import ChangePermission, PortalModelViewSet

from .. import filters, procurement, sizing
from ..models import Contract, Delivery
from . import serializers as api

READ_AND_CREATE = ["get", "post", "head", "options"]
IDEMPOTENT_CREATE = {
    "parameters": [KEY_PARAMETER],
    "description_suffix": (
        "\n\nIdempotent: repeat it with the same `Idempotency-Key` header (answer replayed, header "
        "`Idempotent-Replayed: true`) or the same `external_id` (200 with the existing object; 409 if the body "
        "differs)."
    ),
}


def idempotent_create(summary, description, request, response):
    return extend_schema(
        summary=summary, description=description + IDEMPOTENT_CREATE["description_suffix"],
        parameters=IDEMPOTENT_CREATE["parameters"], request=request,
        responses={201: response, 200: OpenApiResponse(response, description="Already sent: the existing object."),
                   400: OpenApiResponse(description="Refused; nothing was created."),
                   409: OpenApiResponse(description="external_id reused with a different body."),
                   422: OpenApiResponse(description="Idempotency-Key reused with a different body.")},
    )


class ContractViewSet(PortalModelViewSet):
    """Purchase, rental/lease, expansion and support contracts: dates, notice, costs, covered assets (lists of
    ids) and, for support contracts, SLA terms per priority (the list is replaced when given on update)."""

    queryset = Contract.objects.select_related("owner", "rented_gpu_model").prefetch_related(
        "sla_terms", "sites", "racks", "nodes", "gpus", "switches", "storage_systems"
    )
    serializer_class = api.ContractSerializer
    filterset_class = filters.ContractFilterSet  # the same filters as the contract list page


@extend_schema_view(
    create=idempotent_create(
        "Create a purchase order with its lines",
        "The order and all its lines in one transaction. `contract` must be a purchase or expansion contract.",
        api.PurchaseOrderSerializer, api.PurchaseOrderSerializer,
    )
)
class PurchaseOrderViewSet(IdempotentCreateMixin, PortalModelViewSet):
    """Purchase orders with their lines and, per line, how many units were ordered, delivered and remain.
    Created once, read-only afterwards; `cancel` while nothing is delivered."""

    queryset = procurement.orders_with_counts()
    serializer_class = api.PurchaseOrderSerializer
    filterset_fields = ["status", "vendor", "contract", "site", "external_id"]
    http_method_names = READ_AND_CREATE
    external_id_field = "external_id"

    @extend_schema(summary="Cancel an order nothing was delivered for", request=None,
                   responses={200: api.PurchaseOrderSerializer,
                              409: OpenApiResponse(description="Already cancelled or partly delivered.")})
    @action(detail=True, methods=["post"], permission_classes=[ChangePermission])
    def cancel(self, request, pk=None):
        order = self.get_object()
        try:
            procurement.cancel_order(order)
        except DjangoValidationError as error:
            return Response({"detail": error.messages[0]}, status=status.HTTP_409_CONFLICT)
        return Response(self.get_serializer(self.get_queryset().get(pk=order.pk)).data)


@extend_schema_view(
    create=idempotent_create(
        "Record a delivery",
        "Creates a node (node lines) or GPU (GPU lines) per item in state delivered, at the order's site, with "
        "a lifecycle record, and updates the order's status; all or nothing. Refused (400, per item index) when "
        "an item exceeds what remains of its line, repeats a serial, UUID or hostname, or is for another order.",
        api.DeliveryCreateSerializer, api.DeliverySerializer,
    )
)
class DeliveryViewSet(IdempotentCreateMixin, PortalModelViewSet):
    """Deliveries against purchase orders, with the nodes and GPUs created for each item. Read-only after
    creation."""

    queryset = Delivery.objects.select_related("order", "created_by").prefetch_related(
        "items__node", "items__gpu__node"
    )
    serializer_class = api.DeliverySerializer
    filterset_fields = ["order", "external_id", "delivered_on"]
    http_method_names = READ_AND_CREATE
    external_id_field = "external_id"

    def get_serializer_class(self):
        return api.DeliveryCreateSerializer if self.action == "create" else api.DeliverySerializer

    def get_response_serializer(self, instance):
        return api.DeliverySerializer(instance, context=self.get_serializer_context())

    def perform_create(self, serializer):
        data = dict(serializer.validated_data)
        items = [procurement.ItemIn(**item) for item in data.pop("items")]
        try:
            with transaction.atomic():
                delivery = procurement.receive_delivery(data.pop("order"), items, self.request.user, **data)
        except procurement.DeliveryRefused as refused:
            raise serializers.ValidationError(refused.errors) from None
        return delivery

    def create_object(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        delivery = self.perform_create(serializer)
        answer = self.get_response_serializer(self.get_queryset().get(pk=delivery.pk))
        return Response(answer.data, status=status.HTTP_201_CREATED)


class SizingView(APIView):
    """Workload sizing (``planning.sizing``): compute, memory, network, storage, host and power of a training run,
    and the same run on every GPU model of the catalog. Any authenticated user may size."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        summary="Size a training workload",
        description=(
            "Training FLOPs (6·N·D), GPU-hours at the given MFU (default "
            f"{sizing.DEFAULT_MFU}), wall-clock days, GPUs for a deadline, memory per GPU and GPUs to fit "
            "(mixed-precision Adam, sharded optimizer state; and bf16 inference), fit class, network per node, "
            "storage and checkpoint throughput, host CPU and RAM per GPU, power and energy. Each figure comes "
            "with its unit, a one-line explanation and the reference it follows; `comparison` sizes the same "
            "workload on every GPU model of the catalog."
        ),
        request=api.SizingInputSerializer,
        responses={200: api.SizingSerializer,
                   400: OpenApiResponse(description='Invalid inputs by field, e.g. `{"precision": ["A100 80GB '
                                                    'SXM has no FP8 tensor cores; size it in bf16."]}`.')},
    )
    def post(self, request):
        gpus = sizing.catalog_gpus()
        params = api.SizingInputSerializer(data=request.data, context={"gpus": gpus})
        params.is_valid(raise_exception=True)
        workload = sizing.Workload(**params.validated_data)
        result = sizing.size(workload, gpus)
        answer = {"gpu": result.gpu, "figures": result.figures, "comparison": sizing.compare_all(workload, gpus)}
        return Response(api.SizingSerializer(answer).data)
