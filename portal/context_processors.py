from . import registry
from .roles import role_of


def navigation(request):
    """The main menu (the sections apps register, ``portal.registry.register_menu``) and the user's role.

    Built once per request: every template rendered with the request (a page, each django-tables2 table in it)
    runs the context processors again, and the role costs a query."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    built = getattr(request, "_portal_navigation", None)
    if built is None or built[0] is not user:  # a login or logout within the request changes the user
        built = request._portal_navigation = (user, {"navigation": registry.menu(user), "user_role": role_of(user)})
    return built[1]
