"""The base of the apps' policy modules (``<app>/policy.py``): who may do what, as named ``rules`` predicates
registered as permissions, so that views, the API, tables and templates all ask ``user.has_perm(name, obj)``.

Roles grant model permissions (``portal.roles``); a policy rule combines them with what the object says (whose
ticket it is, which kind of asset). Rules get names that are not model permissions (``support.edit_ticket``,
not ``support.change_ticket``), so ``ModelBackend`` answers the one and ``rules`` the other.

Django grants an active superuser every permission without asking any backend: a rule says who may act, never
whether the action makes sense now (a resolved ticket with nothing to return to service); callers check that.
"""

import rules


def has_model_perm(name):
    """A predicate: the user holds the model permission ``name`` (``"support.view_ticket"``) through a role."""

    def check(user):
        return user.has_perm(name)

    return rules.predicate(check, name=f"has_model_perm({name})")
