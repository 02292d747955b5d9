"""The differentials of the rules: for each alternative a rule checks besides its finding, an entry saying why it
was ruled out (or taken first), with its figures — shown on the recommendation's page and in the API's evidence.
Plain functions of ``PartitionStats`` and the thresholds, as the rules are."""

import math

from .evidence import figure, pct, ruled_out


def capacity_differential(p, extra_gpus, returned):
    """Capacity the partition owns but does not use: taken first, or ruled out because there is none."""
    needed = figure("GPUs needed", math.ceil(extra_gpus), "GPUs")
    out = figure("GPUs out of service (degraded or in repair)", p.gpus_out_of_service, "GPUs")
    if not p.gpus_out_of_service:
        return ruled_out("out_of_service", "No GPU of the partition is degraded or in repair: nothing to return to "
                                           "service before buying.", out, needed)
    covered = "all of" if returned >= math.ceil(extra_gpus) else f"{returned} of"
    return ruled_out("out_of_service", f"Taken first: returning the GPUs out of service covers {covered} the GPUs "
                                       "needed, before anything bought arrives.", out, needed)


def scheduling_differential(p, t):
    """A queue that holds work back while GPUs sit idle would be scheduling-bound, not capacity-bound."""
    if p.allocated_share is None:
        return ruled_out("scheduling_bound", "Not checked: no Slurm accounting for the partition in the window.")
    unallocated = figure("GPU-hours not allocated to any job", pct(max(0.0, 1 - p.allocated_share)), "%",
                         f"< {pct(t.unallocated_share):.0f} % to rule it out")
    if 1 - p.allocated_share < t.unallocated_share:
        return ruled_out("scheduling_bound", "The queue does not hold work back: nearly every GPU-hour observed was "
                                             "allocated to a job.", unallocated)
    return ruled_out("scheduling_bound", "Not ruled out: part of the GPU-hours ran no job while jobs waited; look at "
                                         "the queue policy too.", unallocated)


def rebalance_differential(p, checked, moved, t):
    """Idle GPUs of the same model in other partitions: taken before buying, or ruled out (busy, their own queue,
    nothing spare); idle partitions of another GPU model are named and not counted."""
    model = p.gpu_model_name or "its GPU model"
    others = [q for q in p.peers if q.gpu_model_id != p.gpu_model_id and q.util_mean < t.rebalance_util_max]
    other_figures = [figure(f"Partition {q.partition or '(none)'} ({q.gpu_model_name or 'unknown model'}) utilization",
                            q.util_mean, "%", f"another GPU model than {model}: not counted") for q in others]
    not_counted = (" Idle partitions of other GPU models are not counted: jobs sized for "
                   f"{model} do not run the same on another GPU (memory, speed, builds)." if others else "")
    if p.gpu_model_id is None:
        return ruled_out("idle_same_model", "Not checked: the partition's GPU model is not recorded.")
    if not checked:
        return ruled_out("idle_same_model", f"No other partition has {model} GPUs in service: nothing of the same "
                                            f"model to move before buying.{not_counted}", *other_figures)
    figures = [figure(f"Partition {q.partition or '(none)'} ({model}) utilization", q.util_mean, "%",
                      f"busiest hours {q.util_peak:.0f} %; {verdict}") for q, _, verdict in checked]
    if moved:
        why = (f"Taken first: {moved} GPUs of the same model ({model}) sit idle in other partitions beyond what their "
               "own busiest hours need; moving those nodes is a Slurm change, before anything is bought.")
    else:
        why = (f"Ruled out: every other partition of {model} is in use, has its own queue, or has no whole node "
               f"beyond its busiest hours at the {t.target_util:.0f} % target.")
    return ruled_out("idle_same_model", why + not_counted, *figures, *other_figures)


def capacity_ruled_out(p, t):
    """Scheduling-bound: GPUs are idle enough that a lack of them is not why jobs wait."""
    return ruled_out("capacity_bound", f"Ruled out: the GPUs were {p.util_mean or 0:.0f} % busy, below the "
                                       f"{t.util_high:.0f} % at which a lack of GPUs makes jobs wait; buying more "
                                       "would leave them as idle.",
                     figure("Mean GPU utilization", p.util_mean, "%", f"< {t.util_high:.0f} % to rule it out"))


def network_ruled_out(p):
    """Storage-bound: stalls that single-node jobs show too are no all-reduce wait (they do none across nodes)."""
    single = next((w for w in p.widths if w.low == 1 and w.util is not None), None)
    multi = figure("GPU-hours from multi-node jobs", pct(p.multi_node_share), "%")
    if single is None:
        return ruled_out("network_bound", "Not checked against single-node jobs: none measured in the window; the "
                                          "stall signature (bursts between near-idle waits) is the data loader's, "
                                          "all-reduce waits are shorter and steadier.", multi)
    return ruled_out("network_bound", f"Ruled out: single-node jobs, which all-reduce over no network, ran at "
                                      f"{single.util:.0f} % per GPU with the same stalls: the wait is for data.",
                     figure("Per-GPU utilization of single-node jobs", single.util, "%"), multi)
