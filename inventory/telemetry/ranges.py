"""The ranges of the utilization and goodput reports (pages and API alike): ``get_range(key)`` reads every key.

Rolling ranges end now: ``24h`` and ``7d`` read hourly rows, one bucket per hour; ``30d``, ``90d`` and ``1y`` read
daily rows, one bucket per day. Each ends with the current hour or day, so its last bucket may still be filling.

Calendar ranges (``CalendarRange``) are whole days cut at the portal's local midnights (``TIME_ZONE``), as the
daily ranges and the monthly statements cut them, and read daily rows:

- ``last_month``: the last month that has ended (which one depends on ``now``);
- a month, ``2026-11``;
- dates, ``2026-10-01..2026-10-15`` (both included, at most ``MAX_CALENDAR_DAYS``).

A calendar range ends at its last midnight, or now while it lasts; one that begins after today is refused.
``range_key`` turns a query string's ``range``, ``month`` and ``start``/``end`` into one key."""

import re
from dataclasses import dataclass
from datetime import date, timedelta

from django.db.models import Count, F, FloatField, Sum
from django.utils import timezone

from portal.forms import parse_day, parse_month

from .models import GPUDaily, GPUHourly, UsageDaily, UsageHourly
from .rollups import day_start, floor_hour


@dataclass(frozen=True)
class Range:
    key: str
    label: str
    periods: int  # buckets in the range, the current one included
    daily: bool  # daily rows (GPUDaily, UsageDaily) rather than hourly rows (GPUHourly, UsageHourly)

    @property
    def model(self):
        """The rows per GPU."""
        return GPUDaily if self.daily else GPUHourly

    @property
    def short(self):
        """What its button says."""
        return self.key

    @property
    def phrase(self):
        """The range in a sentence: "last 7 days", "last month", "2026-11"."""
        return f"last {self.label}"

    def table(self, per_gpu):
        """The rows read: per GPU, or (``per_gpu`` False) the fewest rows that hold what the groupings sum."""
        if per_gpu:
            return self.model
        return UsageDaily if self.daily else UsageHourly

    @property
    def time_field(self):
        return "day" if self.daily else "hour"

    def buckets(self, now=None):
        """The start of every bucket, oldest first: dates for daily ranges, aware datetimes for hourly."""
        now = now or timezone.now()
        if self.daily:
            last, step = timezone.localdate(now), timedelta(days=1)
        else:
            last, step = floor_hour(now), timedelta(hours=1)
        return [last - step * (self.periods - 1 - i) for i in range(self.periods)]

    def start(self, now=None):
        """The moment the range begins (its first bucket)."""
        first = self.buckets(now)[0]
        return day_start(first) if self.daily else first

    def end(self, now=None):
        """The moment the range ends: now."""
        return now or timezone.now()

    def sums(self, per_gpu=True):
        """The aggregates of the rows of ``table(per_gpu)``: ``gpu_hours`` (GPU-hours they cover), ``util_hours``
        (utilization (%) × hours, summed; divided by ``gpu_hours`` it is the weighted mean) and ``gpus`` (GPUs, in
        one bucket: a GPU has one row per bucket)."""
        table = self.table(per_gpu)
        if table is UsageDaily:
            return {"gpu_hours": Sum("gpu_hours"), "util_hours": Sum("util_hours"), "gpus": Sum("gpus")}
        if table is UsageHourly:  # a GPU counts one hour
            return {"gpu_hours": Sum("gpus"), "util_hours": Sum("util_hours"), "gpus": Sum("gpus")}
        if table is GPUDaily:
            return {"gpu_hours": Sum("hours"), "gpus": Count("pk"),
                    "util_hours": Sum(F("util_mean") * F("hours"), output_field=FloatField())}
        return {"gpu_hours": Count("pk"), "util_hours": Sum("util_mean"), "gpus": Count("pk")}

    def sums_sql(self, per_gpu=True):
        """``sums`` as SQL over the rows of ``rollup_from`` (alias ``r``), for the hand-written reads."""
        table = self.table(per_gpu)
        if table is UsageDaily:
            return {"gpu_hours": "SUM(r.gpu_hours)", "util_hours": "SUM(r.util_hours)", "gpus": "SUM(r.gpus)"}
        if table is UsageHourly:
            return {"gpu_hours": "SUM(r.gpus)", "util_hours": "SUM(r.util_hours)", "gpus": "SUM(r.gpus)"}
        if table is GPUDaily:
            return {"gpu_hours": "SUM(r.hours)", "gpus": "COUNT(*)", "util_hours": "SUM(r.util_mean * r.hours)"}
        return {"gpu_hours": "COUNT(*)", "util_hours": "SUM(r.util_mean)", "gpus": "COUNT(*)"}


@dataclass(frozen=True)
class CalendarRange(Range):
    """Whole days from ``first`` to ``last`` (both included), or, without them, the last month that has ended
    (``last_month``)."""

    first: date | None = None
    last: date | None = None

    @property
    def short(self):
        return "last month" if self.first is None else self.key

    @property
    def phrase(self):
        return self.label

    def days(self, now=None):
        """(first day, last day) of the range."""
        if self.first is not None:
            return self.first, self.last
        first = last_closed_month(now)
        return first, next_month_first(first) - timedelta(days=1)

    def buckets(self, now=None):
        now = now or timezone.now()
        first, last = self.days(now)
        last = min(last, timezone.localdate(now))  # until today while it lasts
        return [first + timedelta(days=i) for i in range((last - first).days + 1)]

    def start(self, now=None):
        return day_start(self.days(now)[0])

    def end(self, now=None):
        now = now or timezone.now()
        return min(day_start(self.days(now)[1] + timedelta(days=1)), now)


RANGES = {
    "24h": Range("24h", "24 hours", 24, daily=False),
    "7d": Range("7d", "7 days", 7 * 24, daily=False),
    "30d": Range("30d", "30 days", 30, daily=True),
    "90d": Range("90d", "90 days", 90, daily=True),
    "1y": Range("1y", "1 year", 365, daily=True),
}
DEFAULT_RANGE = "7d"
LAST_MONTH = "last_month"
LAST_MONTH_RANGE = CalendarRange(LAST_MONTH, "last month", 31, daily=True)
# The range buttons of the utilization and goodput pages: the rolling ranges and last month.
RANGE_BUTTONS = {**RANGES, LAST_MONTH: LAST_MONTH_RANGE}
MAX_CALENDAR_DAYS = 366
DATES_PATTERN = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2})\.\.([0-9]{4}-[0-9]{2}-[0-9]{2})")
MONTH_KEY_PATTERN = re.compile(r"[0-9]{4}-[0-9]{2}")
KEYS_HELP = (f"{', '.join(RANGE_BUTTONS)}, a month (YYYY-MM) or dates (YYYY-MM-DD..YYYY-MM-DD, at most "
             f"{MAX_CALENDAR_DAYS} days)")


class UnknownParameter(ValueError):
    """An unknown range, group_by or heatmap row kind; the message names the accepted values."""


def get_range(range_key):
    """The range a key names (module docstring); ``UnknownParameter`` saying why for any other value."""
    if isinstance(range_key, str) and range_key in RANGE_BUTTONS:
        return RANGE_BUTTONS[range_key]
    text = range_key if isinstance(range_key, str) else ""
    if MONTH_KEY_PATTERN.fullmatch(text):
        first = parsed(parse_month, text)
        return calendar_range(text, text, first, next_month_first(first) - timedelta(days=1))
    if found := DATES_PATTERN.fullmatch(text):
        first, last = parsed(parse_day, found[1]), parsed(parse_day, found[2])
        if last < first:
            raise UnknownParameter("The end date is before the start date.")
        if (last - first).days >= MAX_CALENDAR_DAYS:
            raise UnknownParameter(f"Choose at most {MAX_CALENDAR_DAYS} days.")
        return calendar_range(f"{first}..{last}", f"{first} – {last}", first, last)
    raise UnknownParameter(f"Unknown range '{str(range_key)[:40]}'; use one of {KEYS_HELP}.")


def parsed(parse, text):
    try:
        return parse(text)
    except ValueError as error:  # a month 13, a 31 February, a year out of the portal's calendar
        raise UnknownParameter(str(error)) from None


def calendar_range(key, label, first, last):
    if first > timezone.localdate():
        raise UnknownParameter(f"The range {label} begins after today.")
    return CalendarRange(key, label, (last - first).days + 1, daily=True, first=first, last=last)


def range_key(range_=None, month=None, start=None, end=None):
    """The one range key a query string names: ``month`` (YYYY-MM), else ``start`` and ``end`` dates, else
    ``range`` (``DEFAULT_RANGE`` when none is given); ``UnknownParameter`` with the message for a bad one."""
    if month:
        if not MONTH_KEY_PATTERN.fullmatch(str(month)):
            raise UnknownParameter("Enter a month as YYYY-MM, e.g. 2026-11.")
        key = str(month)
    elif start or end:
        if not (start and end):
            raise UnknownParameter("Give both the start and the end date (YYYY-MM-DD).")
        key = f"{start}..{end}"
        if not DATES_PATTERN.fullmatch(key):
            raise UnknownParameter("Enter both dates as YYYY-MM-DD, e.g. 2026-11-30.")
    else:
        key = range_ or DEFAULT_RANGE
    get_range(key)
    return key


def next_month_first(day):
    return (day.replace(day=1) + timedelta(days=32)).replace(day=1)


def calendar_month(first_day):
    """The calendar month that begins on ``first_day`` as ``(start, end)``, cut at the portal's local midnights
    (``TIME_ZONE``) as the daily ranges cut days: the month ranges of ``/api/inventory/allocations/?month=`` and of
    the monthly statements."""
    return day_start(first_day.replace(day=1)), day_start(next_month_first(first_day))


def last_closed_month(now=None):
    """The first day of the last month that has ended (in ``TIME_ZONE``)."""
    return (timezone.localdate(now or timezone.now()).replace(day=1) - timedelta(days=1)).replace(day=1)
