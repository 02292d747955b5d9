from django.apps import AppConfig


class InventoryConfig(AppConfig):
    name = "inventory"
    verbose_name = "Inventory"

    def ready(self):
        from portal.registry import (
            register_decisions,
            register_menu,
            register_object_panel,
            register_panel,
            register_search_provider,
            register_tiles,
        )
        from portal.sso.mapping import register_team_grants

        from . import policy  # noqa: F401  (registers the inventory's rules)
        from .allocations import policy as allocation_policy  # noqa: F401  (the allocations' rules)
        from .allocations.dashboard import allocation_tiles
        from .dashboard import (
            allocation_decisions,
            capacity_object_panel,
            fleet_panel,
            fleet_tiles,
            health_tiles,
            least_used_panel,
            utilization_tiles,
        )
        from .partitionmoves import policy as partitionmove_policy  # noqa: F401  (the moves' rules)
        from .queries import SEARCH_LOOKS_AT, search
        from .statements import policy as statement_policy  # noqa: F401  (the statements' rules)
        from .teams.membership import grant_teams, team_problem
        from .telemetry import allocation_rollup

        allocation_rollup.connect()
        register_team_grants(grant_teams, team_problem)  # directory groups → teams at every login
        register_tiles(health_tiles, order=5)  # broken hardware first (issue 37)
        register_tiles(utilization_tiles, order=10)
        register_tiles(fleet_tiles, order=20)
        register_tiles(allocation_tiles, order=25)
        register_decisions(allocation_decisions, order=20)
        register_panel("inventory/panels/least_used.html", least_used_panel, order=10)
        register_panel("inventory/panels/fleet.html", fleet_panel, order=90, wide=True)  # under the story
        register_search_provider(search, looks_at=SEARCH_LOOKS_AT)
        for scope in ("inventory.site", "inventory.gpumodel"):  # their GPUs, as every page counts them
            register_object_panel(scope, "inventory/panels/capacity_object.html", capacity_object_panel)
        register_menu("Inventory", order=10, items=[
            ("Sites", "inventory:site_list", "inventory.view_site"),
            ("Racks", "inventory:rack_list", "inventory.view_rack"),
            ("Nodes", "inventory:node_list", "inventory.view_node"),
            ("GPUs", "inventory:gpu_list", "inventory.view_gpu"),
            ("Fabrics", "inventory:fabric_list", "inventory.view_fabric"),
            ("Switches", "inventory:switch_list", "inventory.view_switch"),
            ("Fabric attachments", "inventory:fabricattachment_list", "inventory.view_fabricattachment"),
            ("Storage", "inventory:storagesystem_list", "inventory.view_storagesystem"),
            ("Partition moves", "inventory:partitionmove_list", "inventory.view_partitionmove"),
        ])
        register_menu("Telemetry", order=20, items=[
            ("Utilization", "inventory:utilization", "inventory.read_telemetry"),
            ("Goodput", "inventory:goodput", "inventory.read_telemetry"),
            ("Teams", "inventory:teams", "inventory.read_telemetry"),
            ("Allocations", "inventory:teamallocation_list", "inventory.read_allocation"),
            ("Interruptions", "inventory:interruption_list", "inventory.read_telemetry"),
            ("Statements", "inventory:statement_list", "inventory.read_statement"),
            ("Telemetry sources", "inventory:telemetrysource_list", "inventory.view_telemetrysource"),
        ])
        register_menu("Catalog", order=90, items=[
            ("GPU models", "inventory:gpumodel_list", "inventory.view_gpumodel"),
            ("Node models", "inventory:nodemodel_list", "inventory.view_nodemodel"),
        ])
