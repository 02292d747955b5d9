"""Purchase orders and deliveries over REST. Creation is idempotent (``Idempotency-Key`` header, or the client's
``external_id``; see ``portal.api.idempotency``)."""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.response import Response

from portal.api.exceptions import Conflict
from portal.api.idempotency import KEY_PARAMETER, IdempotentCreateMixin
from portal.api.viewsets import ChangePermission, PortalModelViewSet, changes_object

from .. import orders
from ..models import Delivery
from . import serializers as api

READ_AND_CREATE = ["get", "post", "head", "options"]
IDEMPOTENT_CREATE = {
    "parameters": [KEY_PARAMETER],
    "description_suffix": (
        "\n\nIdempotent: repeat it with the same `Idempotency-Key` header (answer replayed, header "
        "`Idempotent-Replayed: true`) or the same `external_id` (the first answer replayed; 200 with the existing "
        "object if it was created otherwise; 409 if the body differs)."
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


@extend_schema_view(
    create=idempotent_create(
        "Create a purchase order with its lines",
        "The order and all its lines in one transaction. The order carries out an approved `plan` or belongs to "
        "a purchase or expansion `contract` (at least one).",
        api.PurchaseOrderSerializer, api.PurchaseOrderSerializer,
    )
)
class PurchaseOrderViewSet(IdempotentCreateMixin, PortalModelViewSet):
    """Purchase orders with their lines and, per line, how many units were ordered, delivered and remain.
    Created once, read-only afterwards; `cancel` while nothing is delivered."""

    queryset = orders.orders_with_counts()
    serializer_class = api.PurchaseOrderSerializer
    filterset_fields = ["status", "vendor", "plan", "contract", "site", "external_id"]
    http_method_names = READ_AND_CREATE
    external_id_field = "external_id"

    @extend_schema(summary="Cancel an order nothing was delivered for", request=None,
                   responses={200: api.PurchaseOrderSerializer,
                              409: OpenApiResponse(description="Already cancelled or partly delivered.")})
    @action(detail=True, methods=["post"], permission_classes=[ChangePermission])
    @changes_object
    def cancel(self, request, pk=None):
        order = self.get_object()
        try:
            orders.cancel_order(order)
        except DjangoValidationError as error:
            raise Conflict(error.messages[0]) from error
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
    bulk_create = False  # one delivery per request (``create_object`` takes one): the schema offers no list

    def get_serializer_class(self):
        return api.DeliveryCreateSerializer if self.action == "create" else api.DeliverySerializer

    def get_response_serializer(self, instance):
        return api.DeliverySerializer(instance, context=self.get_serializer_context())

    def perform_create(self, serializer):
        data = dict(serializer.validated_data)
        items = [orders.ItemIn(**item) for item in data.pop("items")]
        try:
            with transaction.atomic():
                delivery = orders.receive_delivery(data.pop("order"), items, self.request.user, **data)
        except orders.DeliveryRefused as refused:
            raise serializers.ValidationError(refused.errors) from None
        return delivery

    def create_object(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        delivery = self.perform_create(serializer)
        answer = self.get_response_serializer(self.get_queryset().get(pk=delivery.pk))
        return Response(answer.data, status=status.HTTP_201_CREATED)
