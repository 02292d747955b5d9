from django.apps import AppConfig


class SupportConfig(AppConfig):
    name = "support"
    verbose_name = "Support"

    def ready(self):
        from portal.files import delete_file_with_row

        from . import policy  # noqa: F401  (registers the support rules)

        delete_file_with_row(self.get_model("TicketAttachment"))

        from planning import recommendations

        from .queries import hardware_ticket_days

        if hardware_ticket_days not in recommendations.FAULT_DAY_SOURCES:
            recommendations.FAULT_DAY_SOURCES.append(hardware_ticket_days)
