"""The approved allocations written to Slurm, safely: ``propose`` reads Slurm and stores the difference, the drift and
the warnings as a ``SlurmSync``; ``apply`` runs its changes, once a manager approves it, one ``sacctmgr -i`` call at
a time with compare-and-set and read-back (``inventory.teams.slurm_sync``), recording each; the state read back
afterwards is what the next look compares with to tell a hand edit (drift) from the portal's own.

What the portal manages in Slurm: an account per team with an allocation in force today (its name, its members'
Slurm user names), the team's fair-share weight (the largest of its allocations'), and per allocation its
concurrent-GPU limit (``GrpTRES``) and GPU-hour budget (``GrpTRESMins``, in GPU-minutes): on the account for an
allocation of every partition, on a ``<team>-<partition>`` QOS for one partition, as ``gres/gpu:<type>`` for one GPU
model (``gpu_type``). Nothing else in Slurm is touched.

The commands run through ``runner()``: Slurm's own clients (``SLURM_SACCTMGR``/``SLURM_SCONTROL``, with
``SLURM_CONF`` when set), or in the demo the simulated cluster (``SLURM_SYNC_BACKEND=simulator``).
"""

import functools
import os
import re
import subprocess

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from ..teams import sacctmgr, slurm_checks, slurm_sync
from ..teams.models import Team
from .models import SlurmApplied, SlurmSync, SlurmSyncChange, TeamAllocation

S = SlurmSync.Status


def runner():
    """What runs Slurm's commands: ``subprocess.run`` (with ``SLURM_CONF`` when set), or the demo's simulator."""
    if settings.SLURM_SYNC_BACKEND == "simulator":
        from ..teams import slurm_simulator

        return slurm_simulator.runner()
    if settings.SLURM_CONF:
        return functools.partial(subprocess.run, env={**os.environ, "SLURM_CONF": settings.SLURM_CONF})
    return subprocess.run


def gpu_type(gpu_model):
    """The Slurm GPU type of a catalog model: the first word of its name, lower-cased (``H100 SXM5 80GB`` →
    ``h100``), as sites name it in gres.conf (``Name=gpu Type=h100``; docs/slurm.md)."""
    if gpu_model is None:
        return None
    word = re.split(r"[\s_/-]+", gpu_model.name.strip())[0]
    return word.lower() or None


def desired(today=None):
    """``slurm_sync.Desired`` from the allocations in force ``today`` (local)."""
    today = today or timezone.localdate()
    allocations = (TeamAllocation.objects.filter(start__lte=today, end__gte=today)
                   .select_related("team", "gpu_model").order_by("team__name", "partition", "pk"))
    per_team = {}
    for allocation in allocations:
        per_team.setdefault(allocation.team_id, []).append(allocation)
    teams = Team.objects.filter(pk__in=per_team).prefetch_related("memberships__user").order_by("name")
    accounts = []
    for team in teams:
        granted = per_team[team.pk]
        shares = [a.fairshare for a in granted if a.fairshare]
        accounts.append(slurm_sync.TeamAccount(
            account=team.name, users=sorted({m.slurm_name for m in team.memberships.all()}),
            description=(team.description or team.name).splitlines()[0][:100], organization="portal",
            fairshare=max(shares) if shares else None,
            allocations=[slurm_sync.Allocation(gpus=a.max_gpus, gpu_hours=a.gpu_hours, gpu_type=gpu_type(a.gpu_model),
                                               partition=a.partition or None) for a in granted]))
    return slurm_sync.Desired(settings.SLURM_CLUSTER, accounts)


def as_written(want):
    """The associations and QOSes Slurm will hold once ``want`` (a ``State``) is applied, as ``slurm_checks.check``
    reads them: the warnings are about the budgets a manager is asked to approve, not only those Slurm holds now."""
    associations = [sacctmgr.Association(want.cluster, entity.name, parent=entity.parent, share=entity.fairshare,
                                         grp_tres=entity.grp_tres, grp_tres_mins=entity.grp_tres_mins,
                                         qos=list(entity.qos))
                    for entity in want.entities.values() if entity.kind == "account"]
    qos = [sacctmgr.Qos(entity.name, flags=list(entity.flags), grp_tres=entity.grp_tres,
                        grp_tres_mins=entity.grp_tres_mins)
           for entity in want.entities.values() if entity.kind == "qos"]
    return associations, qos


def last_applied(cluster):
    stored = SlurmApplied.objects.filter(cluster=cluster).first()
    return slurm_sync.State.from_dict(stored.state) if stored and stored.state else None


def read(want, run):
    accounts = sorted(entity.name for entity in want.entities.values() if entity.kind == "account")
    qos = sorted(entity.name for entity in want.entities.values() if entity.kind == "qos")
    return slurm_sync.read_state(want.cluster, accounts, qos, runner=run)


def propose(user=None, today=None):
    """Read Slurm and store what would make it hold the allocations in force: a new ``SlurmSync`` (older proposals
    are superseded). Slurm that cannot be read gives a sync with its ``error`` and no changes, never a 500."""
    wish = desired(today)
    sync = SlurmSync(cluster=wish.cluster, created_by=user, desired=wish.as_dict())
    run = runner()
    try:
        want = slurm_sync.wanted(wish)
        actual = read(want, run)
        before = last_applied(wish.cluster)
        sync.actual = actual.as_dict()
        sync.changes = [change.as_dict() for change in slurm_sync.diff(want, actual, before)]
        sync.drift = [found.as_dict() for found in slurm_sync.drift(before, actual)] if before else []
        partitions = sacctmgr.read_partitions(run)
        sync.warnings = [warning.as_dict() for warning in slurm_checks.check(
            sacctmgr.read_config(run), *as_written(want), partitions, slurm_sync.wanted_tres(wish))]
        sync.billing_weights = slurm_checks.billing_weights(partitions)
    except (sacctmgr.SlurmCommandError, ValueError) as error:
        sync.error = str(error)
    sync.status = S.PROPOSED if sync.changes else S.IN_SYNC
    with transaction.atomic():
        SlurmSync.objects.filter(cluster=wish.cluster, status=S.PROPOSED).update(status=S.SUPERSEDED)
        sync.save()
    return sync


@transaction.atomic
def apply(sync, user):
    """A manager's approval of ``sync``: its changes applied in order (stopping at the first that is not verified),
    each recorded; the state read back becomes the reference for drift. Refused unless it is the latest proposal."""
    sync = SlurmSync.objects.select_for_update().get(pk=sync.pk)
    if not user.has_perm("inventory.apply_slurm_sync"):
        raise PermissionDenied("Only managers apply changes to Slurm.")
    if sync.status != S.PROPOSED:
        raise ValidationError(f"This sync is {sync.get_status_display().lower()}: look at Slurm again and approve "
                              "the new one.")
    run = runner()
    changes = [slurm_sync.Change.from_dict(change) for change in sync.changes]
    results = slurm_sync.apply_all(changes, run)
    for position, result in enumerate(results):
        SlurmSyncChange.objects.create(
            sync=sync, position=position, description=result.change.describe(), command=result.change.command(),
            before=result.change.before, after=result.change.after, status=result.status, read_back=result.read,
            output=result.output[:5000], applied_by=user)
    done = len(results) == len(changes) and all(result.ok for result in results)
    sync.status, sync.approved_by, sync.applied_at = (S.APPLIED if done else S.FAILED), user, timezone.now()
    sync.save()
    try:
        state = read(slurm_sync.wanted(slurm_sync.Desired.from_dict(sync.desired)), run) if sync.desired else None
    except (sacctmgr.SlurmCommandError, ValueError):
        state = None
    if state is None:
        return sync  # the reference stays the last one read; the next look shows what it finds
    SlurmApplied.objects.update_or_create(cluster=sync.cluster, defaults={"state": state.as_dict()})
    return sync
