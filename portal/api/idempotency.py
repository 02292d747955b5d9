"""Safe retries for create endpoints: ``IdempotentCreateMixin`` on a viewset.

``Idempotency-Key`` header: the first successful answer (status and body) is stored per user and key
with a hash of the method, path and body. Repeating the request returns the stored answer with the
header ``Idempotent-Replayed: true`` and creates nothing; reusing the key for another request is a 422.
A refused request (4xx) stores nothing, so the client may fix the body and send it again with the same
key.

``external_id`` (viewsets that set ``external_id_field``): unique per client. Sending an object again with
an ``external_id`` already used by the same user replays the first answer (201 and the same body, header
``Idempotent-Replayed: true``) when the body is the one first sent, and is a 409 when it differs, so a
client that lost the first answer can simply retry. An object made another way (no stored answer) is
answered as it is now, with 200.

Races: a request claims its key (inserts the key's row) before it runs, in the transaction that creates
the object. A concurrent retry with the same key or external id waits on the unique index until the first
commits, then replays its answer (or runs itself if the first was refused and rolled back): every retry
gets the first answer, never "already exists", whichever wins the race.
"""

import hashlib
import json

from django.db import IntegrityError, transaction
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import exceptions, status
from rest_framework.response import Response

from portal.models import IdempotentRequest

from .exceptions import Conflict

HEADER = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"
MAX_KEY_LENGTH = IdempotentRequest._meta.get_field("key").max_length

KEY_PARAMETER = OpenApiParameter(
    HEADER, OpenApiTypes.STR, OpenApiParameter.HEADER,
    description="Any unique string (e.g. a UUID). Repeating a request with the same key returns the first "
                "answer and creates nothing; the same key with another body is refused with 422.",
)


class KeyReused(exceptions.APIException):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_code = "idempotency_key_reused"


def fingerprint(request):
    """SHA-256 of method, path and body; the body as canonical JSON, so spacing and key order do not count."""
    body = json.dumps(request.data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(f"{request.method} {request.path}\n{body}".encode()).hexdigest()


def replay(stored):
    response = Response(stored.response, status=stored.status)
    response[REPLAYED] = "true"
    return response


class IdempotentCreateMixin:
    """For a viewset: ``create`` honours ``Idempotency-Key`` and, with ``external_id_field`` set, the
    client's external id (looked up among the objects whose ``external_id_owner`` is the user)."""

    external_id_field = None
    external_id_owner = "created_by"

    def create(self, request, *args, **kwargs):
        key = request.headers.get(HEADER)
        if not key:
            return self._create_once_per_external_id(request, *args, **kwargs)
        if len(key) > MAX_KEY_LENGTH:
            raise exceptions.ValidationError({HEADER: [f"At most {MAX_KEY_LENGTH} characters."]})
        return self._run_once(request, key, lambda: self._create_once_per_external_id(request, *args, **kwargs))

    def _run_once(self, request, key, run):
        digest = fingerprint(request)
        stored = IdempotentRequest.objects.filter(user=request.user, key=key).first()
        if stored is not None:
            return self._replay_if_same(stored, digest)
        try:
            with transaction.atomic():
                claim = self._claim(request, key, digest)
                if claim is None:  # lost the race: the winner has committed its answer
                    return self._replay_if_same(IdempotentRequest.objects.get(user=request.user, key=key), digest)
                return self._run_and_store(claim, run)
        except IntegrityError:  # a unique field taken meanwhile by a request with another key
            raise Conflict("Another request created the same object meanwhile; GET it, or retry.") from None

    def _claim(self, request, key, digest):
        """Insert the key's row (a placeholder until the answer is stored), or None if another request has it.

        The insert waits on the unique index while a concurrent request holding the same key is running: it
        fails once that one commits, and succeeds if that one rolls back (it was refused: nothing stored)."""
        try:
            with transaction.atomic():
                return IdempotentRequest.objects.create(
                    user=request.user, key=key, method=request.method, path=request.path[:500], body_hash=digest,
                    status=0, response={},
                )
        except IntegrityError:
            return None

    def _run_and_store(self, claim, run):
        """Run the create in the claim's transaction; store its answer, or roll everything back if refused."""
        response = run()
        if status.is_success(response.status_code):
            claim.status, claim.response = response.status_code, response.data
            claim.save(update_fields=["status", "response"])
        else:
            transaction.set_rollback(True)
        return response

    def _replay_if_same(self, stored, digest):
        if stored.body_hash != digest:
            raise KeyReused(
                f"This {HEADER} was already used for another request ({stored.method} {stored.path} with a "
                "different body). Use a new key for a new request."
            )
        return replay(stored)

    def _create_once_per_external_id(self, request, *args, **kwargs):
        one_object = isinstance(request.data, dict)  # a list (bulk create) has no single external id
        external_id = request.data.get(self.external_id_field) if self.external_id_field and one_object else None
        if not external_id or not isinstance(external_id, str) or "\x00" in external_id:
            # Nothing to look up (a NUL cannot be stored, nor searched in PostgreSQL): the serializer says why.
            return self.create_object(request, *args, **kwargs)
        key = f"{self.external_id_field}:{request.path}:{external_id}"[:MAX_KEY_LENGTH]
        digest = fingerprint(request)
        lookup = {self.external_id_field: external_id, self.external_id_owner: request.user}
        if not self.get_queryset().filter(**lookup).exists():
            with transaction.atomic():
                claim = self._claim(request, key, digest)
                if claim is not None:
                    return self._run_and_store(claim, lambda: self.create_object(request, *args, **kwargs))
            # Lost the race to a request with the same external id: it has committed; answer as a retry.
        existing = self.get_queryset().filter(**lookup).first()
        stored = IdempotentRequest.objects.filter(user=request.user, key=key).first()
        if stored is not None and stored.body_hash != digest:
            raise Conflict(
                f"You already sent {self.get_queryset().model._meta.verbose_name} {existing or ''} with "
                f"{self.external_id_field} {external_id!r} and a different body."
            )
        if stored is not None:
            return replay(stored)
        if existing is None:  # the claim's row without the object: cannot happen, both commit together
            raise Conflict(f"{self.external_id_field} {external_id!r} is being created; retry shortly.")
        return Response(self.get_response_serializer(existing).data, status=status.HTTP_200_OK)

    def create_object(self, request, *args, **kwargs):
        """The create itself (the viewset's ordinary ``create`` unless overridden)."""
        return super().create(request, *args, **kwargs)

    def get_response_serializer(self, instance):
        return self.get_serializer(instance)
