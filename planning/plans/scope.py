"""What a capacity plan sizes: the whole fleet, or the GPUs of one Slurm partition, one GPU model, one site.

A plan made from a recommendation carries the scope the recommendation measured, so that its analysis reads the
same telemetry and counts the same capacity: a partition (wherever its nodes are) and its GPU model; an ageing
site (and the GPU model of the nodes to replace when they share one). The plan's site is otherwise the site to
expand: it narrows a GPU-model scope, and a plan made from an ageing recommendation, never a plan on its own, so
that a fleet-wide plan that names where to expand still sizes the whole fleet.
"""

from dataclasses import dataclass

# Shown by the plan's form and the API (the model's own help texts predate the site's part in the scope).
HELP = {
    "partition": "The Slurm partition whose demand and capacity the plan sizes, at every site. "
                 "Empty: the whole fleet.",
    "gpu_model": "Only GPUs of this model count in demand and capacity (without a partition: at the plan's site, "
                 "if set). Empty: the whole fleet.",
}


@dataclass(frozen=True)
class Scope:
    partition: str = ""
    site_id: int | None = None
    site_name: str = ""
    gpu_model_id: int | None = None
    gpu_model_name: str = ""

    @classmethod
    def of(cls, plan, by_site=False):
        """The plan's scope; ``by_site``: the plan comes from a site's recommendation (ageing)."""
        site = bool(plan.site_id and not plan.partition and (plan.gpu_model_id or by_site))
        return cls(partition=plan.partition, site_id=plan.site_id if site else None,
                   site_name=str(plan.site) if site else "", gpu_model_id=plan.gpu_model_id,
                   gpu_model_name=str(plan.gpu_model) if plan.gpu_model_id else "")

    @property
    def fleet(self):
        return not (self.partition or self.site_id or self.gpu_model_id)

    @property
    def label(self):
        """E.g. "partition train-h200, site zrh-1, GPU model H200 SXM"; "the whole fleet" when unscoped."""
        parts = [f"partition {self.partition}" if self.partition else "",
                 f"site {self.site_name}" if self.site_id else "",
                 f"GPU model {self.gpu_model_name}" if self.gpu_model_id else ""]
        return ", ".join(p for p in parts if p) or "the whole fleet"

    def node_filters(self, prefix=""):
        """Keyword lookups narrowing nodes (``prefix``: the path to the node, e.g. ``"gpu__node__"``)."""
        filters = {}
        if self.partition:
            filters[f"{prefix}partition"] = self.partition
        if self.site_id:
            filters[f"{prefix}site_id"] = self.site_id
        return filters

    def gpu_filters(self, prefix=""):
        """Keyword lookups narrowing GPUs (``prefix``: the path to the GPU, e.g. ``"gpu__"`` from a rollup)."""
        filters = self.node_filters(f"{prefix}node__")
        if self.gpu_model_id:
            filters[f"{prefix}gpu_model_id"] = self.gpu_model_id
        return filters

    def capacity_filters(self):
        """The scope as ``inventory.capacity`` takes it."""
        return {"site_id": self.site_id, "partition": self.partition, "gpu_model_id": self.gpu_model_id}

