"""Django's admin autodiscovery imports ``planning.admin``: each feature registers its models in its own module."""

from .contracts import admin as contracts_admin  # noqa: F401
from .plans import admin as plans_admin  # noqa: F401
from .procurement import admin as procurement_admin  # noqa: F401
from .recommendations import admin as recommendations_admin  # noqa: F401
from .webhooks import admin as webhooks_admin  # noqa: F401
