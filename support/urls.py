"""Support pages, under ``/support/`` (namespace ``support``)."""

from django.urls import path

from portal.generic import object_urls

from . import views
from .eventrules import urls as notification_urls
from .models import Ticket

app_name = "support"

urlpatterns = [
    # Researchers open tickets with a simpler form than the one support staff edit them with.
    *object_urls(Ticket, views.TicketListView, views.TicketView, add_view=views.TicketCreateView.as_view(),
                 edit_view=views.TicketEditView.as_view(), extra=[
        ("<int:pk>/status/", views.TicketStatusView.as_view(), "status"),
        ("<int:pk>/assign-to-me/", views.TicketAssignToMeView.as_view(), "assign_to_me"),
        ("<int:pk>/comments/", views.TicketCommentView.as_view(), "comment"),
        ("<int:pk>/inline/", views.TicketInlineView.as_view(), "inline"),
        ("<int:pk>/swap/", views.TicketSwapView.as_view(), "swap"),
        ("<int:pk>/return-to-service/", views.ReturnToServiceView.as_view(), "return"),
    ]),
    path("attachments/<int:pk>/", views.AttachmentDownloadView.as_view(), name="attachment_download"),
    path("metrics/", views.MetricsView.as_view(), name="metrics"),
    path("pickers/<slug:kind>/", views.AssetPickerView.as_view(), name="picker"),
    *notification_urls.urlpatterns,
]
