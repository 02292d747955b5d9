"""Notification rule pages, included in the support URLs (``/support/notifications/``, names
``support:notificationrule_…``)."""

from django.urls import path

from . import views

urlpatterns = [
    path("notifications/", views.NotificationRuleListView.as_view(), name="notificationrule_list"),
    path("notifications/add/", views.NotificationRuleEditView.as_view(), name="notificationrule_add"),
    path("notifications/<int:pk>/", views.NotificationRuleView.as_view(), name="notificationrule_detail"),
    path("notifications/<int:pk>/edit/", views.NotificationRuleEditView.as_view(), name="notificationrule_edit"),
    path("notifications/<int:pk>/delete/", views.NotificationRuleDeleteView.as_view(),
         name="notificationrule_delete"),
    path("notifications/<int:pk>/test/", views.NotificationRuleTestView.as_view(), name="notificationrule_test"),
]
