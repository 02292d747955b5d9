from rest_framework import viewsets


class PortalModelViewSet(viewsets.ModelViewSet):
    """Base for every model's API: a viewset declares ``queryset``, ``serializer_class`` and
    ``filterset_class``; filters, ordering, pagination and permissions come from the settings."""

    ordering = ["pk"]

    def get_ordering_fields(self):
        return "__all__"
