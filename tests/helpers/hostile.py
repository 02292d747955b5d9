"""Hostile requests, for sweeps of every URL (``tests/portal/test_hostile_params.py``): the values, every route of the
URL conf filled with the ids of real objects, and which query parameters a view reads.

Which parameters a view reads is recorded, not listed: ``RecordingQueryDict`` (put in place of ``request.GET`` by
``record_reads``, a middleware the sweep adds) notes every name a view, its filter set, form, table or paginator
looks up, so a new filter or parameter is swept as soon as it exists."""

from dataclasses import dataclass, field
from datetime import timedelta

from django.apps import apps
from django.core.handlers.wsgi import get_bytes_from_wsgi
from django.http import QueryDict
from django.urls import NoReverseMatch, URLResolver, get_resolver, reverse
from django.utils import timezone

# Value kinds a client can send by mistake or on purpose: dates at the ends of the calendar, a NUL byte (no
# PostgreSQL text holds one), a long string, numbers out of any range, and the wrong types.
HOSTILE = {
    "day of year 0": "0000-01-01",
    "day of year 9999": "9999-12-31",
    "month of year 9999": "9999-12",
    "month of year 0": "0000-01",
    "NUL byte": "a\x00b",
    "10 kB string": "x" * 10_240,
    "negative": "-1",
    "huge": "99999999999999999999",
    "word": "abc",
    "fraction": "1.5",
    "list": "[]",
    "digit not ASCII": "\u00b2",  # "²".isdigit() is true; int() and PostgreSQL refuse it
    # Calendar ranges (``range=2026-11``, ``range=2026-10-01..2026-10-15``): a month 13, dates the wrong way round.
    "month 13": "2026-13",
    "dates reversed": "2026-11-30..2026-11-01",
}
# Looked at first when a view reads more parameters than the sweep sends.
WELL_KNOWN = ("month", "start", "end", "range", "days", "page", "per_page", "cursor", "ordering", "sort", "q",
              "group_by", "by", "job", "format")
PAIRS = (("start", "end"), ("since", "until"))  # read together: each gets the value at once too
SHARED_CODE = ("portal.generic", "portal.api.")  # what every model's pages and API are built on
SKIPPED_NAMESPACES = {"admin"}  # Django's admin: Django's own parsing (the NUL check covers it all the same)


class RecordingQueryDict(QueryDict):
    """A query string that remembers the names looked up in it (``read``), present or not."""

    @property
    def read(self):
        return self.__dict__.setdefault("_read", set())

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        self.read.add(key)
        return super().__contains__(key)

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)

    def getlist(self, key, default=None):
        self.read.add(key)
        return super().getlist(key, default)


def record_reads(get_response):
    """Middleware: the request's query string as a ``RecordingQueryDict`` (``response.wsgi_request.GET.read``)."""

    def middleware(request):
        request.GET = RecordingQueryDict(get_bytes_from_wsgi(request.environ, "QUERY_STRING", ""))
        return get_response(request)

    return middleware


@dataclass(eq=False)
class Route:
    name: str  # namespaced, for reverse()
    path: str  # as the URL conf writes it, for messages
    callback: object
    arguments: dict = field(default_factory=dict)  # name -> "int" or "str"
    base: str | None = None  # its URL with real arguments, once filled in

    @property
    def view_class(self):
        return getattr(self.callback, "view_class", None) or getattr(self.callback, "cls", None)

    @property
    def is_api(self):
        return self.path.startswith("api/")

    @property
    def takes_get(self):
        """Whether GET reaches its view (a POST-only route answers 405 before reading anything)."""
        actions = getattr(self.callback, "actions", None)
        if actions is not None:
            return "get" in actions
        view = self.view_class
        return view is None or (hasattr(view, "get") and "get" in view.http_method_names)

    @property
    def family(self):
        """The portal's generic view or viewset it is built on (every model's list page is an ``ObjectListView``),
        with the viewset's actions; a view of its own is a family of one."""
        actions = tuple(sorted((getattr(self.callback, "actions", None) or {}).items()))
        view = self.view_class or self.callback
        base = next((cls for cls in getattr(view, "__mro__", ()) if cls.__module__.startswith(SHARED_CODE)), view)
        return base, actions

    @property
    def own_lookup(self):
        """Whether it finds the object its path names its own way, not with its family's ``get_object``."""
        base = self.family[0]
        return base is self.view_class or getattr(self.view_class, "get_object", None) is not getattr(
            base, "get_object", None)


def routes():
    """Every named route of the project but the admin's and DRF's format-suffix copies (``.json``)."""
    found = []

    def walk(patterns, namespaces, prefix):
        for pattern in patterns:
            text = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                if pattern.namespace in SKIPPED_NAMESPACES:
                    continue
                walk(pattern.url_patterns, [*namespaces, pattern.namespace] if pattern.namespace else namespaces,
                     text)
                continue
            regex = pattern.pattern.regex
            if "format" in regex.groupindex or pattern.name is None:
                continue
            converters = getattr(pattern.pattern, "converters", {})
            arguments = {name: "int" if type(converters.get(name)).__name__ == "IntConverter" else "str"
                         for name in regex.groupindex}
            found.append(Route(":".join([*namespaces, pattern.name]), text, pattern.callback, arguments))

    walk(get_resolver().url_patterns, [], "")
    return found


# Routes whose object the view finds itself (no queryset or model to read it from).
ROUTE_MODELS = {
    "import_job": "portal.ImportJob", "import_progress": "portal.ImportJob", "token_revoke": "portal.APIToken",
    "support:attachment_download": "support.TicketAttachment",
}


def model_of(route):
    """The model behind a route's ``pk``: the view's queryset or model, else the one its name says (``<app>:<model
    name>_<action>``), else ``ROUTE_MODELS``; None when none is known."""
    given = getattr(route.callback, "view_initkwargs", None) or getattr(route.callback, "initkwargs", None) or {}
    for source in (given, vars(route.view_class) if route.view_class else {}):
        queryset = source.get("queryset")
        if queryset is not None and hasattr(queryset, "model"):
            return queryset.model
        if isinstance(source.get("model"), type):
            return source["model"]
    if route.name in ROUTE_MODELS:
        return apps.get_model(ROUTE_MODELS[route.name])
    *namespaces, name = route.name.split(":")
    if namespaces:
        try:
            return apps.get_model(namespaces[0].removesuffix("-api"), name.split("_")[0].split("-")[0])
        except LookupError:
            return None
    return None


def real_arguments(route, team):
    """Arguments that name real objects: the first object of the route's model (1 when unknown), a plan's part of the
    kind the route edits, ``team`` for a team's name."""
    values = {}
    model = model_of(route)
    for name, kind in route.arguments.items():
        if name == "part_pk":
            part = apps.get_model("planning", "PlanWorkload" if "workload" in route.name else "PlanItem")
            obj = part.objects.order_by("pk").first()
            values["part_pk"], values["pk"] = obj.pk, obj.plan_id
        elif name == "pk" and "pk" not in values:
            obj = model._default_manager.order_by("pk").first() if model is not None else None
            values["pk"] = obj.pk if obj is not None else 1
        elif name in ("name", "team"):
            values[name] = team
        elif name not in values:
            values[name] = 1 if kind == "int" else "x"
    return values


def url(route, arguments):
    """The route's URL for ``arguments``, or None where a value cannot be written into it (a word for ``<int:pk>``)."""
    try:
        return reverse(route.name, kwargs=arguments)
    except NoReverseMatch:
        return None


def seed_every_model(user, team):
    """One or two objects behind every detail route (inventory, telemetry, goodput, planning, support, the user's
    import job and token). Files go to MEDIA_ROOT: point it at a temporary folder."""
    from inventory.telemetry.models import NodeHourly, TelemetrySource
    from portal.models import APIToken, DirectoryGroupMapping, ImportJob
    from support.models import NotificationRule
    from tests import factories as f

    site, node_model, gpu_model = f.make_site(), f.make_node_model(gpu_slots=4), f.make_gpu_model()
    rack = f.make_rack(site)
    node = f.make_node(site=site, node_model=node_model, rack=rack, owner_team=team)
    gpu = f.make_gpu(node=node, gpu_model=gpu_model)
    f.make_gpu(gpu_model=gpu_model)  # a spare
    switch = f.make_switch(site=site)
    f.make_attachment(node=node, fabric=switch.fabric, switch=switch)
    storage = f.make_storage(site=site)
    slurm = f.TelemetrySourceFactory(kind=TelemetrySource.Kind.SLURM, site=site)
    f.UnknownSeriesFactory(source=slurm)
    f.GPUHourlyFactory(gpu=gpu)
    hour = timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    NodeHourly.objects.create(node=node, hour=hour, util_mean=42.0, samples=60, gpus_reporting=1)
    f.InterruptionFactory(job__source=slurm, job__account=team, account=team, node=node, gpu=gpu)
    contract = f.ContractFactory()
    contract.nodes.add(node)
    f.SLATermFactory(contract=contract)
    f.RenewalAlertFactory(contract=contract)
    f.ContractDocumentFactory(contract=contract)
    order = f.PurchaseOrderFactory(site=site, created_by=user)
    f.DeliveryItemFactory(delivery=f.DeliveryFactory(order=order), node=node)
    f.WebhookAttemptFactory(delivery=f.WebhookDeliveryFactory())
    plan = f.CapacityPlanFactory(owner=user, site=site, node_model=node_model)
    f.PlanWorkloadFactory(plan=plan, gpu_model=gpu_model)
    f.PlanItemFactory(plan=plan)
    f.PlanEventFactory(plan=plan)
    f.RecommendationFactory(site=site)
    ticket = f.make_ticket(requester=user, node=node, gpu=gpu, team=f.make_team(members=[user]))
    f.TicketCommentFactory(ticket=ticket)
    f.TicketAttachmentFactory(ticket=ticket)
    f.make_ticket(storage_system=storage)
    NotificationRule.objects.create(name="sweep", owner=user, events=["gpu.xid"])
    ImportJob.objects.create(importer="inventory.views.SiteImportView", user=user, text="name\nx\n", total=1)
    DirectoryGroupMapping.objects.create(group="sweep", role="viewer")
    APIToken.issue(user, "sweep")
