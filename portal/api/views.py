from collections import OrderedDict

from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView


class APIRootView(APIView):
    """Cluster Portal API: one endpoint per app, plus the OpenAPI schema and its documentation.

    Authenticate with a session (log in to the portal) or a token from the Tokens page:
    `Authorization: Token <key>`.
    """

    permission_classes = [IsAuthenticated]
    # (name shown, URL name of the app's router root); set by portal.api.urls.
    apps = ()
    links = ()

    def get_view_name(self):
        return "API root"

    @extend_schema(exclude=True)
    def get(self, request, format=None):
        data = OrderedDict()
        for name, url_name in (*self.apps, *self.links):
            data[name] = reverse(url_name, request=request, format=format)
        return Response(data)


@csrf_exempt  # any method: a POST to a wrong URL is a 404 too, not a CSRF 403
def not_found(request, *args, **kwargs):
    """An /api/ URL that matches no endpoint (``/api/inventory/nodes/1.5/``): API clients get JSON."""
    return JsonResponse({"detail": f"No API endpoint at {request.path}; see /api/ and /api/schema/."}, status=404)
