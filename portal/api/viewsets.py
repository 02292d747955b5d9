from django.db import IntegrityError, transaction
from django.db.models.deletion import ProtectedError, RestrictedError
from rest_framework import exceptions, status, viewsets
from rest_framework.settings import api_settings

from .permissions import RolePermission


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The object cannot be changed or deleted in its current state."
    default_code = "conflict"


class PortalModelViewSet(viewsets.ModelViewSet):
    """Base for every model's API: a viewset declares ``queryset``, ``serializer_class`` and
    ``filterset_class``; filters, ordering, pagination and permissions come from the settings.

    Create and update answer with the object re-read through ``get_queryset`` (annotated counts
    included). Writes run in a transaction: a database constraint that the serializer's checks
    missed (two requests racing for the same hostname) is a 400, and deleting an object that others
    still point at (``on_delete=PROTECT``) is a 409 naming them, never a 500.

    The change history gets the API user from ``HistoryRequestMiddleware``: DRF sets the user it
    authenticates (token included) on the underlying Django request the middleware holds.
    """

    ordering = ["pk"]

    def get_ordering_fields(self):
        return "__all__"

    def perform_create(self, serializer):
        self._save(serializer)

    def perform_update(self, serializer):
        self._save(serializer)

    def _save(self, serializer):
        try:
            with transaction.atomic():
                instance = serializer.save()
        except IntegrityError as error:
            first_line = (str(error).splitlines() or ["constraint violated"])[0]
            message = f"The database refused this change: {first_line}"
            raise exceptions.ValidationError({api_settings.NON_FIELD_ERRORS_KEY: [message]}) from error
        # Answer with the object as a GET would show it: with the queryset's joins and counts.
        serializer.instance = self.get_queryset().get(pk=instance.pk)

    def perform_destroy(self, instance):
        try:
            with transaction.atomic():
                instance.delete()
        except (ProtectedError, RestrictedError) as error:
            objs = getattr(error, "protected_objects", None) or getattr(error, "restricted_objects", ())
            blocking = sorted({f"{obj._meta.verbose_name} {obj}" for obj in objs})
            shown = ", ".join(blocking[:10]) + (f" and {len(blocking) - 10} more" if len(blocking) > 10 else "")
            raise Conflict(f"Cannot delete {instance}: still used by {shown}.") from error


class ChangePermission(RolePermission):
    """For actions that modify an object with a POST (e.g. a lifecycle transition): they need the
    model's ``change`` permission, not ``add``."""

    perms_map = {**RolePermission.perms_map, "POST": ["%(app_label)s.change_%(model_name)s"]}
