"""A month's statements computed from the jobs (plain Python over the figures' own functions; ``issuing`` stores them).

- Usage: allocated GPU-hours per (team, Slurm user, partition, GPU model) of the month, as
  ``inventory.telemetry.allocation.clipped_gpu_time`` defines them (the rollup behind ``/api/inventory/allocations/``
  equals it for any window), split per node and each node's GPU model (``goodput.queries.node_models``; a job on
  hosts the inventory does not know has no model). So a team's GPU-hours are ``allocation_rollup.allocated(start, end,
  now, None, account=team)``, and all statements of a month, "no team" included, add up to the fleet's.
- Credit: the GPU-hours the infrastructure's interruptions that ended in the month cost the team (lost work inside
  the month since the last checkpoint, plus the restart wait), as the goodput page counts them over the month
  (``goodput.queries.piece_sums``, each interruption split over its job's nodes), per partition and GPU model.
- Both priced at the card in effect on the month's first day (``pricing``); the credit is subtracted.
- Adjustments not yet on a statement land on the team's next one.

Jobs whose account is no team's name are "no team" (``team`` None): their statement is issued, never e-mailed.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

from inventory.goodput import attribution
from inventory.goodput.queries import LOST_WAIT, interruptions, lost_run, node_models, piece_sums
from inventory.models import GPUModel, Team
from inventory.telemetry import allocation
from inventory.telemetry.models import SlurmJob
from inventory.telemetry.queries import calendar_month

from .models import Adjustment, StatementLine
from .pricing import Prices, amount, card_for, hours, money

USAGE_BY = ("account", "user", "partition", "node")


@dataclass
class Line:
    kind: str
    partition: str
    gpu_model_id: int | None
    gpu_model_name: str
    user: str
    gpu_hours: Decimal
    price_per_gpu_hour: Decimal
    amount: Decimal


@dataclass
class Draft:
    """One team's statement before it is stored: lines, pending adjustments and totals."""

    team: Team | None
    lines: list = field(default_factory=list)
    adjustments: list = field(default_factory=list)
    exact_gpu_hours: float = 0.0  # before rounding: the allocation figure itself

    def usage(self):
        return [line for line in self.lines if line.kind == StatementLine.Kind.USAGE]

    def credits(self):
        return [line for line in self.lines if line.kind == StatementLine.Kind.CREDIT]

    @property
    def gpu_hours(self):
        return sum((line.gpu_hours for line in self.usage()), Decimal("0"))

    @property
    def charges(self):
        return sum((line.amount for line in self.usage()), Decimal("0"))

    @property
    def credit_gpu_hours(self):
        return sum((line.gpu_hours for line in self.credits()), Decimal("0"))

    @property
    def credit(self):
        return -sum((line.amount for line in self.credits()), Decimal("0"))

    @property
    def adjustment_total(self):
        return money(sum((row.amount for row in self.adjustments), Decimal("0")))

    @property
    def total(self):
        return self.charges - self.credit + self.adjustment_total


def usage(start, end, now):
    """``{(account, user, partition, GPU model id): allocated GPU-hours}`` of the jobs in [start, end) (three queries
    for the hours, one for the nodes' models)."""
    per_node = allocation.clipped_gpu_time(SlurmJob.objects.all(), start, end, now, USAGE_BY)
    models = node_models({key[3] for key in per_node})
    found = defaultdict(float)
    for (account, user, partition, node), row in per_node.items():
        found[(account or "", user or "", partition or "", models.get(node))] += row["gpu_hours"]
    return found


def lost(start, end):
    """``{(account, partition, GPU model id): lost GPU-hours}`` of the infrastructure's interruptions that ended in
    [start, end): their lost work inside [start, end] and restart wait (module docstring). One query per team and
    partition that had one."""
    rows = interruptions(None, start).filter(ended_at__lt=end, cause=attribution.INFRASTRUCTURE)
    pairs = rows.values_list("account", "partition").distinct().order_by()
    per_node = defaultdict(float)
    for account, partition in pairs:
        for node, _cost, run, wait in piece_sums(rows.filter(account=account, partition=partition),
                                                 {"run": lost_run(start), "wait": LOST_WAIT}):
            per_node[(account, partition, node)] += (run or 0.0) + (wait or 0.0)
    models = node_models({key[2] for key in per_node})
    found = defaultdict(float)
    for (account, partition, node), value in per_node.items():
        found[(account or "", partition or "", models.get(node))] += value
    return found


def build(month, now):
    """The drafts of ``month`` (its first day), one per team with GPU time, adjustments or a credit in it, and one
    for no team when jobs of no team ran: ``(card, {team name or None: Draft}, fleet GPU-hours)``."""
    start, end = calendar_month(month)
    card = card_for(month)
    prices = Prices.of(card)
    teams = {team.name: team for team in Team.objects.all()}
    model_names = dict(GPUModel.objects.values_list("pk", "name"))
    drafts = {}

    def draft(account):
        name = account if account in teams else None
        if name not in drafts:
            drafts[name] = Draft(teams.get(name))
        return drafts[name]

    fleet = 0.0
    for (account, user, partition, model), value in sorted(usage(start, end, now).items(), key=_order):
        fleet += value
        target = draft(account)
        target.exact_gpu_hours += value
        price = prices.price(model, partition)
        target.lines.append(Line(StatementLine.Kind.USAGE, partition, model, model_names.get(model, ""), user,
                                 hours(value), price, amount(value, price)))
    for (account, partition, model), value in sorted(lost(start, end).items(), key=_order):
        if hours(value) == 0:
            continue
        price = prices.price(model, partition)
        draft(account).lines.append(Line(StatementLine.Kind.CREDIT, partition, model, model_names.get(model, ""), "",
                                         hours(value), price, -amount(value, price)))
    for row in Adjustment.objects.filter(statement__isnull=True, corrects__lt=month).select_related("team"):
        draft(row.team.name).adjustments.append(row)
    return card, drafts, fleet


def _order(item):
    return tuple("" if part is None else str(part) for part in item[0])
