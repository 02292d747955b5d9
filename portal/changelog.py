"""The change log across every model with history (django-simple-history): who changed what, when."""

from simple_history.models import registered_models

from .roles import ROLE_APPS

ACTIONS = {"+": "Created", "~": "Changed", "-": "Deleted"}


def tracked_models(user):
    """Models with a history that ``user`` may view, sorted by name."""
    models = [
        model for model in registered_models.values()
        if model._meta.app_label in ROLE_APPS
        and user.has_perm(f"{model._meta.app_label}.view_{model._meta.model_name}")
    ]
    return sorted(models, key=lambda m: str(m._meta.verbose_name))


def recent_changes(models, *, username=None, request_id=None, limit=200):
    """The latest ``limit`` changes over ``models`` (of one user, of one request): one query per model,
    merged by time."""
    records = []
    for model in models:
        history = model.history.select_related("history_user").order_by("-history_date")
        if username:
            history = history.filter(history_user__username=username)
        if request_id:
            history = history.filter(request_id=request_id)
        for record in history[:limit]:
            record.model_opts = model._meta
            records.append(record)
    records.sort(key=lambda r: r.history_date, reverse=True)
    return records[:limit]
