"""What the apps' search providers share (``portal.registry.register_search_provider``): one group of results in
one query."""

import operator
from functools import reduce

from django.db.models import BooleanField, Case, Count, F, Q, Value, When, Window

from .registry import SearchGroup

LIMIT = 20  # results shown per group


def search_kinds(term, user, kinds):
    """The groups of ``kinds`` that ``user`` may see and that match ``term``, one query each. Each kind is (title,
    permission, queryset, fields that may contain the term, identifying fields that may equal it (any case))."""
    found = (
        search_group(
            title,
            queryset.filter(any_field(fields, "icontains", term)),
            any_field(exact, "iexact", term) if exact else None,
        )
        for title, permission, queryset, fields, exact in kinds
        if user.has_perm(permission)
    )
    return [group for group in found if group]


def search_group(title, queryset, exact, limit=LIMIT):
    """A ``SearchGroup`` of ``queryset`` (already filtered on the term), or None when nothing matches, in one
    query: the first ``limit`` rows, those matching ``exact`` (a Q on identifying fields, or None) first, and how
    many match in all (a window count, computed before the LIMIT)."""
    ordering = queryset.query.order_by or queryset.model._meta.ordering
    is_exact = Case(When(exact, then=True), default=False, output_field=BooleanField()) if exact else Value(False)
    rows = list(
        queryset.annotate(
            search_exact=is_exact,
            search_total=Window(Count("pk")),
        ).order_by(F("search_exact").desc(), *ordering)[:limit]
    )
    if not rows:
        return None
    return SearchGroup(title, rows, rows[0].search_total, [row for row in rows if row.search_exact])


def any_field(fields, lookup, term):
    """A Q matching rows where one of ``fields`` matches ``term`` with ``lookup`` ("icontains", "iexact")."""
    return reduce(operator.or_, (Q(**{f"{field}__{lookup}": term}) for field in fields))
