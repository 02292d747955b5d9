"""The statement and rate card pages, included in the inventory's URLs (names ``inventory:statement…`` and
``inventory:ratecard…``)."""


from portal.generic import object_urls

from . import views
from .forms import RateCardForm
from .models import RateCard, Statement

urlpatterns = [
    *object_urls(Statement, views.StatementListView, views.StatementView, read_only=True, extra=[
        ("<int:pk>/csv/", views.StatementDownloadView.as_view(kind="csv"), "csv"),
        ("<int:pk>/pdf/", views.StatementDownloadView.as_view(kind="pdf"), "pdf"),
        ("issue/", views.IssueView.as_view(), "issue"),
    ]),
    *object_urls(RateCard, views.RateCardListView, views.RateCardView, RateCardForm,
                 edit_view=views.RateCardEditView.as_view()),
]
