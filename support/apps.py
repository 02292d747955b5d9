from django.apps import AppConfig


class SupportConfig(AppConfig):
    name = "support"
    verbose_name = "Support"

    def ready(self):
        from portal.files import delete_file_with_row

        delete_file_with_row(self.get_model("TicketAttachment"))
