"""Who may do what with tickets: each rule a named predicate, registered as a ``support.<action>`` permission
(see ``portal.policy``). Rules given a ticket (``user.has_perm("support.read_ticket", ticket)``) decide on that
ticket; the same rules without one say whether the user may do it on any ticket at all (the page's and the API's
first check, before the ticket is looked up).

- readers of every ticket (``view_ticket``: viewers, procurement, support, managers, admins) and researchers
  (``add_ticket``: their own and their teams' tickets, ``Ticket.objects.visible_to`` being the same rule as a
  query);
- support staff (``work_ticket``) read and write internal comments, triage, assign, and make every status move
  (``support.workflow`` says which moves a requester may make); with ``change_ticket`` they edit tickets;
- an RMA swap also changes nodes and GPUs; returning an asset to service, that asset's model.
"""

import rules

from inventory.policy import changes_asset
from portal.policy import has_model_perm

reads_every_ticket = has_model_perm("support.view_ticket")
reports_problems = has_model_perm("support.add_ticket")
comments = has_model_perm("support.add_ticketcomment")
works_tickets = has_model_perm("support.work_ticket")
edits_tickets = works_tickets & has_model_perm("support.change_ticket")
swaps_parts = edits_tickets & has_model_perm("inventory.change_gpu") & has_model_perm("inventory.change_node")


def is_requester(user, ticket):
    return ticket.requester_id is not None and ticket.requester_id == user.pk


# Without a ticket these say "on some ticket": the first check of a page or an API call, before the lookup.
@rules.predicate
def own_ticket(user, ticket):
    """The user's own ticket or their team's."""
    return ticket is None or is_requester(user, ticket) or (
        ticket.team_id is not None and user.teams.filter(pk=ticket.team_id).exists())


@rules.predicate
def requested_ticket(user, ticket):
    return ticket is None or is_requester(user, ticket)


@rules.predicate
def names_node(user, ticket):
    """The part swapped is the ticket's node or one of its GPUs."""
    return ticket is None or ticket.node_id is not None


reads_ticket = reads_every_ticket | (reports_problems & own_ticket)

rules.add_perm("support.read_ticket", reads_ticket)  # the ticket pages and API, a ticket's attachments
rules.add_perm("support.read_every_ticket", reads_every_ticket)  # metrics, every team's and user's name in filters
rules.add_perm("support.open_ticket", reports_problems)
rules.add_perm("support.work_tickets", works_tickets)  # support staff: assignable, first response, triage
rules.add_perm("support.internal_comments", works_tickets)  # read and write them (and their attachments)
rules.add_perm("support.edit_ticket", edits_tickets)  # fields, priority, assignee, RMA number
rules.add_perm("support.change_status", works_tickets | (reports_problems & requested_ticket))  # which: workflow
rules.add_perm("support.post_comment", comments & reads_ticket)
rules.add_perm("support.rma_swap", swaps_parts & names_node)
rules.add_perm("support.return_to_service", edits_tickets & changes_asset)  # object: the node or GPU
