"""Support pages, under ``/support/`` (namespace ``support``)."""

from django.urls import path

from portal.generic import ObjectDeleteView

from . import views
from .models import Ticket

app_name = "support"

urlpatterns = [
    path("tickets/", views.TicketListView.as_view(), name="ticket_list"),
    path("tickets/add/", views.TicketCreateView.as_view(), name="ticket_add"),
    path("tickets/<int:pk>/", views.TicketView.as_view(), name="ticket_detail"),
    path("tickets/<int:pk>/edit/", views.TicketEditView.as_view(), name="ticket_edit"),
    path("tickets/<int:pk>/delete/", ObjectDeleteView.as_view(queryset=Ticket.objects.all()), name="ticket_delete"),
    path("tickets/<int:pk>/status/", views.TicketStatusView.as_view(), name="ticket_status"),
    path("tickets/<int:pk>/comments/", views.TicketCommentView.as_view(), name="ticket_comment"),
    path("tickets/<int:pk>/inline/", views.TicketInlineView.as_view(), name="ticket_inline"),
    path("tickets/<int:pk>/swap/", views.TicketSwapView.as_view(), name="ticket_swap"),
    path("tickets/<int:pk>/return-to-service/", views.ReturnToServiceView.as_view(), name="ticket_return"),
    path("attachments/<int:pk>/", views.AttachmentDownloadView.as_view(), name="attachment_download"),
    path("metrics/", views.MetricsView.as_view(), name="metrics"),
]
