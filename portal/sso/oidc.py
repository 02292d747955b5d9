"""Logins through an OpenID Connect provider (Keycloak, Entra ID, Okta, Authentik, …) with Authlib, configured from
the environment (off unless ``OIDC_ISSUER`` is set; docs/authentication.md):

- ``OIDC_ISSUER`` (``https://id.lab.example/realms/lab``: its ``/.well-known/openid-configuration`` is read),
  ``OIDC_CLIENT_ID``, ``OIDC_CLIENT_SECRET``;
- ``OIDC_PROVIDER_NAME`` (the login page's "Log in with …", default "single sign-on"), ``OIDC_SCOPES`` (default
  ``openid email profile``; add the one that brings the groups claim where the provider needs it);
- ``OIDC_GROUPS_CLAIM`` (default ``groups``: a list of names, or one name), which the mapping
  (``portal.sso.mapping``) turns into roles and teams at every login, source ``oidc``;
- ``OIDC_USERNAME_CLAIM`` (default ``preferred_username``, then ``sub``): the portal account's name;
- ``OIDC_LOGOUT`` (default 1: logging out of the portal ends the provider's session too, RP-initiated logout),
  ``OIDC_CLOCK_SKEW`` (seconds of clock difference tolerated on the ID token's times, default 60),
  ``OIDC_TIMEOUT`` (seconds for each call to the provider, default 10).

The flow is the authorization code with PKCE (S256); Authlib checks the ID token's signature (the provider's JWKS),
issuer, audience, expiry and nonce. Claims the ID token lacks (providers put the groups in the userinfo answer) are
read from the userinfo endpoint. The portal's session ends when the ID token expires, or sooner."""

BACKEND = "portal.sso.backends.OIDCBackend"  # settings import this module: nothing of Django's models here
_clients = {}


def env_flag(env, name, default):
    return env.get(name, default).strip().lower() in ("1", "true", "yes", "on")


def oidc_settings(env):
    """``{"OIDC": {...}}`` from ``env``; {} when ``OIDC_ISSUER`` is not set."""
    issuer = env.get("OIDC_ISSUER", "").strip().rstrip("/")
    if not issuer:
        return {}
    missing = [name for name in ("OIDC_CLIENT_ID", "OIDC_CLIENT_SECRET") if not env.get(name)]
    if missing:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(f"OIDC_ISSUER is set: set {' and '.join(missing)} too.")
    scopes = env.get("OIDC_SCOPES", "openid email profile").split()
    return {"OIDC": {
        "issuer": issuer,
        "client_id": env["OIDC_CLIENT_ID"],
        "client_secret": env["OIDC_CLIENT_SECRET"],
        "provider_name": env.get("OIDC_PROVIDER_NAME", "").strip() or "single sign-on",
        "scopes": " ".join(["openid", *(scope for scope in scopes if scope != "openid")]),
        "groups_claim": env.get("OIDC_GROUPS_CLAIM", "groups").strip(),
        "username_claim": env.get("OIDC_USERNAME_CLAIM", "preferred_username").strip(),
        "logout": env_flag(env, "OIDC_LOGOUT", "1"),
        "clock_skew": int(env.get("OIDC_CLOCK_SKEW", "60")),
        "timeout": float(env.get("OIDC_TIMEOUT", "10")),
    }}


def origin(url):
    """``scheme://host[:port]`` of ``url``: what the Content-Security-Policy's form-action lets logging out reach."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def config():
    """The ``OIDC`` settings, or None where OpenID Connect is off."""
    from django.conf import settings

    return getattr(settings, "OIDC", None) or None


class ProviderError(Exception):
    """The provider could not be asked, or answered something that is not what the portal asked for."""


def client():
    """The Authlib client for the configured provider, made once per configuration; its discovery document is read
    at first use and checked to be the issuer's own."""
    found = config()
    key = tuple(sorted(found.items()))
    if key not in _clients:
        from authlib.integrations.django_client import OAuth

        registry = OAuth()
        _clients.clear()
        _clients[key] = registry.register(
            name="oidc", client_id=found["client_id"], client_secret=found["client_secret"],
            server_metadata_url=f"{found['issuer']}/.well-known/openid-configuration",
            client_kwargs={"scope": found["scopes"], "code_challenge_method": "S256",
                           "default_timeout": found["timeout"]})
    app = _clients[key]
    metadata = app.load_server_metadata()
    if metadata.get("issuer", "").rstrip("/") != found["issuer"]:
        raise ProviderError(f"the discovery document names issuer {metadata.get('issuer')!r}, not {found['issuer']!r}")
    return app


def errors():
    """What a failed login through the provider raises: a refused or tampered token, a provider down."""
    import requests
    from authlib.integrations.base_client import OAuthError
    from joserfc.errors import JoseError

    return (OAuthError, JoseError, ProviderError, requests.RequestException, ValueError, KeyError)


def claims(app, token):
    """The ID token's claims (already checked by Authlib), with what only the userinfo endpoint says added (the
    groups, often); the userinfo answer counts only when it is about the same ``sub``."""
    found = dict(token["userinfo"])
    wanted = config()["groups_claim"]
    if wanted not in found and app.load_server_metadata().get("userinfo_endpoint"):
        extra = dict(app.userinfo(token=token))
        if extra.get("sub") != found.get("sub"):
            raise ProviderError("the userinfo answer is about another subject")
        found = {**extra, **found}
    return found


def groups_of(found):
    value = found.get(config()["groups_claim"]) or []
    return sorted({str(group) for group in ([value] if isinstance(value, str) else value)})
