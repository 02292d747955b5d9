"""What every change record (django-simple-history) carries besides who and when: the reason for the
change and the id of the request (or Celery task) that made it, so all changes of one request can be
found together (``/changes/?request_id=...``, ``/api/changes/?request_id=...``).

A model opts in with ``history = HistoricalRecords(bases=[ChangeRecord])``. The reason comes, first
found: from the object (``instance._change_reason``, set by the edit forms and by code), from the
request (``request.change_reason``, set by the API from a ``change_reason`` field), or from the
``X-Change-Reason`` header of the request.
"""

import re
import uuid

from django.db import models
from django.dispatch import receiver
from simple_history.models import HistoricalRecords
from simple_history.signals import pre_create_historical_record

REASON_HEADER = "X-Change-Reason"
REQUEST_ID_HEADER = "X-Request-ID"
REASON_MAX_LENGTH = 100  # simple-history's history_change_reason column
_VALID_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


class ChangeRecord(models.Model):
    request_id = models.CharField(max_length=64, blank=True, db_index=True,
                                  help_text="The request or Celery task that made the change.")

    class Meta:
        abstract = True


def request_id_from(header):
    """A client's ``X-Request-ID`` if it is a sensible token (so logs and records can quote it), else a
    new one."""
    return header if header and _VALID_REQUEST_ID.match(header) else uuid.uuid4().hex


def current_request():
    return getattr(HistoricalRecords.context, "request", None)


def _task_id():
    from celery import current_task

    return getattr(getattr(current_task, "request", None), "id", None) or ""


def change_request_id():
    """The id change records made now carry: the request's, else the Celery task's, else blank."""
    request = current_request()
    return (getattr(request, "id", "") if request is not None else "") or _task_id()


@receiver(pre_create_historical_record)
def tag_change_record(sender, instance, history_instance, **kwargs):
    request = current_request()
    if hasattr(history_instance, "request_id"):
        history_instance.request_id = change_request_id()
    if not history_instance.history_change_reason and request is not None:
        reason = getattr(request, "change_reason", None) or request.headers.get(REASON_HEADER, "")
        history_instance.history_change_reason = reason[:REASON_MAX_LENGTH] or None
