from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework import exceptions, status
from rest_framework.views import exception_handler as drf_exception_handler


class Conflict(exceptions.APIException):
    """409: the object cannot take this change in its current state (stale state, a reference in use, a
    request racing another). ``Conflict("why", state="degraded")`` answers ``{"detail": "why", "state":
    "degraded"}``: what the client needs to decide what to do next."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "The object cannot be changed or deleted in its current state."
    default_code = "conflict"

    def __init__(self, detail=None, code=None, **current):
        if current:
            detail = {"detail": detail or self.default_detail, **current}
        super().__init__(detail, code)


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "payload_too_large"


def exception_handler(exc, context):
    """DRF's, plus a body over ``DATA_UPLOAD_MAX_MEMORY_SIZE``: DRF leaves Django's error to Django, which
    answers its HTML 400 page; API clients get a JSON 413 that says the limit."""
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        exc = PayloadTooLarge(f"The request body is larger than {limit} bytes; send fewer objects per request.")
    return drf_exception_handler(exc, context)
