import functools

from django.db import IntegrityError, transaction
from django.db.models.deletion import ProtectedError, RestrictedError
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.settings import api_settings

from portal import locking

from .exceptions import Conflict
from .history import HistoryPagination, ObjectChangeSerializer
from .metadata import PortalMetadata
from .permissions import RolePermission
from .rows import ValuesRow, values_rows

MAX_BULK_ITEMS = 1000


class PreconditionFailed(exceptions.APIException):
    status_code = status.HTTP_412_PRECONDITION_FAILED
    default_code = "precondition_failed"


class BulkInvalid(exceptions.APIException):
    """A bulk request with invalid items: ``errors`` has one entry per item, in order (``{}`` when the
    item is valid), and nothing was saved."""

    status_code = status.HTTP_400_BAD_REQUEST

    def __init__(self, errors):
        bad = [i for i, e in enumerate(errors) if e]
        shown = ", ".join(str(i) for i in bad[:10]) + (" ..." if len(bad) > 10 else "")
        self.detail = {
            "detail": f"{len(bad)} of {len(errors)} items are invalid (index {shown}); nothing was saved.",
            "errors": errors,
        }


def _first_line(error):
    return (str(error).splitlines() or ["constraint violated"])[0]


def _blocking(instance, error):
    objs = getattr(error, "protected_objects", None) or getattr(error, "restricted_objects", ())
    blocking = sorted({f"{obj._meta.verbose_name} {obj}" for obj in objs})
    shown = ", ".join(blocking[:10]) + (f" and {len(blocking) - 10} more" if len(blocking) > 10 else "")
    return f"Cannot delete {instance}: still used by {shown}."


class OptimisticLocking:
    """Optimistic locking (``portal.locking``) for a viewset: a detail answer carries an ``ETag`` (``If-None-Match``
    on a GET answers 304 when unchanged), and ``_check_if_match`` locks the row and refuses a write whose
    ``If-Match`` no longer matches (412)."""

    def retrieve(self, request, *args, **kwargs):
        instance = self.get_object()
        tag = locking.etag(instance)
        if tag in locking.parse_tags(request.headers.get("If-None-Match")):
            return Response(status=status.HTTP_304_NOT_MODIFIED, headers={"ETag": tag})
        return Response(self.get_serializer(instance).data, headers={"ETag": tag})

    def _check_if_match(self, request):
        instance = self.get_object()  # 404 and object permissions first
        locked = type(instance)._default_manager.select_for_update().get(pk=instance.pk)
        if not locking.if_match_allows(request.headers.get("If-Match"), locked):
            raise PreconditionFailed(
                f"{instance._meta.verbose_name.capitalize()} {instance} has changed since you read it: its ETag is "
                f"now {locking.etag(locked)}. GET it again, re-apply your change and send the new ETag in If-Match."
            )
        return locked


def changes_object(action_function):
    """Marks a detail action that changes its object (a transition, an accept, a cancel) and makes it honour
    ``If-Match`` as ``PUT`` does: with the header, the row is locked and the tag checked (412, nothing changed, on
    a stale one) in the transaction the action then runs in. Without it the action runs as it is; it checks its
    own preconditions on the row it locks."""

    @functools.wraps(action_function)
    def run(self, request, *args, **kwargs):
        if not request.headers.get("If-Match"):
            return action_function(self, request, *args, **kwargs)
        with transaction.atomic():
            self._check_if_match(request)
            return action_function(self, request, *args, **kwargs)

    run.changes_object = True
    return run


class ValuesList:
    """A viewset's ``list`` read with ``.values()`` (``portal.api.rows``) where ``values_list`` is set and the
    serializer allows it: large lists. ``page_context`` adds what the serializer reads of the page as a whole."""

    values_list = False
    values_lookups = ()  # read besides the serializer's fields (what page_context reads of a row)

    def page_context(self, rows):
        """Serializer context from the page's rows: an iterable of model instances, or of ``ValuesRow``s on the
        fast path."""
        return {}

    def list(self, request, *args, **kwargs):
        queryset = self.filter_queryset(self.get_queryset())
        context = self.get_serializer_context()  # completed by page_context once the page is read
        rows = None
        if self.values_list:
            # A cursor page reads its position from the row: fetch the model's own columns it may order by.
            cursor = getattr(self.paginator, "cursor_query_param", None) in request.query_params
            own = [f.attname for f in queryset.model._meta.concrete_fields] if cursor else ()
            child = self.get_serializer(many=True, context=context).child
            rows = values_rows(child, queryset, (*own, *self.values_lookups))
        objects = queryset if rows is None else rows.queryset
        page = self.paginate_queryset(objects)
        items = objects if page is None else page
        context.update(self.page_context(items if rows is None else (ValuesRow(row) for row in items)))
        data = self.get_serializer(items, many=True, context=context).data if rows is None else rows.format(items)
        return Response(data) if page is None else self.get_paginated_response(data)


class PortalModelViewSet(ValuesList, OptimisticLocking, viewsets.ModelViewSet):
    """Base for every model's API: a viewset declares ``queryset``, ``serializer_class`` and
    ``filterset_class``; filters, ordering, pagination and permissions come from the settings.

    - Create and update answer with the object re-read through ``get_queryset`` (annotated counts
      included). Writes run in a transaction: a database constraint that the serializer's checks
      missed (two requests racing for the same hostname) is a 400, and deleting an object that others
      still point at (``on_delete=PROTECT``) is a 409 naming them, never a 500.
    - Optimistic locking (``portal.locking``): a detail answer carries an ``ETag``; ``PUT``, ``PATCH``
      and ``DELETE`` with an ``If-Match`` that no longer matches get 412 and change nothing (the row is
      locked from the check to the write). ``If-None-Match`` on a GET answers 304 when unchanged.
    - Bulk: a list of objects ``POST``ed to the list endpoint creates them all; ``PUT``/``PATCH`` of a
      list of objects with their ``id`` updates them; ``DELETE`` of a list of ids deletes them. One
      transaction: any invalid item and nothing is saved, with one error entry per item.

    The change history gets the API user and the change reason from ``HistoryRequestMiddleware`` and
    ``portal.history``: DRF sets the user it authenticates (token included) on the underlying Django
    request the middleware holds.
    """

    ordering = ["pk"]
    metadata_class = PortalMetadata  # OPTIONS on list routes, which take the bulk PUT too
    bulk_create = True  # a list POSTed to the list endpoint creates each item

    def get_ordering_fields(self):
        return "__all__"

    # --- One object ------------------------------------------------------------------------------

    def update(self, request, *args, **kwargs):
        with transaction.atomic():
            locked = self._check_if_match(request)
            response = super().update(request, *args, **kwargs)
            if status.is_success(response.status_code):
                response["ETag"] = locking.etag(type(locked)._default_manager.get(pk=locked.pk))
        return response

    def destroy(self, request, *args, **kwargs):
        with transaction.atomic():
            self._check_if_match(request)
            return super().destroy(request, *args, **kwargs)

    def perform_create(self, serializer):
        self._save(serializer)

    def perform_update(self, serializer):
        self._save(serializer)

    def _save(self, serializer):
        try:
            with transaction.atomic():
                instance = serializer.save()
        except IntegrityError as error:
            message = f"The database refused this change: {_first_line(error)}"
            raise exceptions.ValidationError({api_settings.NON_FIELD_ERRORS_KEY: [message]}) from error
        # Answer with the object as a GET would show it: with the queryset's joins and counts.
        serializer.instance = self.get_queryset().get(pk=instance.pk)

    def perform_destroy(self, instance):
        try:
            with transaction.atomic():
                instance.delete()
        except (ProtectedError, RestrictedError) as error:
            raise Conflict(_blocking(instance, error)) from error

    # --- Change history -----------------------------------------------------------------------------

    @classmethod
    def get_extra_actions(cls):
        # ``history`` only where the model keeps one.
        model = cls.queryset.model if cls.queryset is not None else None
        keeps_history = model is not None and hasattr(model, "history")
        return [a for a in super().get_extra_actions() if keeps_history or a.__name__ != "history"]

    @extend_schema(
        summary="The object's change records",
        description="Newest first: when, who, the reason given, the request id and the stored fields after each "
                    "change. Page numbers, or `?cursor=` for cursor pages.",
        responses=ObjectChangeSerializer(many=True), filters=False,
    )
    @action(detail=True, methods=["get"], filter_backends=[], pagination_class=HistoryPagination)
    def history(self, request, pk=None):
        instance = self.get_object()
        records = type(instance).history.filter(id=instance.pk).select_related("history_user").order_by("-history_id")
        page = self.paginate_queryset(records)
        return self.get_paginated_response(ObjectChangeSerializer(page, many=True).data)

    # --- Bulk --------------------------------------------------------------------------------------

    def create(self, request, *args, **kwargs):
        if not isinstance(request.data, list):
            return super().create(request, *args, **kwargs)
        if not self.bulk_create:
            raise exceptions.ValidationError(
                {api_settings.NON_FIELD_ERRORS_KEY: ["Send one object per request to this endpoint."]}
            )
        return self._bulk(request, self._bulk_create_one, status.HTTP_201_CREATED)

    def bulk_update(self, request, *args, **kwargs):
        return self._bulk(request, lambda item: self._bulk_update_one(item, partial=False), status.HTTP_200_OK)

    def bulk_partial_update(self, request, *args, **kwargs):
        return self._bulk(request, lambda item: self._bulk_update_one(item, partial=True), status.HTTP_200_OK)

    def bulk_destroy(self, request, *args, **kwargs):
        self._bulk(request, self._bulk_destroy_one, status.HTTP_204_NO_CONTENT)
        return Response(status=status.HTTP_204_NO_CONTENT)

    def _bulk(self, request, run_one, success_status):
        """Runs ``run_one`` on each item in one transaction, each in a savepoint so that a database error
        names its item; one invalid item rolls back all. Items run in order, so a later item sees the
        earlier ones (two items with the same hostname: the second is refused)."""
        items = request.data
        if not isinstance(items, list) or not items:
            raise exceptions.ValidationError({api_settings.NON_FIELD_ERRORS_KEY: ["Send a non-empty list of items."]})
        if len(items) > MAX_BULK_ITEMS:
            raise exceptions.ValidationError(
                {api_settings.NON_FIELD_ERRORS_KEY: [f"At most {MAX_BULK_ITEMS} items per request; split it."]}
            )
        errors, saved = [], []
        with transaction.atomic():
            for item in items:
                try:
                    with transaction.atomic():
                        saved.append(run_one(item))
                    errors.append({})
                except exceptions.ValidationError as error:
                    errors.append(error.detail if isinstance(error.detail, dict)
                                  else {api_settings.NON_FIELD_ERRORS_KEY: error.detail})
                except (exceptions.NotFound, Conflict) as error:
                    errors.append({api_settings.NON_FIELD_ERRORS_KEY: [str(error.detail)]})
                except IntegrityError as error:
                    message = f"The database refused it: {_first_line(error)}"
                    errors.append({api_settings.NON_FIELD_ERRORS_KEY: [message]})
            if any(errors):
                transaction.set_rollback(True)
                raise BulkInvalid(errors)
        if success_status == status.HTTP_204_NO_CONTENT:
            return None
        # Re-read through the queryset, as a GET shows them, in the order sent.
        by_pk = self.get_queryset().in_bulk([obj.pk for obj in saved])
        data = self.get_serializer([by_pk[obj.pk] for obj in saved], many=True).data
        return Response(data, status=success_status)

    def _bulk_create_one(self, item):
        serializer = self.get_serializer(data=item)
        serializer.is_valid(raise_exception=True)
        self.perform_create(serializer)
        return serializer.instance

    def _item_instance(self, item):
        if not isinstance(item, dict):
            raise exceptions.ValidationError({api_settings.NON_FIELD_ERRORS_KEY: ["Expected an object with an id."]})
        pk = item.get("id")
        if isinstance(pk, bool) or not isinstance(pk, int):
            raise exceptions.ValidationError({"id": ["An integer id is required."]})
        instance = self.filter_queryset(self.get_queryset()).filter(pk=pk).first()
        if instance is None:
            name = self.get_queryset().model._meta.verbose_name
            raise exceptions.ValidationError({"id": [f"No {name} with id {pk}."]})
        self.check_object_permissions(self.request, instance)
        return instance

    def _bulk_update_one(self, item, partial):
        if isinstance(item, dict) and isinstance(item.get("id"), int):
            # Lock before reading (as ``update`` does): the save writes back every field, none from a stale read.
            model = self.get_queryset().model
            list(model._default_manager.select_for_update(of=("self",)).filter(pk=item["id"]).values_list("pk"))
        instance = self._item_instance(item)
        body = {key: value for key, value in item.items() if key != "id"}
        serializer = self.get_serializer(instance, data=body, partial=partial)
        serializer.is_valid(raise_exception=True)
        self.perform_update(serializer)
        return serializer.instance

    def _bulk_destroy_one(self, item):
        instance = self._item_instance({"id": item} if isinstance(item, int) and not isinstance(item, bool) else item)
        self.perform_destroy(instance)
        return instance


class ChangePermission(RolePermission):
    """For actions that modify an object with a POST (e.g. a lifecycle transition): they need the
    model's ``change`` permission, not ``add``."""

    perms_map = {**RolePermission.perms_map, "POST": ["%(app_label)s.change_%(model_name)s"]}
