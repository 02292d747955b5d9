"""Logins by a header that an authenticating reverse proxy sets (Apache's mod_auth_mellon or mod_auth_openidc,
oauth2-proxy, Shibboleth, …), trusted only from the proxy's addresses; off unless both are set
(docs/authentication.md):

- ``REMOTE_USER_HEADER`` (``X-Remote-User``): the header with the user's name;
- ``TRUSTED_PROXIES`` (CIDRs, comma separated: ``10.0.0.5/32,10.0.1.0/24``): the addresses the header is believed
  from. From any other address the header (and the groups header) is dropped before anything reads it: a client that
  reaches the portal around the proxy logs in as nobody;
- ``REMOTE_USER_GROUPS_HEADER`` (optional, ``X-Remote-Groups``) and ``REMOTE_USER_GROUPS_SEPARATOR`` (default
  ``,``): the user's groups, which the mapping (``portal.sso.mapping``) turns into roles and teams at each login,
  source ``remote_user``;
- ``REMOTE_USER_EMAIL_HEADER`` (optional): the user's e-mail address.

The middleware is ``portal.sso.middleware.TrustedProxyRemoteUserMiddleware`` (Django's ``RemoteUserMiddleware``: a
session that came from the header ends when a request comes without it), the backend
``portal.sso.backends.TrustedProxyRemoteUserBackend`` (Django's ``RemoteUserBackend``)."""

import ipaddress

BACKEND = "portal.sso.backends.TrustedProxyRemoteUserBackend"
MIDDLEWARE = "portal.sso.middleware.TrustedProxyRemoteUserMiddleware"


def meta_key(header):
    """``X-Remote-User`` → ``HTTP_X_REMOTE_USER``, where Django keeps a request's header."""
    return "HTTP_" + header.strip().upper().replace("-", "_")


def remote_user_settings(env):
    """``{"REMOTE_USER": {...}}`` from ``env``; {} when ``REMOTE_USER_HEADER`` is not set."""
    header = env.get("REMOTE_USER_HEADER", "").strip()
    if not header:
        return {}
    from django.core.exceptions import ImproperlyConfigured

    proxies = [item.strip() for item in env.get("TRUSTED_PROXIES", "").split(",") if item.strip()]
    if not proxies:
        raise ImproperlyConfigured("REMOTE_USER_HEADER is set: set TRUSTED_PROXIES too (the proxy's addresses, "
                                   "CIDRs): a header believed from anywhere lets anyone log in as anyone.")
    try:
        networks = [ipaddress.ip_network(item, strict=False) for item in proxies]
    except ValueError as error:
        raise ImproperlyConfigured(f"TRUSTED_PROXIES: {error}") from None
    optional = {name: meta_key(env[f"REMOTE_USER_{name.upper()}_HEADER"]) if env.get(
        f"REMOTE_USER_{name.upper()}_HEADER", "").strip() else None for name in ("groups", "email")}
    return {"REMOTE_USER": {"header": meta_key(header), "proxies": networks,
                            "groups_header": optional["groups"], "email_header": optional["email"],
                            "groups_separator": env.get("REMOTE_USER_GROUPS_SEPARATOR", ",") or ","}}


def trusted(config, address):
    try:
        found = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(found in network for network in config["proxies"])


def groups_of(config, meta):
    if not config["groups_header"]:
        return None  # no groups header: the mapping is not applied
    raw = meta.get(config["groups_header"], "")
    return sorted({group.strip() for group in raw.split(config["groups_separator"]) if group.strip()})
