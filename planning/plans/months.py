"""Calendar months as people and the API write them: "YYYY-MM" (e.g. 2027-03), stored as the month's first day.

A plan's months run from its ``first_month`` for ``horizon_months``; its last month is first + horizon − 1. A
workload's start is one of them. Plain Python, shared by the model, the forms, the API and the analysis."""

import re
from datetime import date

from .forecast import add_months, months_between

PATTERN = r"^[0-9]{4}-(0[1-9]|1[0-2])$"  # for the API schema too
EXAMPLE = "2027-03"
FIRST_YEAR, LAST_YEAR = 2000, 2199  # plans are about the years around now; this keeps a typo's year out
MAX_HORIZON = 120  # months; as CapacityPlan.horizon_months allows


def parse(text):
    """The first day of the month ``text`` ("YYYY-MM") names; ``ValueError`` with a message for people."""
    text = str(text).strip()
    if not re.match(PATTERN, text):
        raise ValueError(f"Enter a month as YYYY-MM, e.g. {EXAMPLE}.")
    year, month = int(text[:4]), int(text[5:])
    if not FIRST_YEAR <= year <= LAST_YEAR:
        raise ValueError(f"Enter a year from {FIRST_YEAR} to {LAST_YEAR}.")
    return date(year, month, 1)


def label(day):
    """"YYYY-MM" for a date (None stays None)."""
    return None if day is None else f"{day:%Y-%m}"


def last_month(first, horizon):
    return add_months(first, horizon - 1)


def horizon(first, last):
    """Months from ``first`` to ``last``, both counted."""
    return months_between(first, last) + 1


def check_range(first, last):
    """Why ``first`` … ``last`` cannot be a plan's months (a message), or "" when they can."""
    if last < first:
        return f"The last month ({label(last)}) is before the first ({label(first)})."
    if horizon(first, last) > MAX_HORIZON:
        return (f"{label(first)} to {label(last)} is {horizon(first, last)} months; a plan covers at most "
                f"{MAX_HORIZON}.")
    return ""


def outside(first, last, start):
    """Why ``start`` is not one of the months ``first`` … ``last`` (a message), or "" when it is."""
    if first <= start.replace(day=1) <= last:
        return ""
    return (f"{label(start)} is outside the plan's months, {label(first)} to {label(last)}: choose a month in "
            "them, or change the plan's months.")
