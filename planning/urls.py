"""Planning pages. Contracts (views.py) first, then procurement: orders, deliveries, webhooks
(procurement_views.py)."""

app_name = "planning"

urlpatterns = [
    # --- contracts ---
    # --- procurement ---
]
