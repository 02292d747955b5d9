"""Capacity plans over REST: the plan with its workloads and bill of materials, the workflow's actions, the bill of
materials of an approved plan (filled from a scenario while draft), the analysis and the workflow's history."""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.generics import get_object_or_404
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from portal.api.exceptions import Conflict
from portal.api.viewsets import ChangePermission, PortalModelViewSet, changes_object

from .. import analysis, bom, workflow
from ..models import CapacityPlan, PlanItem
from ..summary import analyse_and_store
from . import serializers as api


def plan_transition(name, summary):
    """The ``POST {id}/<name>/`` action of a plan: ``plans.<name>(plan, user, comment)``; 400 with the reason
    when the plan's status (or the user) does not allow it."""

    def transition(self, request, pk=None):
        body = api.PlanCommentSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            plan = workflow.TRANSITIONS[name](self.get_object(), request.user, body.validated_data["comment"])
        except DjangoValidationError as error:
            return Response({"detail": error.messages[0]}, status=status.HTTP_400_BAD_REQUEST)
        return Response(self.get_serializer(self.get_queryset().get(pk=plan.pk)).data)

    transition.__name__ = name
    transition = changes_object(transition)
    schema = extend_schema(summary=summary, request=api.PlanCommentSerializer,
                           responses={200: api.CapacityPlanSerializer,
                                      400: OpenApiResponse(description="Not allowed now; `detail` says why.")})
    return schema(action(detail=True, methods=["post"], permission_classes=[ChangePermission])(transition))


class CapacityPlanViewSet(PortalModelViewSet):
    """Capacity plans with their workloads (sized: GPU-hours) and bill of materials. Created, changed and
    deleted only while draft; then submitted, approved by a second manager (not the submitter) or rejected
    (with a comment), and a rejected plan reopened as a draft. Approval emits the `plan.approved` webhook."""

    queryset = CapacityPlan.objects.select_related("owner", "submitted_by", "decided_by").prefetch_related(
        "workloads__gpu_model", "items__node_model", "items__gpu_model", "items__price_confirmed_by"
    )
    serializer_class = api.CapacityPlanSerializer
    filterset_fields = ["status", "owner"]

    submit = plan_transition("submit", "Submit a draft plan for approval")
    approve = plan_transition("approve", "Approve a submitted plan (not by its submitter)")
    reject = plan_transition("reject", "Reject a submitted plan, saying why")
    reopen = plan_transition("reopen", "Reopen a rejected plan as a draft")

    def perform_destroy(self, instance):
        try:
            workflow.check_editable(instance)
        except DjangoValidationError as error:
            raise Conflict(error.messages[0]) from error
        super().perform_destroy(instance)

    @extend_schema(summary="Add a workload to a draft plan",
                   description="One planned workload (e.g. the inputs of `POST /api/planning/sizing/`, the GPU model "
                               "as its id) added to the plan; the others stay. To start a new plan with it, "
                               "`POST /api/planning/plans/` with `workloads`.",
                   request=api.PlanWorkloadSerializer,
                   responses={201: api.PlanWorkloadSerializer,
                              400: OpenApiResponse(description="Invalid inputs (field errors), or the plan is not a "
                                                               "draft (`detail`).")})
    @action(detail=True, methods=["post"], url_path="workloads", url_name="workloads",
            permission_classes=[ChangePermission])
    @changes_object
    def add_workload(self, request, pk=None):
        with transaction.atomic():  # the plan locked: it cannot be submitted halfway through
            plan = CapacityPlan.objects.select_for_update().get(pk=self.get_object().pk)
            try:
                workflow.check_editable(plan)
            except DjangoValidationError as error:
                return Response({"detail": error.messages[0]}, status=status.HTTP_400_BAD_REQUEST)
            context = {**self.get_serializer_context(), "plan": plan}
            body = api.PlanWorkloadSerializer(data=request.data, context=context)
            body.is_valid(raise_exception=True)
            workload = body.save(plan=plan)
        return Response(api.PlanWorkloadSerializer(workload, context=context).data, status=status.HTTP_201_CREATED)

    @extend_schema(summary="The bill of materials of an approved plan", request=None,
                   responses={200: api.BillOfMaterialsSerializer,
                              409: OpenApiResponse(description="The plan is not approved.")})
    @action(detail=True, methods=["get"])
    def bom(self, request, pk=None):
        plan = self.get_object()
        if plan.status != CapacityPlan.Status.APPROVED:
            raise Conflict(f"The plan is {plan.get_status_display().lower()}; only an approved plan has a bill "
                           "of materials to order from.")
        return Response(api.BillOfMaterialsSerializer(workflow.bill_of_materials(plan)).data)

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
    @changes_object
    def fill_bom(self, request, pk=None):
        plan = self.get_object()
        body = api.BOMFillSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            bill, replaced = bom.fill(plan, body.validated_data.get("scenario"))
        except DjangoValidationError as error:
            return Response({"detail": " ".join(error.messages)}, status=status.HTTP_400_BAD_REQUEST)
        answer = {**workflow.bill_of_materials(plan), "scenario": bill.kind, "scenario_capex": bill.capex,
                  "replaced_lines": replaced, "notes": bill.notes}
        return Response(api.BOMFillResultSerializer(answer).data)

    @extend_schema(
        summary="Confirm an estimated price of the plan's bill of materials",
        description="Records who confirmed the line's unit cost and when (`planning/plans/bom.py` `confirm_price`): "
                    "managers and procurement. `unit_cost` confirms at another price (a draft plan only).",
        request=api.PriceConfirmSerializer,
        parameters=[OpenApiParameter("item_id", int, OpenApiParameter.PATH, description="The line's id.")],
        responses={200: api.PlanItemSerializer,
                   400: OpenApiResponse(description="Not an estimate (confirmed already or entered), or a new "
                                                    "price on a plan that is not a draft; `detail` says why."),
                   403: OpenApiResponse(description="Neither a manager nor procurement.")})
    @action(detail=True, methods=["post"], url_path=r"items/(?P<item_id>[^/.]+)/confirm-price",
            url_name="item-confirm-price", permission_classes=[IsAuthenticated])
    @changes_object
    def confirm_price(self, request, pk=None, item_id=None, **kwargs):
        if not request.user.has_perm("planning.confirm_bom_price"):  # before the lookup: a 403, never a 404
            raise PermissionDenied("Only those who edit plans, or procurement, confirm a price.")
        body = api.PriceConfirmSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        if not (item_id.isascii() and item_id.isdigit() and len(item_id) < 12):  # "²" is a digit to Python
            raise NotFound("No such line.")
        item = get_object_or_404(PlanItem, pk=item_id, plan=self.get_object())
        try:
            item = bom.confirm_price(item, request.user, body.validated_data.get("unit_cost"))
        except DjangoValidationError as error:
            return Response({"detail": " ".join(error.messages)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(api.PlanItemSerializer(item, context=self.get_serializer_context()).data)

    @extend_schema(summary="Demand forecast, capacity month by month, the build / expand / rent / hybrid "
                           "scenarios and the recommendation", request=None,
                   responses={200: api.PlanAnalysisSerializer})
    @action(detail=True, methods=["get"], pagination_class=None, filter_backends=[])
    def analysis(self, request, pk=None):
        return Response(api.PlanAnalysisSerializer(analysis.as_dict(analyse_and_store(self.get_object()))).data)

    @extend_schema(summary="The plan's workflow history", request=None,
                   responses={200: api.PlanEventSerializer(many=True)})
    @action(detail=True, methods=["get"], pagination_class=None, filter_backends=[])
    def events(self, request, pk=None):
        return Response(api.PlanEventSerializer(self.get_object().events.all(), many=True).data)
