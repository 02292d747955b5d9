from collections import OrderedDict

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
