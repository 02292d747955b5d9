"""The capacity model: how many GPUs a scope (the fleet, a site, a partition, a GPU model) has, and what they can do
now — counted here once, for every page and the API that shows a GPU count.

A GPU serves jobs only when both it and its node do, so its *capacity state* combines the two lifecycle states, the
first that applies winning:

- ``retired``: the GPU or its node is retired (not capacity any more; not in ``total``);
- ``out_of_service``: the GPU or its node is degraded or in repair — owned hardware that a repair, an RMA or a
  return to service brings back, before anything is bought;
- for a GPU in a node, the node's state decides the rest (a delivery records its GPUs as delivered, and moving the
  node to service does not move them): ``ordered`` or ``burn_in`` (delivered or in burn-in: it joins soon) while
  the node is, else ``in_service``;
- a GPU in no node serves no job: ``ordered`` if it is, else ``spare``.

GPUs in service on a node that an active rental contract covers are also counted as ``rented`` (a part of
``in_service``, not added to the total), with ``rented_until``: the earliest day such a rental ends (None when they
are all open-ended). Inventory knows no contracts: planning registers a *rental source* (``register_rental_source``)
when it starts (``planning.contracts.coverage.rented_nodes``). Only the GPUs the inventory records count here.

``count(**scope)``, ``count_by(group, **scope)`` and ``count_each(groups, **scope)`` (several groupings at once) read
it in one aggregate query (GPU state × node state × rental end: a few dozen rows, whatever the fleet's size; the
rental sources are joined in it); the rest is plain arithmetic on ``Capacity``. What a plan adds on top — a rental's
``rented_gpus`` beyond its recorded nodes, open purchase orders — is planning's (``planning.plans.capacity``), from
these counts.
"""

from dataclasses import dataclass, fields
from datetime import date

from django.db import connections
from django.db.models import F, Q
from django.utils import timezone

from .models import GPU, LifecycleState

L = LifecycleState
OUT_OF_SERVICE = (L.DEGRADED, L.IN_REPAIR)
ARRIVING = (L.DELIVERED, L.BURN_IN)
GROUPS = {"site": "node__site__name", "partition": "node__partition", "gpu_model": "gpu_model__name",
          "node": "node_id", "team": "node__owner_team"}

_rental_sources = []


def register_rental_source(source):
    """``source(day)``: a lazy ``Node`` queryset of the nodes an active rental contract covers on ``day``, each
    annotated with ``rental_end`` (the last day it is rented; None: open-ended). A queryset, not a dict, so that the
    count joins it in its one query. Registering the same function twice is harmless."""
    if source not in _rental_sources:
        _rental_sources.append(source)
    return source


def capacity_state(gpu_state, node_state):
    """The capacity state of a GPU in ``gpu_state`` in a node in ``node_state`` (None: in no node)."""
    states = {gpu_state, node_state}
    if L.RETIRED in states:
        return "retired"
    if states & set(OUT_OF_SERVICE):
        return "out_of_service"
    if node_state is None:
        return "ordered" if gpu_state == L.ORDERED else "spare"
    if node_state == L.ORDERED:
        return "ordered"
    return "burn_in" if node_state in ARRIVING else "in_service"


@dataclass
class Capacity:
    """GPUs of a scope by capacity state."""

    in_service: int = 0
    out_of_service: int = 0
    burn_in: int = 0
    ordered: int = 0
    spare: int = 0
    retired: int = 0
    rented: int = 0  # of in_service: on nodes an active rental contract covers
    rented_until: date | None = None  # the earliest end of those rentals; None: open-ended (or nothing rented)

    LABELS = {"in_service": "in service", "out_of_service": "out of service (degraded or in repair)",
              "burn_in": "delivered or in burn-in", "ordered": "ordered", "spare": "spare (in no node)"}

    @property
    def owned(self):
        """GPUs on site that are not retired: in service, out of service, in burn-in and spares."""
        return self.in_service + self.out_of_service + self.burn_in + self.spare

    @property
    def total(self):
        """Every GPU that is or will be capacity: ``owned`` and ``ordered`` (retired ones are not)."""
        return self.owned + self.ordered

    def add(self, state, n, rented=False, rental_end=None):
        """``n`` GPUs in ``state``; ``rented`` ones (in service only) with the end of their rental."""
        setattr(self, state, getattr(self, state) + n)
        if state == "in_service" and rented:
            self.rented += n
            if rental_end and (self.rented_until is None or rental_end < self.rented_until):
                self.rented_until = rental_end

    def parts(self):
        """(state, label, GPUs) of the states with GPUs, in the order of ``LABELS``."""
        return [(state, label, getattr(self, state)) for state, label in self.LABELS.items() if getattr(self, state)]

    def rent_says(self):
        """The rented part of ``in_service`` in words, e.g. "64 of them rented, until 2027-03-31"; "" when none."""
        if not self.rented:
            return ""
        until = f", until {self.rented_until:%Y-%m-%d}" if self.rented_until else ""
        return f"{self.rented:,} of them rented{until}"

    def says(self):
        """What the count is made of, e.g. "303 in service (64 of them rented, until 2027-03-31) + 16 out of service
        (degraded or in repair) + 17 delivered or in burn-in" (the rented part only when something is); "no GPUs"
        when there are none."""
        rent = self.rent_says()
        return " + ".join(f"{n:,} {label}" + (f" ({rent})" if state == "in_service" and rent else "")
                          for state, label, n in self.parts()) or "no GPUs"

    def as_dict(self):
        return {**{f.name: getattr(self, f.name) for f in fields(self)}, "owned": self.owned, "total": self.total,
                "says": self.says()}


def _gpus(site_id=None, partition="", gpu_model_id=None):
    gpus = GPU.objects.all()
    if site_id:
        gpus = gpus.filter(node__site_id=site_id)
    if partition:
        gpus = gpus.filter(node__partition=partition)
    if gpu_model_id:
        gpus = gpus.filter(gpu_model_id=gpu_model_id)
    return gpus


def _counted(gpus, columns, day):
    """Rows ``(*columns, rented, rental_end, GPUs)`` of ``gpus`` grouped by the ``columns`` (name -> expression) and
    by rental: each rental source's nodes (with their ``rental_end``) joined once, the first source that covers a
    GPU's node giving its end. Written by hand around the ORM's SQL: looked up by a subquery per GPU, which PostgreSQL
    costs per row, the ends put the query past its JIT threshold at 10,000 GPUs (150-230 ms of compiling for 10 ms
    of counting)."""
    connection = connections[gpus.db]
    quote = connection.ops.quote_name
    sql, params = gpus.values(**columns, gpu_node=F("node_id")).order_by().query.sql_with_params()
    joins, covered, ends = [], [], []
    for i, source in enumerate(_rental_sources):
        # DISTINCT: a source listing a node twice must not count its GPUs twice.
        nodes = source(day).values(rented_node=F("pk"), rented_end=F("rental_end")).order_by().distinct()
        node_sql, node_params = nodes.query.sql_with_params()
        joins.append(f" LEFT JOIN ({node_sql}) r{i} ON r{i}.rented_node = g.gpu_node")
        params += node_params
        covered.append(f"r{i}.rented_node IS NOT NULL")
        ends.append(f" WHEN r{i}.rented_node IS NOT NULL THEN r{i}.rented_end")
    names = [f"g.{quote(name)}" for name in columns]
    rented = f"CASE WHEN {' OR '.join(covered)} THEN 1 ELSE 0 END" if covered else "0"
    end = f"CASE{''.join(ends)} END" if ends else "NULL"
    positions = ", ".join(str(i) for i in range(1, len(names) + 3))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(names)}, {rented}, {end}, COUNT(*) FROM ({sql}) g{''.join(joins)} "
                       f"GROUP BY {positions}", params)
        rows = cursor.fetchall()
    # SQLite answers a date as text.
    return [(*row[:-2], row[-2] if not isinstance(row[-2], str) else date.fromisoformat(row[-2]), row[-1])
            for row in rows]


STATES = {**Capacity.LABELS, "retired": "retired"}  # a GPU list's filter by capacity state (``state_q``)


def state_q(state):
    """A ``Q`` on GPU of those whose capacity state is ``state``: ``capacity_state`` as a filter, so that a list
    opened from a count shows exactly the GPUs counted (the home page's "GPUs degraded / in repair")."""
    retired = Q(state=L.RETIRED) | Q(node__state=L.RETIRED)
    out = ~retired & (Q(state__in=OUT_OF_SERVICE) | Q(node__state__in=OUT_OF_SERVICE))
    rest = ~retired & ~(Q(state__in=OUT_OF_SERVICE) | Q(node__state__in=OUT_OF_SERVICE))
    spare_or_ordered = Q(node__isnull=True)
    found = {
        "retired": retired,
        "out_of_service": out,
        "ordered": rest & ((spare_or_ordered & Q(state=L.ORDERED)) | Q(node__state=L.ORDERED)),
        "spare": rest & spare_or_ordered & ~Q(state=L.ORDERED),
        "burn_in": rest & Q(node__state__in=ARRIVING),
        "in_service": rest & Q(node__isnull=False) & ~Q(node__state__in=[L.ORDERED, *ARRIVING]),
    }
    return found[state]


def count_each(groups, day=None, **scope):
    """``{None: Capacity of the scope, group: {group value: Capacity}}`` for each of ``groups`` (keys of ``GROUPS``), of
    the GPUs in ``scope`` (``site_id``, ``partition``, ``gpu_model_id``), rentals as on ``day`` (today by default). One
    query, grouped by all the groups at once: a page that shows the fleet, its sites and its models counts once."""
    columns = {"gpu_state": F("state"), "node_state": F("node__state"),
               **{f"key_{i}": F(GROUPS[group]) for i, group in enumerate(groups)}}
    counts = {None: Capacity(), **{group: {} for group in groups}}
    for gpu_state, node_state, *keys, rented, rental_end, n in _counted(_gpus(**scope), columns,
                                                                       day or timezone.localdate()):
        state = capacity_state(gpu_state, node_state)
        counts[None].add(state, n, rented, rental_end)
        for group, key in zip(groups, keys, strict=True):
            counts[group].setdefault(key, Capacity()).add(state, n, rented, rental_end)
    return counts


def count_by(group, day=None, **scope):
    """{group value: ``Capacity``} of the GPUs in ``scope`` grouped by ``group`` (a key of ``GROUPS``); one query."""
    return count_each([group], day, **scope)[group]


def count(day=None, **scope):
    """The ``Capacity`` of ``scope`` (the whole fleet when none is given)."""
    return count_each([], day, **scope)[None]
