"""Contracts, capacity plans, purchase orders and deliveries over REST. Order and delivery creation is idempotent
(``Idempotency-Key`` header, or the client's ``external_id``; see ``portal.api.idempotency``)."""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api.exceptions import Conflict
from portal.api.idempotency import KEY_PARAMETER, IdempotentCreateMixin
from portal.api.viewsets import ChangePermission, PortalModelViewSet

from .. import analysis, bom, filters, plans, procurement, sizing
from ..models import CapacityPlan, Contract, Delivery
from . import serializers as api
from .analysis import PlanAnalysisSerializer

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


class ContractViewSet(PortalModelViewSet):
    """Purchase, rental/lease, expansion and support contracts: dates, notice, costs, covered assets (lists of
    ids) and, for support contracts, SLA terms per priority (the list is replaced when given on update)."""

    queryset = Contract.objects.select_related("owner", "rented_gpu_model").prefetch_related(
        "sla_terms", "sites", "racks", "nodes", "gpus", "switches", "storage_systems"
    )
    serializer_class = api.ContractSerializer
    filterset_class = filters.ContractFilterSet  # the same filters as the contract list page


def plan_transition(name, summary):
    """The ``POST {id}/<name>/`` action of a plan: ``plans.<name>(plan, user, comment)``; 400 with the reason
    when the plan's status (or the user) does not allow it."""

    def transition(self, request, pk=None):
        body = api.PlanCommentSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            plan = plans.TRANSITIONS[name](self.get_object(), request.user, body.validated_data["comment"])
        except DjangoValidationError as error:
            return Response({"detail": error.messages[0]}, status=status.HTTP_400_BAD_REQUEST)
        return Response(self.get_serializer(self.get_queryset().get(pk=plan.pk)).data)

    transition.__name__ = name
    schema = extend_schema(summary=summary, request=api.PlanCommentSerializer,
                           responses={200: api.CapacityPlanSerializer,
                                      400: OpenApiResponse(description="Not allowed now; `detail` says why.")})
    return schema(action(detail=True, methods=["post"], permission_classes=[ChangePermission])(transition))


class CapacityPlanViewSet(PortalModelViewSet):
    """Capacity plans with their workloads (sized: GPU-hours) and bill of materials. Created, changed and
    deleted only while draft; then submitted, approved by a second manager (not the submitter) or rejected
    (with a comment), and a rejected plan reopened as a draft. Approval emits the `plan.approved` webhook."""

    queryset = CapacityPlan.objects.select_related("owner", "submitted_by", "decided_by").prefetch_related(
        "workloads__gpu_model", "items__node_model", "items__gpu_model"
    )
    serializer_class = api.CapacityPlanSerializer
    filterset_fields = ["status", "owner"]

    submit = plan_transition("submit", "Submit a draft plan for approval")
    approve = plan_transition("approve", "Approve a submitted plan (not by its submitter)")
    reject = plan_transition("reject", "Reject a submitted plan, saying why")
    reopen = plan_transition("reopen", "Reopen a rejected plan as a draft")

    def perform_destroy(self, instance):
        try:
            plans.check_editable(instance)
        except DjangoValidationError as error:
            raise Conflict(error.messages[0]) from error
        super().perform_destroy(instance)

    @extend_schema(summary="The bill of materials of an approved plan", request=None,
                   responses={200: api.BillOfMaterialsSerializer,
                              409: OpenApiResponse(description="The plan is not approved.")})
    @action(detail=True, methods=["get"])
    def bom(self, request, pk=None):
        plan = self.get_object()
        if plan.status != CapacityPlan.Status.APPROVED:
            raise Conflict(f"The plan is {plan.get_status_display().lower()}; only an approved plan has a bill "
                           "of materials to order from.")
        return Response(api.BillOfMaterialsSerializer(plans.bill_of_materials(plan)).data)

    @extend_schema(
        summary="Fill a draft plan's bill of materials from a scenario",
        description="Replaces every line (hand-entered ones too; the old lines stay in the history) with the "
                    "scenario's: nodes at the node price the analysis uses, their GPUs (at 0: in the node "
                    "price; listed for the order's deliveries), leaf switches for their fabric ports, storage "
                    "named from the workloads' sizing, and for build the facility; each line's "
                    "description says how its quantity was derived, and the lines add up to the scenario's "
                    "capex (`planning/bom.py`).",
        request=api.BOMFillSerializer,
        responses={200: api.BOMFillResultSerializer,
                   400: OpenApiResponse(description="Refused: not a draft, rent (buys nothing), an unknown "
                                                    "scenario, no gap to fill, or no node model or price; "
                                                    "`detail` (or `scenario`) says why.")})
    @action(detail=True, methods=["post"], url_path="bom/fill", url_name="bom-fill",
            permission_classes=[ChangePermission])
    def fill_bom(self, request, pk=None):
        plan = self.get_object()
        body = api.BOMFillSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            bill, replaced = bom.fill(plan, body.validated_data.get("scenario"))
        except DjangoValidationError as error:
            return Response({"detail": " ".join(error.messages)}, status=status.HTTP_400_BAD_REQUEST)
        answer = {**plans.bill_of_materials(plan), "scenario": bill.kind, "scenario_capex": bill.capex,
                  "replaced_lines": replaced, "notes": bill.notes}
        return Response(api.BOMFillResultSerializer(answer).data)

    @extend_schema(summary="Demand forecast, capacity month by month, the build / expand / rent / hybrid "
                           "scenarios and the recommendation", request=None,
                   responses={200: PlanAnalysisSerializer})
    @action(detail=True, methods=["get"], pagination_class=None, filter_backends=[])
    def analysis(self, request, pk=None):
        return Response(PlanAnalysisSerializer(analysis.as_dict(analysis.analyse(self.get_object()))).data)

    @extend_schema(summary="The plan's workflow history", request=None,
                   responses={200: api.PlanEventSerializer(many=True)})
    @action(detail=True, methods=["get"], pagination_class=None, filter_backends=[])
    def events(self, request, pk=None):
        return Response(api.PlanEventSerializer(self.get_object().events.all(), many=True).data)


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

    queryset = procurement.orders_with_counts()
    serializer_class = api.PurchaseOrderSerializer
    filterset_fields = ["status", "vendor", "plan", "contract", "site", "external_id"]
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
