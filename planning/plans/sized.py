"""Each of a plan's workloads sized once (``planning.sizing.sizing``), with one way of saying why one cannot be: the
analysis, the plan page's workloads and the bill of materials' storage line all read it."""

from dataclasses import dataclass

from django.core.exceptions import ValidationError

from ..sizing import sizing


@dataclass
class Sized:
    workload: object  # the ``PlanWorkload``
    result: object  # ``sizing.Sizing``; None when it cannot be sized
    error: str = ""  # why not, for people

    @property
    def query(self):
        """The sizing page's query for this workload as sized here: its GPU model, its inputs and, when they state no
        goodput, the one it was sized with. Plans size without the fleet's measured interruption rate (their figures
        must not move with it) and the sizing page sizes with it, so without it the page's GPU-hours and cost rented
        would not be the plan's."""
        workload = self.workload
        inputs = workload.inputs if isinstance(workload.inputs, dict) else {}
        query = {"gpu_model": workload.gpu_model.name, **inputs}
        if self.result is not None and not inputs.get("goodput"):
            query["goodput"] = self.result["goodput"]
        return query


def size_all(workloads):
    """A ``Sized`` per workload, in their order; the catalog is read once, and only if there is a workload."""
    rows, gpus = [], None
    for workload in workloads:
        gpus = gpus if gpus is not None else sizing.catalog_gpus()
        try:
            rows.append(Sized(workload, sizing.size(workload.workload(), gpus)))
        except ValidationError as error:
            rows.append(Sized(workload, None, " ".join(error.messages)))
        except (ValueError, TypeError) as error:  # SizingError, or a text where a number belongs
            rows.append(Sized(workload, None, str(error) or "The inputs cannot be sized."))
    return rows
