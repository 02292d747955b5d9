"""Planning pages: each feature's URLs, under the one ``planning`` namespace."""

from .calibration import urls as calibration
from .contracts import urls as contracts
from .plans import urls as plans
from .procurement import urls as procurement
from .recommendations import urls as recommendations
from .sizing import urls as sizing
from .webhooks import urls as webhooks

app_name = "planning"

urlpatterns = [
    *contracts.urlpatterns,
    *procurement.urlpatterns,
    *webhooks.urlpatterns,
    *plans.urlpatterns,
    *sizing.urlpatterns,
    *recommendations.urlpatterns,
    *calibration.urlpatterns,
]
