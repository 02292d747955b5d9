"""What the fleet has of a sizing's GPU model, counted by the capacity model (``inventory.capacity``) as the home page,
a plan and the API count it, and whether the run's GPUs fit in it. The sizing page and its API show it."""

from dataclasses import dataclass

from inventory import capacity


@dataclass(frozen=True)
class FleetFit:
    gpu_model: str
    gpus: int  # the GPUs the run is sized for
    capacity: capacity.Capacity  # the fleet's GPUs of the model (all sites and partitions)

    @property
    def fits(self):
        """``in_service``: the run fits in the GPUs in service now; ``fleet``: only with those out of service,
        arriving or ordered back; ``no``: not even in every GPU of the model the fleet has or ordered."""
        if self.gpus <= self.capacity.in_service:
            return "in_service"
        return "fleet" if self.gpus <= self.capacity.total else "no"

    @property
    def says(self):
        """The fleet's GPUs of the model and the verdict, in words."""
        c, n = self.capacity, self.gpus
        has = f"The fleet has {c.total:,} {self.gpu_model} GPUs: {c.says()}."
        if self.fits == "in_service":
            return f"{has} The run's {n:,} GPUs fit in the {c.in_service:,} in service."
        if self.fits == "fleet":
            return (f"{has} The run's {n:,} GPUs exceed the {c.in_service:,} in service by {n - c.in_service:,}: "
                    "it needs those out of service, arriving or ordered too.")
        return (f"{has} The run's {n:,} GPUs exceed all of them by {n - c.total:,}: rent or buy the rest (a plan rents "
                "only that shortfall; the cost below rents the whole run).")

    def as_dict(self):
        return {"gpu_model": self.gpu_model, "gpus": self.gpus, "fits": self.fits, "says": self.says,
                "capacity": self.capacity.as_dict()}


def fleet_fit(gpu_model, gpus):
    """The fleet's GPUs of the catalog model named ``gpu_model`` against a run on ``gpus`` GPUs (one query)."""
    counts = capacity.count_by("gpu_model")
    return FleetFit(gpu_model, gpus, counts.get(gpu_model, capacity.Capacity()))
