"""Capacity plan pages: list, detail, add/edit, the workflow's actions, workloads and bill-of-materials lines, and
the analysis."""

from django.urls import path

from portal.generic import object_urls

from . import workflow
from .models import CapacityPlan
from .views import (
    PARTS,
    CapacityPlanAnalysisView,
    CapacityPlanEditView,
    CapacityPlanListView,
    CapacityPlanTransitionView,
    CapacityPlanView,
    PlanBOMFillView,
    PlanItemConfirmPriceView,
    PlanPartDeleteView,
    PlanPartEditView,
    PlanSectionView,
)


def part_urls():
    """``<pk>/workloads/`` (the section), ``<pk>/workloads/add/``, ``<pk>/workloads/<id>/edit/`` and ``.../delete/``,
    the same for ``items``; named ``capacityplan_workloads``, ``capacityplan_workload_add``, ..."""
    urls = []
    for part in PARTS:
        edit = PlanPartEditView.as_view(part=part)
        urls += [
            (f"<int:pk>/{part.name}/", PlanSectionView.as_view(part=part), part.name),
            (f"<int:pk>/{part.name}/add/", edit, f"{part.singular}_add"),
            (f"<int:pk>/{part.name}/<int:part_pk>/edit/", edit, f"{part.singular}_edit"),
            (f"<int:pk>/{part.name}/<int:part_pk>/delete/", PlanPartDeleteView.as_view(part=part),
             f"{part.singular}_delete"),
        ]
    return urls


urlpatterns = [
    *object_urls(CapacityPlan, CapacityPlanListView, CapacityPlanView, edit_view=CapacityPlanEditView.as_view(), extra=[
        (f"<int:pk>/{action}/", CapacityPlanTransitionView.as_view(action=action), action)
        for action in workflow.TRANSITIONS
    ] + part_urls() + [("<int:pk>/bom/fill/", PlanBOMFillView.as_view(), "bom_fill"),
                       ("<int:pk>/items/<int:part_pk>/confirm-price/", PlanItemConfirmPriceView.as_view(),
                        "item_confirm_price")]),
    path("capacity-plans/<int:pk>/analysis/", CapacityPlanAnalysisView.as_view(), name="capacityplan_analysis"),
]
