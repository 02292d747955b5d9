"""What apps plug into the portal's frames: menu sections, home dashboard tiles and panels, the lines of its
"awaiting your decision", panels on other apps' object pages, global search providers and warm-up hooks.

``portal`` imports no app: each app registers its parts in its ``AppConfig.ready()``, and the home page, the
search page and ``portal.wsgi`` go through what is registered. Registering the same function twice is harmless.
"""

import functools
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils.module_loading import import_string

_menu = []
_panels = []
_tiles = []
_search_providers = []
_warmups = []


@dataclass(frozen=True)
class MenuSection:
    title: str
    items: tuple  # (label, URL name, permission needed)
    order: int  # lower first (left)


def register_menu(title, items, order):
    """A section of the main menu; a user sees the items whose permission they hold, and no empty section."""
    if all(section.title != title for section in _menu):
        _menu.append(MenuSection(title, tuple(items), order))
        _menu.sort(key=lambda section: section.order)


def menu(user):
    """[(section title, [(label, URL)])] that ``user`` may open."""
    shown = [(s.title, [(label, fixed_url(name)) for label, name, perm in s.items if user.has_perm(perm)])
             for s in _menu]
    return [(title, items) for title, items in shown if items]


def fixed_url(name):
    """The URL of a view without arguments (a menu item, a link of ``base.html``), reversed once per URLconf and
    script prefix: every page draws the menu and the top bar."""
    return _fixed_url(name, get_urlconf() or settings.ROOT_URLCONF, get_script_prefix())


@functools.lru_cache(maxsize=256)
def _fixed_url(name, urlconf, script_prefix):
    return reverse(name, urlconf=urlconf)


@dataclass(frozen=True)
class Panel:
    template: str  # rendered by portal/home.html with the page's context plus what ``context`` returns
    context: Callable  # (request) -> dict of template variables, or None when the user may not see the panel
    order: int  # lower first
    wide: bool = False  # full width under the others (the home page shows the others two by two)


def register_panel(template, context, order, wide=False):
    if all(panel.context is not context for panel in _panels):
        _panels.append(Panel(template, context, order, wide))
        _panels.sort(key=lambda panel: panel.order)
    return context


def panels_by_width(request):
    """(narrow, wide): the panels ``request.user`` may see, each [(template, context)] in order."""
    shown = [(panel.template, panel.context(request), panel.wide) for panel in _panels]
    shown = [(template, context, wide) for template, context, wide in shown if context is not None]
    return [(t, c) for t, c, wide in shown if not wide], [(t, c) for t, c, wide in shown if wide]


@dataclass(frozen=True)
class Tiles:
    context: Callable  # (request) -> [Tile], or None when the user may not see them
    order: int  # lower first


@dataclass(frozen=True)
class Tile:
    """One figure at the top of the home dashboard, linked to the page that details it."""

    key: str  # the tile's HTML id: tile-<key>
    label: str
    value: str  # already formatted
    url: str
    note: str = ""  # what the figure compares with or how it was priced
    warn: bool = False  # needs attention


def register_tiles(context, order):
    if all(group.context is not context for group in _tiles):
        _tiles.append(Tiles(context, order))
        _tiles.sort(key=lambda group: group.order)
    return context


def tiles(request):
    """[Tile] of every app that ``request.user`` may see, in order."""
    return [tile for group in _tiles for tile in (group.context(request) or [])]


@dataclass(frozen=True)
class Decision:
    """One line of the home page's "awaiting your decision": what waits for this user, linked to the page where it
    is decided (a submitted plan, an allocation request, changes to apply to Slurm...)."""

    key: str  # the line's HTML id: decision-<key>
    count: int
    text: str  # what waits, e.g. "capacity plans submitted for your approval"
    url: str
    note: str = ""


@dataclass(frozen=True)
class Decisions:
    context: Callable  # (request) -> [Decision] (count 0 for nothing waiting), or None when the user decides none
    order: int  # lower first


_decisions = []


def register_decisions(context, order):
    """What an app asks a user to decide, for the home page's "awaiting your decision"."""
    if all(group.context is not context for group in _decisions):
        _decisions.append(Decisions(context, order))
        _decisions.sort(key=lambda group: group.order)
    return context


def decisions(request):
    """[Decision] with something waiting for ``request.user``, in order; None when the user may decide none of the
    kinds registered (the home page then shows no such tile)."""
    found = [group.context(request) for group in _decisions]
    if all(lines is None for lines in found):
        return None
    return [line for lines in found for line in (lines or []) if line.count]


@dataclass(frozen=True)
class ObjectPanel:
    model: str  # "inventory.node": the pages of that model's objects show the panel
    template: str
    context: Callable  # (request, obj) -> dict of template variables, or None when the user may not see it


_object_panels = []
_tiles = []


def register_object_panel(model, template, context):
    """A panel another app adds to an object's page (support's tickets on a node's page), in registration order."""
    if all(panel.context is not context or panel.model != model for panel in _object_panels):
        _object_panels.append(ObjectPanel(model, template, context))
    return context


def object_panels(request, obj):
    """[(template, context)] of the panels registered for ``obj``'s model that ``request.user`` may see."""
    shown = [(p.template, p.context(request, obj)) for p in _object_panels if p.model == obj._meta.label_lower]
    return [(template, context) for template, context in shown if context is not None]


@dataclass(frozen=True)
class SearchGroup:
    """One kind of object that a search found (built by ``portal.search.search_group``)."""

    title: str  # "Nodes"
    objects: list  # the first matches (``portal.search.LIMIT``), exact ones first; each has get_absolute_url()
    total: int  # how many match in all: the page says "first 20 of N" when it shows fewer
    exact: list  # those of ``objects`` whose identifying field (hostname, ticket number...) equals the term


@dataclass(frozen=True)
class SearchProvider:
    find: Callable  # (term, user) -> [SearchGroup]: only non-empty groups of what ``user`` may see
    looks_at: tuple  # ((what, permission)): "node hostnames, serials and asset tags", "inventory.view_node"


def register_search_provider(find, looks_at):
    """``find(term, user) -> [SearchGroup]``, one query per group. ``looks_at`` says what it searches, for the
    search page's help, each part shown to the users who hold its permission. The search page opens the object
    when exactly one object of all the groups is an exact match (``SearchGroup.exact``), and lists the groups
    otherwise."""
    if all(provider.find is not find for provider in _search_providers):
        _search_providers.append(SearchProvider(find, tuple(looks_at)))
    return find


def search(term, user):
    """Every provider's groups, in the order the providers were registered (app order)."""
    return [group for provider in _search_providers for group in provider.find(term, user)]


def search_looks_at(user):
    """[what] the search looks at for ``user``, in provider order."""
    return [what for provider in _search_providers for what, perm in provider.looks_at if user.has_perm(perm)]


def register_warmup(path):
    """The dotted path of a function run once when a web server boots (``portal.wsgi``), e.g. to import slow
    libraries then rather than in the first request that needs them. A path, so that registering imports nothing
    in processes that never serve pages (commands, workers)."""
    if path not in _warmups:
        _warmups.append(path)


def warm_up():
    for path in _warmups:
        import_string(path)()
