from django.conf import settings
from rest_framework import versioning


class AcceptHeaderVersioning(versioning.AcceptHeaderVersioning):
    """``Accept: application/json; version=1.0`` pins the API version; no version means the current one.
    An unknown version is a 406 that says which versions this server speaks."""

    @property
    def invalid_version_message(self):
        versions = ", ".join(settings.REST_FRAMEWORK["ALLOWED_VERSIONS"])
        return (f"Unknown API version in the Accept header. This server speaks version {versions}: send "
                f"'Accept: application/json; version={settings.API_VERSION}' or leave the version out.")
