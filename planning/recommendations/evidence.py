"""The pieces of a finding's evidence, shared by every rule: a figure with its unit and threshold, a share as a
percentage, and an entry of the differential (what a rule checked besides its finding, and why it was ruled out)."""


def figure(label, value, unit="", rule=""):
    """A figure of the evidence: rounded, with its unit and the threshold it is compared with."""
    if isinstance(value, float):
        value = round(value, 2)
    return {"label": label, "value": value, "unit": unit, "rule": rule}


def pct(share):
    return None if share is None else round(100 * share, 1)


# What each kind of differential entry checked, for people (one line per kind; a rule adds its own).
CHECKED = {
    "out_of_service": "Capacity out of service",
    "fleet_ageing": "An ageing fleet (replace)",
    "scheduling_bound": "Queue policy (scheduling-bound)",
    "capacity_bound": "Too few GPUs (capacity-bound)",
    "network_bound": "Gradient all-reduce (network-bound)",
    "lifecycle_record": "The lifecycle record",
    "like_for_like": "Like for like (same GPU model and fabric)",
    "preallocation": "Memory reserved at start (vLLM, TGI), not pressure",
    "failed_jobs": "Failed jobs (not memory evidence)",
    "warranty_repair": "Repair under warranty (RMA)",
    "own_history": "The node's own history (earlier weeks)",
    "fleet_wide_dip": "A dip of the whole fleet or partition (holiday, maintenance)",
    "low_utilization_not_unused": "Low utilization (performance: storage, input pipeline)",
    "idle_same_model": "Idle GPUs of the same model in other partitions",
    "restart_wait": "Restart wait after interruptions",
}


def ruled_out(kind, why, *figures):
    """One entry of a finding's differential: ``kind`` (what was checked, a key of ``CHECKED``), ``why`` in words,
    its figures."""
    return {"kind": kind, "label": CHECKED[kind], "why": why, "figures": list(figures)}

