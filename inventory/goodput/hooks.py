"""What other apps tell goodput, registered when they start (inventory depends on no other app):

- a *checkpoint provider* (planning, from a plan's workloads): ``provider(accounts) -> {account: minutes}``, the
  checkpoint interval of the teams' workloads where a plan knows it; the others get
  ``settings.GOODPUT_CHECKPOINT_MINUTES``;
- a *ticket finder* (support): ``finder(interruptions) -> {interruption pk: {"id", "title", "url"}}``, the ticket
  opened for each interruption's fault, for the interruptions list. One call per page: it must read the tickets of
  all of them in a fixed number of queries. It reads only ``TICKET_LOOKUPS`` of a row (the API passes ``.values()``
  rows read as attributes, the pages model instances).

Registering the same function twice is harmless.
"""

from django.conf import settings

TICKET_LOOKUPS = ("pk", "fault_ts", "gpu_id", "node_id", "xid_event_id", "transition_id")  # what a finder reads
_checkpoint_providers = []
_ticket_finders = []


def register_checkpoint_provider(provider):
    if provider not in _checkpoint_providers:
        _checkpoint_providers.append(provider)
    return provider


def register_ticket_finder(finder):
    if finder not in _ticket_finders:
        _ticket_finders.append(finder)
    return finder


def checkpoint_minutes(accounts):
    """{account: checkpoint interval in minutes} for every one of ``accounts``: a provider's, else the default."""
    accounts = set(accounts)
    minutes = dict.fromkeys(accounts, settings.GOODPUT_CHECKPOINT_MINUTES)
    for provider in _checkpoint_providers:
        minutes.update({account: value for account, value in provider(accounts).items()
                        if account in accounts and value})
    return minutes


def tickets(interruptions):
    """{interruption pk: ticket} from the registered finders; {} when none is registered (support not installed)."""
    found = {}
    for finder in _ticket_finders:
        found.update(finder(interruptions))
    return found
