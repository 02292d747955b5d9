"""The allowed import directions between the apps (docs: DESIGN.md), read from the source with ``ast``: nothing is
imported, so a lazy import inside a function counts as much as one at the top of a module.

``support`` → ``planning`` → ``inventory`` → ``portal``: an app imports only the ones to its right."""

import ast

from tests.helpers.paths import ROOT

APPS = ["portal", "inventory", "planning", "support"]
FORBIDDEN = {  # app: the apps it must not import
    "portal": {"inventory", "planning", "support"},
    "inventory": {"planning", "support"},
    "planning": {"support"},
    "support": set(),
}


def imported_modules(path, nodes):
    """(line, dotted module) of each import among ``nodes``; relative imports resolved against ``path``."""
    package = path.relative_to(ROOT).parts[:-1]  # a module's package, or the package of an __init__.py
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = list(package[:len(package) - node.level + 1]) if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            yield node.lineno, module
            for alias in node.names:  # ``from inventory import models`` imports inventory.models
                yield node.lineno, f"{module}.{alias.name}"


def parsed(app):
    for path in sorted((ROOT / app).rglob("*.py")):
        yield path, ast.parse(path.read_text(), filename=str(path))


def test_apps_import_only_in_the_allowed_direction():
    violations = {}  # file:line → the module imported there
    for app in APPS:
        for path, tree in parsed(app):
            for line, module in imported_modules(path, ast.walk(tree)):
                if module.split(".")[0] in FORBIDDEN[app]:
                    violations.setdefault(f"{path.relative_to(ROOT)}:{line}", module)
    assert not violations, "\n".join(f"{where} imports {module}" for where, module in sorted(violations.items()))


def test_telemetry_models_do_not_import_the_inventory_models_at_module_level():
    """``inventory/models.py`` imports the telemetry models (Django finds them there): importing it back is a
    cycle."""
    path = ROOT / "inventory" / "telemetry" / "models.py"
    tree = ast.parse(path.read_text(), filename=str(path))
    found = [f"{path.relative_to(ROOT)}:{line} imports {module}"
             for line, module in imported_modules(path, tree.body) if module == "inventory.models"]
    assert not found, "\n".join(found)


def test_the_checks_see_imports_of_every_kind():
    """The resolution of relative imports and of ``from x import module`` that the tests above rely on."""
    source = ("import planning.models\nfrom ..models import GPU\nfrom .. import models\n\n"
              "def f():\n    from support import x\n")
    path = ROOT / "inventory" / "telemetry" / "example.py"
    found = {module for _, module in imported_modules(path, ast.walk(ast.parse(source)))}
    assert {"planning.models", "inventory.models", "inventory.models.GPU", "support.x"} <= found


CONCERNS = ("models", "admin", "forms", "filters", "tables", "views", "urls", "serializers", "tasks")


def test_every_feature_uses_the_same_file_names_for_the_same_concerns():
    """One file per concern with the same name in every app and feature package (``planning/contracts/views.py``),
    never a bundle named after its feature (``contract_views.py``) nor a concern split under another name."""
    bundles = [str(path.relative_to(ROOT)) for app in APPS for path, _ in parsed(app)
               if any(path.stem.endswith(f"_{concern}") or path.stem.startswith(f"{concern}_") for concern in CONCERNS)]
    assert not bundles, bundles


# planning's feature packages, lowest first: a feature's domain modules import only features before it in this
# order (the plan's analysis sizes workloads; calibration compares plans' workloads with the runs; a recommendation
# accepted becomes a plan). Its pages (views, forms, tables, filters, URLs, API, admin) compose features and may
# read any of them: the sizing page offers "Add to plan", the plan page shows the calibration.
FEATURES = ["contracts", "procurement", "webhooks", "sizing", "plans", "calibration", "recommendations"]
PAGES = {"views", "forms", "tables", "filters", "urls", "admin", "api"}


def feature_imports():
    """(file:line, importing feature, imported feature) of each import between planning's feature packages, from
    their domain modules."""
    for path, tree in parsed("planning"):
        parts = path.relative_to(ROOT).parts
        if len(parts) < 3 or parts[1] not in FEATURES or PAGES & {parts[2].removesuffix(".py"), *parts[2:-1]}:
            continue
        for line, module in imported_modules(path, ast.walk(tree)):
            names = module.split(".")
            if names[0] == "planning" and len(names) > 1 and names[1] in FEATURES and names[1] != parts[1]:
                yield f"{path.relative_to(ROOT)}:{line}", parts[1], names[1]


def test_planning_features_import_each_other_in_one_direction():
    order = {name: i for i, name in enumerate(FEATURES)}
    upward = sorted({f"{where} ({importer} imports {imported})" for where, importer, imported in feature_imports()
                     if order[imported] > order[importer]})
    assert not upward, "\n".join(upward)


def test_the_feature_check_sees_the_imports_it_forbids():
    found = {(importer, imported) for _, importer, imported in feature_imports()}
    assert ("plans", "sizing") in found and ("recommendations", "plans") in found  # allowed, and seen
