from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from .models import Ticket, TicketAttachment, TicketComment


class TicketCommentInline(admin.TabularInline):
    model = TicketComment
    extra = 0
    fields = ("author_name", "internal", "body", "created")
    readonly_fields = ("author_name", "created")


class TicketAttachmentInline(admin.TabularInline):
    model = TicketAttachment
    extra = 0
    fields = ("name", "content_type", "size", "uploaded_by", "uploaded")
    readonly_fields = fields
    can_delete = True

    def has_add_permission(self, request, obj=None):
        return False  # uploads go through the ticket page, which checks size and type


@admin.register(Ticket)
class TicketAdmin(SimpleHistoryAdmin):
    list_display = ("id", "title", "priority", "status", "category", "assignee", "team", "site", "opened",
                    "resolution_due")
    list_filter = ("status", "priority", "category", "source", "team")
    search_fields = ("title", "description", "rma_number")
    raw_id_fields = ("node", "gpu", "switch", "storage_system")
    readonly_fields = ("status", "fault_key", "sla_contract", "response_due", "resolution_due", "first_response_at",
                       "paused_since", "paused_seconds", "resolved_at", "closed_at")
    inlines = [TicketCommentInline, TicketAttachmentInline]
