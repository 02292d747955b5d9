"""``/api/``: the API root, the OpenAPI schema and its documentation, and one router per app.

Adding an app's API: add ``(name, module)`` to ``APPS``; the module's ``urlpatterns`` is mounted at
``/api/<name>/`` under the namespace ``<name>-api`` and listed on the root page.
"""

from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView
from rest_framework.routers import SimpleRouter

from .history import ChangesView
from .tokens import APITokenViewSet
from .views import APIRootView, not_found

APPS = [("inventory", "inventory.api.urls"), ("planning", "planning.api.urls"), ("support", "support.api.urls")]

LINKS = [("changes", "api-changes"), ("tokens", "apitoken-list"),
         ("schema", "api-schema"), ("docs", "api-docs"), ("redoc", "api-redoc")]

tokens = SimpleRouter()
tokens.register("tokens", APITokenViewSet, basename="apitoken")

urlpatterns = [
    path(
        "",
        APIRootView.as_view(apps=[(name, f"{name}-api:api-root") for name, _ in APPS], links=LINKS),
        name="api-root",
    ),
    path("changes/", ChangesView.as_view(), name="api-changes"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="api-schema"), name="api-redoc"),
    *tokens.urls,
    *(path(f"{name}/", include((module, f"{name}-api"))) for name, module in APPS),
    re_path(r"", not_found),  # last: any other /api/ URL is a JSON 404, not the portal's HTML page
]
