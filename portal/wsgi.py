import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
application = get_wsgi_application()

# A web server boots here: load the forecasting libraries before the first request needs them.
from planning.plans.forecast import preload  # noqa: E402

preload()
