"""The partition move pages, included in the inventory's URLs (names ``inventory:partitionmove…``)."""

from django.urls import path

from . import views

urlpatterns = [
    path("partition-moves/", views.PartitionMoveListView.as_view(), name="partitionmove_list"),
    path("partition-moves/propose/", views.PartitionMoveAddView.as_view(), name="partitionmove_add"),
    path("partition-moves/<int:pk>/", views.PartitionMoveView.as_view(), name="partitionmove_detail"),
    path("partition-moves/<int:pk>/decide/", views.PartitionMoveDecisionView.as_view(), name="partitionmove_decide"),
]
