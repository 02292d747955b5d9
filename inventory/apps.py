from django.apps import AppConfig


class InventoryConfig(AppConfig):
    name = "inventory"
    verbose_name = "Inventory"

    def ready(self):
        from portal.registry import register_panel, register_search_provider

        from . import policy  # noqa: F401  (registers the inventory's rules)
        from .dashboard import fleet_panel
        from .queries import search

        register_panel("inventory/panels/fleet.html", fleet_panel, order=10)
        register_search_provider(search)
