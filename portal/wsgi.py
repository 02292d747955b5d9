import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
application = get_wsgi_application()

# A web server boots here: run the apps' warm-up hooks (e.g. loading the forecasting libraries) before the first
# request needs them.
from portal.registry import warm_up  # noqa: E402

warm_up()
