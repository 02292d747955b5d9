"""Planning pages. Contracts (views.py) first, then procurement: orders, deliveries, webhooks
(procurement_views.py)."""

from . import procurement_views

app_name = "planning"

urlpatterns = [
    # --- contracts ---
    # --- procurement ---
    *procurement_views.procurement_urls,
]
