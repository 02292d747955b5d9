from rest_framework.routers import DefaultRouter


class PortalRouter(DefaultRouter):
    """DRF's router, with the bulk methods of ``PortalModelViewSet`` on the list route: ``PUT``/``PATCH``
    a list of objects with ids, ``DELETE`` a list of ids. A viewset without those methods gets no such
    route (the router maps only what the viewset has)."""

    routes = [
        DefaultRouter.routes[0]._replace(mapping={
            **DefaultRouter.routes[0].mapping,
            "put": "bulk_update",
            "patch": "bulk_partial_update",
            "delete": "bulk_destroy",
        }),
        *DefaultRouter.routes[1:],
    ]
