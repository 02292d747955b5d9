from django.apps import AppConfig


class SupportConfig(AppConfig):
    name = "support"
    verbose_name = "Support"

    def ready(self):
        from portal import events
        from portal.files import delete_file_with_row
        from portal.registry import (
            register_menu,
            register_object_panel,
            register_panel,
            register_search_provider,
            register_tiles,
        )

        from . import policy  # noqa: F401  (registers the support rules)
        from .dashboard import asset_tickets_panel, sla_panel, support_tiles
        from .eventrules import delivery as notification_rules
        from .eventrules import policy as notification_policy  # noqa: F401  (registers the notification rules' rules)
        from .queries import SEARCH_LOOKS_AT, search

        delete_file_with_row(self.get_model("TicketAttachment"))
        register_tiles(support_tiles, order=40)
        register_panel("support/panels/sla_tickets.html", sla_panel, order=40)
        register_search_provider(search, looks_at=SEARCH_LOOKS_AT)
        for asset in ("inventory.node", "inventory.gpu"):
            register_object_panel(asset, "support/asset_tickets.html", asset_tickets_panel)
        register_menu("Support", order=40, items=[
            ("Tickets", "support:ticket_list", "support.view_support_pages"),  # researchers: theirs and their teams'
            ("Report a problem", "support:ticket_add", "support.open_ticket"),
            ("Support metrics", "support:metrics", "support.read_every_ticket"),
            ("Notifications", "support:notificationrule_list", "support.read_rule"),  # one's own rules, teams'
        ])
        events.subscribe(notification_rules.hear)  # business events reach the users and teams subscribed to them

        from inventory.goodput.hooks import register_ticket_finder
        from planning.recommendations import gather

        from .queries import hardware_ticket_days, interruption_tickets

        register_ticket_finder(interruption_tickets)  # the interruptions list links each fault's ticket

        from .advice import register as register_advice

        register_advice()  # "Open a ticket" on a reclaim recommendation

        if hardware_ticket_days not in gather.FAULT_DAY_SOURCES:
            gather.FAULT_DAY_SOURCES.append(hardware_ticket_days)
