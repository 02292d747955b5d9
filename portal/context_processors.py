from . import registry
from .roles import role_of


def navigation(request):
    """The main menu (the sections apps register, ``portal.registry.register_menu``) and the user's role."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"navigation": registry.menu(user), "user_role": role_of(user)}
