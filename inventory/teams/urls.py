"""The team pages, by the team's name (its Slurm account, what the figures group by), not by id; included by
``inventory.urls``. The add page's ``+`` cannot begin a team's name: no team's page is shadowed by it."""

from django.urls import path

from . import views

urlpatterns = [
    path("teams/", views.TeamListView.as_view(), name="teams"),
    path("teams/+add/", views.TeamEditView.as_view(), name="team_add"),
    path("teams/<str:name>/", views.TeamView.as_view(), name="team"),
    path("teams/<str:name>/edit/", views.TeamEditView.as_view(), name="team_edit"),
]
