"""Accounts for tests: a user with a role, and an API client that authenticates with a token."""

from django.contrib.auth.models import Group, User


def make_user(username, role):
    user = User.objects.create_user(username=username, password="pw-" + username, email=f"{username}@example.org")
    if role:
        user.groups.add(Group.objects.get(name=role))
    return user


def token_client(user, name="tests"):
    """A DRF test client that authenticates with a fresh API token of ``user``, as integrations do."""
    from rest_framework.test import APIClient

    from portal.models import APIToken

    _, key = APIToken.issue(user, name)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client
