"""Who may do what with allocations (see ``portal.policy``; the inventory's rules are in ``inventory.policy``).

- ``inventory.read_allocation``: given a team's allocation (or request), whether the user may read it: every one for
  the roles that read the whole fleet, a researcher their own teams' (``user.teams``); given none, whether the user
  may read some (the first check of a page, the menu): those roles and researchers (without a team: an empty list).
  ``TeamAllocation`` and ``AllocationRequest`` lists apply ``visible``, this rule as a query.
- ``inventory.request_allocation``: given a team, ask for a new allocation, a change or a renewal of one of its
  allocations: managers and admins (``inventory.add_allocationrequest``) for any team, a team's own managers
  (``TeamMember.role`` manager) for theirs.
- ``inventory.decide_allocation_request``: approve or reject a pending request: managers and admins
  (``inventory.change_teamallocation``), never its requester (four eyes), and an approval only once per manager;
  a request over ``ALLOCATION_SECOND_APPROVAL_GPU_HOURS`` needs two of them. ``workflow`` checks it again on the
  request's row once locked.
- ``inventory.withdraw_allocation_request``: its requester, or a manager.
- ``inventory.apply_slurm_sync``: look at Slurm, approve and apply a sync's changes (``sync``): managers and admins.
  Its page is read by those who read every team's allocations.
"""

import rules
from django.db.models import Q

from portal.policy import has_model_perm
from portal.roles import RESEARCHER

from ..policy import manages_team, reads_whole_fleet
from .models import AllocationRequest


def visible(queryset, user):
    """``queryset`` (allocations or requests) as ``inventory.read_allocation`` lets ``user`` read it."""
    if not user.is_authenticated:
        return queryset.none()
    if reads_whole_fleet(user):
        return queryset
    return queryset.filter(Q(team__in=user.teams.all()))


def awaiting_decision(queryset, user):
    """The requests of ``queryset`` that ``user`` may decide now: ``inventory.decide_allocation_request`` as a query
    (pending, asked by someone else, not yet approved by this manager), for the home page's "awaiting your
    decision" and the request list's filter alike."""
    if not approves_allocations(user):
        return queryset.none()
    return (queryset.filter(status=AllocationRequest.Status.PENDING).exclude(requested_by=user)
            .exclude(approvals__user=user))


def may_act_on_requests(user):
    """Whether ``user`` may ever ask for, decide or withdraw a request (managers, admins and the teams' own managers):
    checked before a request is looked up, so that everyone else gets a 403, never a 404 that tells ids apart."""
    return user.is_authenticated and (user.has_perm("inventory.change_teamallocation")
                                      or user.has_perm("inventory.add_allocationrequest")
                                      or user.team_memberships.filter(role="manager").exists())


@rules.predicate
def of_own_team(user, row):
    """The allocation's (or request's) team is one of the user's; given none, whether the user is a researcher (who
    reads their teams' allocations, none without a team): no query, as the menu asks it on every page."""
    if not user.is_authenticated:
        return False
    if row is None:
        return is_researcher(user)
    return user.teams.filter(pk=row.team_id).exists()


is_researcher = rules.is_group_member(RESEARCHER)


@rules.predicate
def not_its_requester(user, request):
    return request is None or request.requested_by_id != user.pk


@rules.predicate
def not_yet_approved_by(user, request):
    return request is None or not request.approvals.filter(user=user).exists()


@rules.predicate
def its_requester(user, request):
    return request is not None and request.requested_by_id == user.pk


@rules.predicate
def pending(user, request):
    return request is None or request.is_pending


approves_allocations = has_model_perm("inventory.change_teamallocation")

rules.add_perm("inventory.read_allocation", reads_whole_fleet | of_own_team)
rules.add_perm("inventory.request_allocation", has_model_perm("inventory.add_allocationrequest") | manages_team)
rules.add_perm("inventory.decide_allocation_request",
               approves_allocations & not_its_requester & not_yet_approved_by & pending)
rules.add_perm("inventory.apply_slurm_sync", approves_allocations)  # look at Slurm, approve and apply a diff
rules.add_perm("inventory.withdraw_allocation_request", (its_requester | approves_allocations) & pending)
