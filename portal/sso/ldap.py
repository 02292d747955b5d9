"""Logins against an LDAP directory through django-auth-ldap, configured from the environment (off unless
``LDAP_SERVER_URI`` is set; docs/authentication.md):

- ``LDAP_SERVER_URI`` (``ldap://host:389``, ``ldaps://host:636``), ``LDAP_START_TLS`` (1: StartTLS on ``ldap://``),
  ``LDAP_CA_FILE`` (the CA that signed the server's certificate), ``LDAP_TIMEOUT`` (seconds, default 5);
- ``LDAP_BIND_DN`` / ``LDAP_BIND_PASSWORD`` (the service account that searches; empty: anonymous);
- ``LDAP_USER_BASE`` and ``LDAP_USER_FILTER`` (default ``(uid=%(user)s)``): where a user is looked up, then bound
  as with the password given;
- ``LDAP_GROUP_BASE``, ``LDAP_GROUP_FILTER`` (default ``(objectClass=groupOfNames)``), ``LDAP_GROUP_TYPE``
  (``groupOfNames``, ``groupOfUniqueNames`` or ``posixGroup``): the user's groups, by ``cn``, which the mapping
  (``portal.sso.mapping``) turns into roles and teams at every login;
- ``LDAP_DENY_GROUP`` (a group's DN whose members may not log in: disabled accounts), ``LDAP_REQUIRE_GROUP``.

A directory that cannot be reached is said on the login page (``DirectoryDown``); local accounts still log in."""

BACKEND = "django_auth_ldap.backend.LDAPBackend"
GROUP_TYPES = {"groupOfNames": "GroupOfNamesType", "groupOfUniqueNames": "GroupOfUniqueNamesType",
               "posixGroup": "PosixGroupType"}


def ldap_settings(env):
    """The ``AUTH_LDAP_*`` settings from ``env``; {} when ``LDAP_SERVER_URI`` is not set."""
    uri = env.get("LDAP_SERVER_URI", "").strip()
    if not uri:
        return {}
    import ldap
    from django_auth_ldap import config

    missing = [name for name in ("LDAP_USER_BASE", "LDAP_GROUP_BASE") if not env.get(name)]
    if missing:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(f"LDAP_SERVER_URI is set: set {' and '.join(missing)} too.")
    group_type = env.get("LDAP_GROUP_TYPE", "groupOfNames")
    if group_type not in GROUP_TYPES:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(f"LDAP_GROUP_TYPE must be one of {', '.join(GROUP_TYPES)}, not {group_type!r}.")
    timeout = float(env.get("LDAP_TIMEOUT", "5"))
    options = {ldap.OPT_NETWORK_TIMEOUT: timeout, ldap.OPT_TIMEOUT: timeout, ldap.OPT_REFERRALS: 0}
    if env.get("LDAP_CA_FILE"):
        options[ldap.OPT_X_TLS_CACERTFILE] = env["LDAP_CA_FILE"]
        options[ldap.OPT_X_TLS_REQUIRE_CERT] = ldap.OPT_X_TLS_DEMAND
        options[ldap.OPT_X_TLS_NEWCTX] = 0  # applies the options above to the connection's TLS context
    found = {
        "AUTH_LDAP_SERVER_URI": uri,
        "AUTH_LDAP_START_TLS": env.get("LDAP_START_TLS", "").lower() in ("1", "true", "yes", "on"),
        "AUTH_LDAP_CONNECTION_OPTIONS": options,
        "AUTH_LDAP_BIND_DN": env.get("LDAP_BIND_DN", ""),
        "AUTH_LDAP_BIND_PASSWORD": env.get("LDAP_BIND_PASSWORD", ""),
        "AUTH_LDAP_USER_SEARCH": config.LDAPSearch(env["LDAP_USER_BASE"], ldap.SCOPE_SUBTREE,
                                                   env.get("LDAP_USER_FILTER", "(uid=%(user)s)")),
        "AUTH_LDAP_GROUP_SEARCH": config.LDAPSearch(env["LDAP_GROUP_BASE"], ldap.SCOPE_SUBTREE,
                                                    env.get("LDAP_GROUP_FILTER", "(objectClass=groupOfNames)")),
        "AUTH_LDAP_GROUP_TYPE": getattr(config, GROUP_TYPES[group_type])(name_attr="cn"),
        "AUTH_LDAP_USER_ATTR_MAP": {"first_name": "givenName", "last_name": "sn", "email": "mail"},
        "AUTH_LDAP_ALWAYS_UPDATE_USER": True,
        "AUTH_LDAP_FIND_GROUP_PERMS": False,  # roles come from the mapping, not from Django groups named alike
        "AUTH_LDAP_MIRROR_GROUPS": False,
        "AUTH_LDAP_CACHE_TIMEOUT": 0,  # a group removed in the directory counts at the next login
    }
    for name in ("DENY_GROUP", "REQUIRE_GROUP"):
        if env.get(f"LDAP_{name}"):
            found[f"AUTH_LDAP_{name}"] = env[f"LDAP_{name}"]
    return found


def connect():
    """Listen to django-auth-ldap's signals: map the groups at each LDAP login, note a directory that failed."""
    from django.contrib.auth.signals import user_logged_in
    from django_auth_ldap.backend import ldap_error

    user_logged_in.connect(map_groups, dispatch_uid="portal.sso.ldap.map_groups")
    ldap_error.connect(note_failure, dispatch_uid="portal.sso.ldap.note_failure")


def map_groups(sender, request, user, **kwargs):
    if getattr(user, "backend", None) != BACKEND or getattr(user, "ldap_user", None) is None:
        return
    from .mapping import apply

    apply(user, sorted(user.ldap_user.group_names), "ldap")


def note_failure(sender, context, user, request=None, exception=None, **kwargs):
    """The directory failed (down, refused the service account, timed out): said on the login page. A wrong
    password is no failure of the directory (django-auth-ldap sends no signal for it)."""
    import ldap

    if request is not None and not isinstance(exception, ldap.INVALID_CREDENTIALS):
        request.directory_error = exception
