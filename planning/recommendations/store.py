"""The recommendations written: ``run`` (the entry point: gather, apply the rules, write), accepting and
dismissing one, and the summaries the pages show."""

from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Case, Count, IntegerField, When
from django.utils import timezone

from inventory.models import GPU, LifecycleState
from portal import events

from ..plans import bom, needs, workflow
from ..plans.models import CapacityPlan
from . import gather, rules
from .models import Recommendation

K = Recommendation.Kind
SEV = Recommendation.Severity

FINDING_FIELDS = ("kind", "severity", "title", "summary", "action", "partition", "site_id", "node_model_id",
                  "node_count", "node_price")


def run(now=None, t=rules.THRESHOLDS):
    """Analyse and write: create new recommendations, update open ones with the same key, resolve open ones
    no rule finds any more; skip keys accepted or dismissed within ``snooze_days``. Returns the counts."""
    now = now or timezone.now()
    partitions, nodes = gather.gather(now, t)
    findings = rules.analyse(partitions, nodes, timezone.localdate(now), t, gather.under_used(now, t),
                             gather.reliability(now, t))
    return write(findings, now, t)


ANALYSIS_LOCK = 0x5245_434F  # PostgreSQL advisory lock: one analysis writes at a time ("RECO")


@transaction.atomic
def write(findings, now, t=rules.THRESHOLDS):
    R = Recommendation
    if connection.vendor == "postgresql":  # two runs at once (the task and the button) must not both insert
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [ANALYSIS_LOCK])
    open_recs = {r.key: r for r in R.objects.select_for_update().filter(status=R.Status.OPEN)}
    decided = set(R.objects.filter(status__in=[R.Status.ACCEPTED, R.Status.DISMISSED],
                                   decided_at__gte=now - timedelta(days=t.snooze_days)).values_list("key", flat=True))
    created, updated, skipped, found = [], [], 0, set()
    for finding in findings:
        found.add(finding.key)
        values = {name: getattr(finding, name) for name in FINDING_FIELDS}
        if rec := open_recs.get(finding.key):
            for name, value in values.items():
                setattr(rec, name, value)
            rec.evidence, rec.detected_at, rec.updated = finding.evidence, now, now
            updated.append(rec)
        elif finding.key in decided:
            skipped += 1
        else:
            created.append(R(key=finding.key, evidence=finding.evidence, detected_at=now, **values))
    resolved = [rec for key, rec in open_recs.items() if key not in found]
    for rec in resolved:
        rec.status, rec.updated = R.Status.RESOLVED, now
    R.objects.bulk_create(created)
    for rec in created:  # the notification rules' event (told once the analysis commits)
        events.emit("recommendation.raised", {
            "recommendation_id": rec.pk, "kind": rec.get_kind_display(), "severity": rec.get_severity_display(),
            "title": rec.title, "partition": rec.partition, "site_id": rec.site_id,
        })
    R.objects.bulk_update(updated, [*FINDING_FIELDS, "evidence", "detected_at", "updated"])
    R.objects.bulk_update(resolved, ["status", "updated"])
    return {"created": len(created), "updated": len(updated), "resolved": len(resolved), "skipped": skipped}


def locked_open(rec):
    rec = Recommendation.objects.select_for_update().get(pk=rec.pk)
    if not rec.is_open:
        raise ValidationError(f"This recommendation is {rec.get_status_display().lower()}; only an open one can be "
                              "accepted or dismissed.")
    return rec


def plan_name(rec):
    base = f"{rec.title} (recommendation #{rec.pk})"[:200]
    name, n = base, 1
    while CapacityPlan.objects.filter(name=name).exists():
        n += 1
        name = f"{base[:190]} ({n})"
    return name


def ageing_rows(rec):
    """The nodes an ageing recommendation would replace, as its evidence lists them (hostname, warranty end…)."""
    return needs.evidence_rows(rec.evidence)


def gpu_model_of(rec):
    """The GPU model the recommendation measured (one query): the most common one among the partition's GPUs in
    service, or that of the nodes to replace (ageing) when they share one; None otherwise."""
    if rec.kind == K.AGEING:
        gpus = GPU.objects.filter(node__hostname__in=[row["hostname"] for row in ageing_rows(rec)])
    elif rec.partition:
        gpus = GPU.objects.filter(node__partition=rec.partition, node__state=LifecycleState.IN_SERVICE)
    else:
        return None
    models = list(gpus.exclude(gpu_model=None).values("gpu_model_id").annotate(n=Count("pk"))
                  .order_by("-n", "gpu_model_id")[:2])
    if rec.kind == K.AGEING and len(models) > 1:  # nodes of several models: the plan sizes the site
        return None
    return models[0]["gpu_model_id"] if models else None


@transaction.atomic
def accept(rec, user, comment=""):
    """Turn an open recommendation into a draft capacity plan linked back to it, through the plan workflow (its
    first event says where it came from), scoped to what it measured: its partition, site and the GPU model of the
    partition's GPUs (of the nodes to replace, for ageing), so that the plan's analysis reads the same telemetry.
    The bill of materials is the plan's recommended option's (``planning.plans.bom.fill``), never a count of its
    own; where that option buys nothing (renting, reclaiming, nothing needed) the event says why."""
    rec = locked_open(rec)
    plan = workflow.create(
        user, f"Created from recommendation #{rec.pk} ({rec.get_kind_display()}): {rec.title}.",
        name=plan_name(rec), site_id=rec.site_id, node_model_id=rec.node_model_id, node_price=rec.node_price,
        partition=rec.partition, gpu_model_id=gpu_model_of(rec),
        description=f"From recommendation #{rec.pk} ({rec.get_kind_display()}).\n\n{rec.summary}\n\n"
                    f"Suggested action: {rec.action}" + (f"\n\n{comment}" if comment else ""),
    )
    rec.status, rec.decided_by, rec.decided_at, rec.plan = Recommendation.Status.ACCEPTED, user, timezone.now(), plan
    rec.save(update_fields=["status", "decided_by", "decided_at", "plan", "updated"])
    if rec.kind in (K.CAPACITY, K.AGEING):  # the kinds whose need may be more GPUs
        try:
            bill, _ = bom.fill(plan)
            said = f"Bill of materials: the recommended option's ({bill.label.lower()}), {len(bill.lines)} lines."
        except ValidationError as error:
            said = "No bill of materials: " + " ".join(error.messages)
        workflow.note(plan, user, said)
    return rec


@transaction.atomic
def dismiss(rec, user, reason):
    """Dismiss an open recommendation; the reason is required."""
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError("Say why the recommendation is dismissed (reason).")
    rec = locked_open(rec)
    rec.status, rec.decided_by, rec.decided_at = Recommendation.Status.DISMISSED, user, timezone.now()
    rec.dismiss_reason = reason
    rec.save(update_fields=["status", "decided_by", "decided_at", "dismiss_reason", "updated"])
    return rec


def severity_rank():
    """An expression ordering recommendations most severe first."""
    return Case(When(severity=SEV.HIGH, then=0), When(severity=SEV.MEDIUM, then=1), default=2,
                output_field=IntegerField())


def open_summary(limit=5):
    """For the home dashboard: the most severe open recommendations and how many are open (two queries)."""
    rows = Recommendation.objects.filter(status=Recommendation.Status.OPEN)
    return {"count": rows.count(),
            "items": list(rows.select_related("site").order_by(severity_rank(), "-detected_at", "-pk")[:limit])}
