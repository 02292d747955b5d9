from django.apps import AppConfig


class SupportConfig(AppConfig):
    name = "support"
    verbose_name = "Support"

    def ready(self):
        from portal.files import delete_file_with_row

        delete_file_with_row(self.get_model("TicketAttachment"))

        from planning.recommendations import gather

        from .queries import hardware_ticket_days

        if hardware_ticket_days not in gather.FAULT_DAY_SOURCES:
            gather.FAULT_DAY_SOURCES.append(hardware_ticket_days)
