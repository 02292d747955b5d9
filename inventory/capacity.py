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

``count(**scope)`` and ``count_by(group, **scope)`` read it in one aggregate query (GPU state × node state, a few
dozen rows at most, whatever the fleet's size); the rest is plain arithmetic on ``Capacity``. What a plan adds on top
— rentals and open purchase orders — is planning's (``planning.plans.capacity``), from these counts.
"""

from dataclasses import dataclass, fields

from django.db.models import Count, F

from .models import GPU, LifecycleState

L = LifecycleState
OUT_OF_SERVICE = (L.DEGRADED, L.IN_REPAIR)
ARRIVING = (L.DELIVERED, L.BURN_IN)
GROUPS = {"site": "node__site__name", "partition": "node__partition", "gpu_model": "gpu_model__name",
          "node": "node_id", "team": "node__owner_team"}


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

    def add(self, state, n):
        setattr(self, state, getattr(self, state) + n)

    def parts(self):
        """(state, label, GPUs) of the states with GPUs, in the order of ``LABELS``."""
        return [(state, label, getattr(self, state)) for state, label in self.LABELS.items() if getattr(self, state)]

    def says(self):
        """What the count is made of, e.g. "303 in service + 16 out of service (degraded or in repair) + 17
        delivered or in burn-in"; "no GPUs" when there are none."""
        return " + ".join(f"{n:,} {label}" for _, label, n in self.parts()) or "no GPUs"

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


def count_by(group=None, **scope):
    """{group value: ``Capacity``} of the GPUs in ``scope`` (``site_id``, ``partition``, ``gpu_model_id``), grouped by
    ``group`` (a key of ``GROUPS``; None: one entry, keyed None). One query."""
    key = GROUPS[group] if group else None
    columns = {"node_state": F("node__state"), **({"key": F(key)} if key else {})}
    rows = _gpus(**scope).values("state", **columns).annotate(n=Count("pk")).order_by()
    counts = {}
    for row in rows:
        counts.setdefault(row.get("key"), Capacity()).add(capacity_state(row["state"], row["node_state"]), row["n"])
    return counts


def count(**scope):
    """The ``Capacity`` of ``scope`` (the whole fleet when none is given)."""
    return count_by(**scope).get(None, Capacity())
