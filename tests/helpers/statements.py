"""A small fleet with October 2026's jobs for the statement tests, whose figures are worked out by hand below, and
makers of rate cards and statements (the battery's)."""

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from inventory.goodput.models import Interruption
from inventory.models import SlurmJob, SlurmJobNode, TelemetrySource
from inventory.statements.issuing import issue_month
from inventory.statements.models import Rate, RateCard
from inventory.telemetry import allocation, allocation_rollup
from tests.factories import TeamFactory, make_gpu, make_gpu_model, make_node

OCTOBER, SEPTEMBER = date(2026, 10, 1), date(2026, 9, 1)
NOW = datetime(2026, 11, 5, 12, tzinfo=UTC)


def at(day, hour=0, month=10):
    return datetime(2026, month, day, hour, tzinfo=UTC)


# The October jobs (the tests' time zone is UTC): job, account, user, partition, node (None: a host the inventory
# does not know), GPUs, start, end, and their allocated GPU-hours in October:
#  1 vision  alice infer n1 (H100) 2 GPUs 30 Sep 22:00 -> 1 Oct 04:00    2 × 4  =  8 (and 4 in September)
#  2 vision  alice train n1 (H100) 8 GPUs  1 Oct 04:00 -> 1 Oct 14:00    8 × 10 = 80 (interrupted: 6 lost)
#  3 vision  bob   infer n2 (A100) 4 GPUs 10 Oct 00:00 -> 10 Oct 05:00   4 × 5 = 20, less 4 overbooked = 16
#  4 speech  carol train n2 (A100) 4 GPUs 10 Oct 00:00 -> 10 Oct 02:00   4 × 2 = 8, less 4 overbooked = 4
#  5 speech  carol train n1 (H100) 4 GPUs 31 Oct 20:00 -> 1 Nov 02:00    4 × 4 = 16 (and 8 in November)
#  6 (none)  dave  train unknown   1 GPU   5 Oct 00:00 -> 5 Oct 03:00    1 × 3 = 3
#  7 physics erin  infer n2 (A100) 2 GPUs 20 Oct 00:00 -> 20 Oct 06:00   2 × 6 = 12  (physics is no team)
# Job 2 starts when job 1 ends: n1's 8 GPUs are never overbooked. n2 holds 4 GPUs: jobs 3 and 4 held 8 from 00:00
# to 02:00 on 10 Oct, each held 4 × (8 - 4) / 8 = 2 beyond its share for 2 hours: 4 GPU-hours each that n2 could
# not give.
JOBS = [
    ("1", "vision", "alice", "infer", "n1", 2, at(30, 22, month=9), at(1, 4)),
    ("2", "vision", "alice", "train", "n1", 8, at(1, 4), at(1, 14)),
    ("3", "vision", "bob", "infer", "n2", 4, at(10, 0), at(10, 5)),
    ("4", "speech", "carol", "train", "n2", 4, at(10, 0), at(10, 2)),
    ("5", "speech", "carol", "train", "n1", 4, at(31, 20), at(1, 2, month=11)),
    ("6", "", "dave", "train", None, 1, at(5, 0), at(5, 3)),
    ("7", "physics", "erin", "infer", "n2", 2, at(20, 0), at(20, 6)),
]

# The card of 2026 (the earlier and later cards must not price October):
#   default 2.00; H100 any partition 3.00; partition infer any model 1.50; H100 in infer 2.50.
# Vision:  alice infer H100   8 h × 2.50 =  20.00
#          alice train H100  80 h × 3.00 = 240.00
#          bob   infer A100  16 h × 1.50 =  24.00   (A100 has no rate: partition infer's)
#          credit train H100  6 h × 3.00 = -18.00  (job 2's interruption: 4 h lost work + 2 h restart wait)
#          = 104 GPU-hours, charges 284.00, credit 18.00, total 266.00
# Speech:  carol train A100   4 h × 2.00 =   8.00   (neither A100 nor train has a rate: the default)
#          carol train H100  16 h × 3.00 =  48.00
#          = 20 GPU-hours, 56.00 (51.00 with the adjustment of -5.00 to September)
# No team: dave train (no model) 3 h × 2.00 = 6.00; erin infer A100 12 h × 1.50 = 18.00: 15 GPU-hours, 24.00
# Fleet: 104 + 20 + 15 = 139 GPU-hours in October.
EXPECTED = {
    "vision": {"gpu_hours": Decimal("104"), "charges": Decimal("284.00"), "credit_gpu_hours": Decimal("6"),
               "credit": Decimal("18.00"), "total": Decimal("266.00")},
    "speech": {"gpu_hours": Decimal("20"), "charges": Decimal("56.00"), "credit_gpu_hours": Decimal("0"),
               "credit": Decimal("0.00"), "total": Decimal("56.00")},
    None: {"gpu_hours": Decimal("15"), "charges": Decimal("24.00"), "credit_gpu_hours": Decimal("0"),
           "credit": Decimal("0.00"), "total": Decimal("24.00")},
}
FLEET_OCTOBER = 139.0


def make_rate_card(effective_from=date(2026, 1, 1), rates=None, **kw):
    card = RateCard.objects.create(effective_from=effective_from, **kw)
    for (model, partition), price in (rates or {(None, ""): "2.00"}).items():
        Rate.objects.create(card=card, gpu_model=model, partition=partition, price_per_gpu_hour=Decimal(price))
    return card


def make_fleet(members=()):
    """The fleet, jobs, interruption and rate cards above; returns a dict of what the tests name."""
    h100, a100 = make_gpu_model(name="H100 SXM"), make_gpu_model(name="A100 SXM")
    n1, n2 = make_node(hostname="n1"), make_node(hostname="n2")
    for _ in range(8):
        make_gpu(node=n1, gpu_model=h100)
    for _ in range(4):
        make_gpu(node=n2, gpu_model=a100)
    vision = TeamFactory(name="vision", members=list(members), email="vision@example.org")
    speech = TeamFactory(name="speech")
    source = TelemetrySource.objects.create(name="slurm", kind="slurm", url="http://slurm/slurmdb/v0.0.40/jobs")
    nodes = {"n1": n1, "n2": n2}
    jobs = {}
    for job_id, account, user, partition, host, gpus, start, end in JOBS:
        jobs[job_id] = SlurmJob.objects.create(
            source=source, job_id=job_id, account=account, user=user, partition=partition, gpus=gpus, node_count=1,
            submit_time=start - timedelta(minutes=5), start_time=start, end_time=end, state="COMPLETED",
            nodes=host or "ghost")
        SlurmJobNode.objects.create(job=jobs[job_id], host=host or "ghost", node=nodes.get(host), gpus=gpus)
    jobs["2"].state = "NODE_FAIL"
    jobs["2"].save()
    allocation.rebalance([n1.pk, n2.pk], at(1, month=9), NOW)
    allocation_rollup.rebuild()
    Interruption.objects.create(
        job=jobs["2"], state="NODE_FAIL", started_at=at(1, 4), ended_at=at(1, 14), gpus=8, account="vision",
        partition="train", cause=Interruption.Cause.INFRASTRUCTURE, reason="node_fail", node=n1,
        lost_run_gpu_hours=4.0, restart_wait_hours=0.25, lost_wait_gpu_hours=2.0, lost_gpu_hours=6.0)
    make_rate_card(date(2025, 1, 1), {(None, ""): "9.00"}, note="older")
    card = make_rate_card(date(2026, 1, 1), {(None, ""): "2.00", (h100, ""): "3.00", (None, "infer"): "1.50",
                                             (h100, "infer"): "2.50"}, note="2026")
    make_rate_card(date(2026, 11, 1), {(None, ""): "7.00"}, note="later")
    return {"h100": h100, "a100": a100, "n1": n1, "n2": n2, "vision": vision, "speech": speech, "card": card,
            "jobs": jobs, "source": source}


def issued_statement(team=None, month=OCTOBER):
    """A statement issued for ``team`` (a name) on a fresh card and job (the battery's maker)."""
    from inventory.models import Team
    from inventory.statements.models import Statement

    if not RateCard.objects.filter(effective_from__lte=month).exists():
        make_rate_card(date(2000, 1, 1))
    issue_month(month, now=NOW)
    return Statement.objects.filter(month=month, team=Team.objects.filter(name=team).first()).first()


def make_rate_cards(n):
    """``n`` rate cards, a day apart after the latest, each with a default rate (the battery's maker)."""
    latest = RateCard.objects.order_by("-effective_from").values_list("effective_from", flat=True).first()
    first = (latest or date(1990, 1, 1)) + timedelta(days=1)
    cards = RateCard.objects.bulk_create(RateCard(effective_from=first + timedelta(days=i), note=f"card {i}")
                                         for i in range(n))
    Rate.objects.bulk_create(Rate(card=card, price_per_gpu_hour=Decimal("2.00")) for card in cards)
    return cards


def make_statements(n):
    """``n`` issued months before 1990, each with a "no team" statement of two lines (the battery's maker)."""
    from inventory.statements.models import ClosedMonth, Statement, StatementLine

    card = RateCard.objects.filter(effective_from=date(1900, 1, 1)).first() or make_rate_card(date(1900, 1, 1))
    earliest = ClosedMonth.objects.order_by("month").values_list("month", flat=True).first() or date(1990, 1, 1)
    months = []
    for _ in range(n):
        earliest = (earliest - timedelta(days=1)).replace(day=1)
        months.append(earliest)
    closed = ClosedMonth.objects.bulk_create(ClosedMonth(month=month, rate_card=card, issued_at=NOW,
                                                         fleet_gpu_hours=3.0) for month in months)
    statements = Statement.objects.bulk_create(
        Statement(closed_month=row, month=row.month, team=None, currency="USD", gpu_hours=Decimal("3"),
                  charges=Decimal("6.00"), credit_gpu_hours=Decimal("0"), credit=Decimal("0"), total=Decimal("6.00"))
        for row in closed)
    StatementLine.objects.bulk_create(
        StatementLine(statement=statement, kind="usage", partition="train", user=user, gpu_hours=hours,
                      price_per_gpu_hour=Decimal("2"), amount=2 * hours)
        for statement in statements for user, hours in (("ann", Decimal("1")), ("ben", Decimal("2"))))
    return statements
