from django.core.exceptions import PermissionDenied
from django.http import Http404
from rest_framework import exceptions
from rest_framework.metadata import SimpleMetadata
from rest_framework.request import clone_request


class PortalMetadata(SimpleMetadata):
    """DRF's answer to OPTIONS, for the list routes that also take the bulk ``PUT``: DRF checks a ``PUT``
    against the one object it changes (``get_object``), which a list route has not (an AssertionError, a
    500). There, only the permissions decide which writes are described."""

    def determine_actions(self, request, view):
        if (view.lookup_url_kwarg or view.lookup_field) in view.kwargs:
            return super().determine_actions(request, view)
        actions = {}
        for method in {"PUT", "POST"} & set(view.allowed_methods):
            view.request = clone_request(request, method)
            try:
                view.check_permissions(view.request)
            except (exceptions.APIException, PermissionDenied, Http404):
                pass
            else:
                actions[method] = self.get_serializer_info(view.get_serializer())
            finally:
                view.request = request
        return actions
