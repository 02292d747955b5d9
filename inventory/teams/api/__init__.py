"""``/api/inventory/teams/``: the teams with their members (``views.TeamViewSet``)."""
