"""Optimistic locking: a version of an object that changes whenever any of its stored values does.

The API sends it as the ``ETag`` of a detail answer and refuses a write whose ``If-Match`` names an
older one (412); the edit forms carry a signed snapshot of the values they were opened with and refuse
a save over values someone else changed meanwhile, naming what changed. No version column is needed:
the version is a hash of the stored values (concrete fields and many-to-many links), so every model
gets it, and a change made through the admin, a task or the shell counts too.
"""

import hashlib
import json

from django.core import signing
from django.utils.text import capfirst

SIGNING_SALT = "portal.locking"


def _raw(value):
    return value if isinstance(value, (int, float, bool, str, type(None))) else str(value)


def _many_to_many(instance):
    # An unsaved object has no links yet. Prefetched links are used as they are, else one query each.
    return list(instance._meta.many_to_many) if instance.pk is not None else []


def stored_values(instance):
    """``{field name: raw value}`` of the concrete fields, and sorted ids of the many-to-many links. A model's
    ``unversioned_fields`` (derived data a task rewrites, e.g. a cached summary) are left out: their refresh is
    nobody's edit."""
    skip = getattr(instance, "unversioned_fields", ())
    values = {field.attname: _raw(field.value_from_object(instance)) for field in instance._meta.concrete_fields
              if field.name not in skip}
    for field in _many_to_many(instance):
        values[field.name] = sorted(obj.pk for obj in getattr(instance, field.name).all())
    return values


def version(instance):
    """A short hash of ``stored_values``: equal exactly when nothing stored has changed."""
    encoded = json.dumps(stored_values(instance), sort_keys=True, default=str).encode()
    return hashlib.sha256(encoded).hexdigest()[:32]


def etag(instance):
    return f'"{version(instance)}"'


def parse_tags(header):
    """The entity tags of an ``If-Match`` / ``If-None-Match`` header; weak ones compare as strong."""
    return {tag.strip().removeprefix("W/") for tag in (header or "").split(",") if tag.strip()}


def if_match_allows(header, instance):
    """Whether an ``If-Match`` header (absent, ``*``, or a list of entity tags) lets a write go ahead."""
    if not header:
        return True
    tags = parse_tags(header)
    return "*" in tags or etag(instance) in tags


# --- Edit forms ------------------------------------------------------------------------------------


def _shown(instance, field):
    """A value as a person reads it in the "what changed" message."""
    if field.many_to_many:
        names = sorted(str(obj) for obj in getattr(instance, field.name).all())
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        return shown or "none"
    if field.choices:
        return str(dict(field.flatchoices).get(field.value_from_object(instance), field.value_from_object(instance)))
    if field.is_relation:
        target = getattr(instance, field.name)
        return "none" if target is None else str(target)
    value = field.value_from_object(instance)
    return "empty" if value in (None, "") else str(value)


def _editable_fields(instance, names=None):
    opts = instance._meta
    return [f for f in (*opts.concrete_fields, *opts.many_to_many)
            if f.editable and not f.primary_key and (names is None or f.name in names)]


def form_token(instance, names=None):
    """A signed snapshot of what an edit form is opened with: ``{field: [raw, shown]}`` for the model
    fields in ``names`` (the form's; all editable fields by default). Fields the form does not show
    are left out: a save does not overwrite them with old values, so their changes are no conflict."""
    raw = stored_values(instance)
    snapshot = {
        field.name: [raw.get(field.attname, raw.get(field.name)), _shown(instance, field)]
        for field in _editable_fields(instance, names)
    }
    return signing.dumps(snapshot, salt=SIGNING_SALT, compress=True)


def changes_since(token, current):
    """``[(label, then, now)]``: the fields of ``current`` that differ from the snapshot in ``token``.

    A token that was not made here (tampered with, or signed with another key) raises
    ``signing.BadSignature``.
    """
    snapshot = signing.loads(token, salt=SIGNING_SALT)
    raw = stored_values(current)
    changes = []
    for field in _editable_fields(current):
        if field.name not in snapshot:
            continue
        then_raw, then_shown = snapshot[field.name]
        now_raw = raw.get(field.attname, raw.get(field.name))
        if then_raw != now_raw:
            changes.append((capfirst(field.verbose_name), then_shown, _shown(current, field)))
    return changes


def stale_message(instance, changes):
    """What the person whose save was refused reads: who changed what since the form was opened."""
    latest = instance.history.select_related("history_user").first() if hasattr(instance, "history") else None
    who = ""
    if latest is not None:
        user = latest.history_user.get_username() if latest.history_user else "someone"
        who = f" ({user}, {latest.history_date:%Y-%m-%d %H:%M} UTC)"
    listed = "; ".join(f"{label}: {then} → {now}" for label, then, now in changes)
    return (
        f"{instance._meta.verbose_name.capitalize()} {instance} was changed by someone else while you were "
        f"editing it{who}: {listed}. Your changes were not saved. The form shows your values; save again to "
        "replace the new ones, or cancel."
    )
