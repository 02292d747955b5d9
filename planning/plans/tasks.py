"""The plan list's summaries kept current: a change to a plan, its workloads or its bill of materials touches the
plan's ``updated`` and queues ``refresh_plan_summary`` once the change is committed (``planning.plans.summary``)."""

import logging

from celery import shared_task
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.utils import timezone

from portal.tasks import enqueue

from .models import CapacityPlan, PlanItem, PlanWorkload

log = logging.getLogger(__name__)


@shared_task(name="planning.plans.refresh_plan_summary")
def refresh_plan_summary(plan_id):
    """Analyse the plan and store its summary, unless it is gone or a later analysis already covers its last
    change (several edits of one request queue it several times: the first does the work)."""
    from .summary import analyse_and_store, is_stale

    plan = CapacityPlan.objects.select_related("site", "node_model").filter(pk=plan_id).first()
    if plan is None or (plan.summary_at and not is_stale(plan)):
        return False
    analyse_and_store(plan)
    log.info("Refreshed the summary of plan %s", plan_id)
    return True


def plan_changed(plan_id):
    """Queue the refresh of the plan's summary for when the current transaction commits."""
    transaction.on_commit(lambda: enqueue(refresh_plan_summary, plan_id))


@receiver(post_save, sender=CapacityPlan, dispatch_uid="plan_summary_plan")
def _plan_saved(sender, instance, **kwargs):
    if not kwargs.get("raw"):  # not while loading fixtures
        plan_changed(instance.pk)


@receiver([post_save, post_delete], sender=PlanWorkload, dispatch_uid="plan_summary_workload")
@receiver([post_save, post_delete], sender=PlanItem, dispatch_uid="plan_summary_item")
def _line_saved(sender, instance, **kwargs):
    if kwargs.get("raw"):
        return
    # The plan changed with its line: its ``updated`` says so (the list's "changed since", the API's ETag).
    CapacityPlan.objects.filter(pk=instance.plan_id).update(updated=timezone.now())
    plan_changed(instance.plan_id)
