"""Query helpers shared by every app."""

from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce


def related_count(model, field):
    """``annotate(n=related_count(GPU, "node"))``: how many ``model`` rows point at each row, as a
    correlated subquery (no GROUP BY, so several counts and ``select_related`` combine freely)."""
    rows = model._default_manager.filter(**{field: OuterRef("pk")}).order_by().values(field)
    return Coalesce(Subquery(rows.annotate(n=Count("pk")).values("n"), output_field=IntegerField()), 0)
