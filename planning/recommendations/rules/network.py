"""Network-bound: per-GPU utilization falling with a job's node count on an oversubscribed or thin fabric, measured
like for like: multi-node jobs against single-node jobs on nodes of the same GPU model and fast fabric."""

from ..evidence import figure, pct, ruled_out
from .data import SEV, THRESHOLDS, Finding, K


def counted(w, t):
    return w.jobs >= t.network_min_jobs and w.gpu_hours >= t.network_min_gpu_hours


def like_for_like(p, t=THRESHOLDS):
    """(single-node group, widest multi-node group) of the same GPU model and fabric, both with enough jobs; of
    several such pairs the one whose multi-node jobs span the most nodes (then the most GPU-hours); None if none."""
    pairs = []
    for group in dict.fromkeys(w.group for w in p.widths):
        mine = [w for w in p.widths if w.group == group and counted(w, t)]
        single = next((w for w in mine if w.low == 1), None)
        widest = max(mine, key=lambda w: w.low) if mine else None
        if single is not None and widest is not single and single.util:
            pairs.append((single, widest))
    return max(pairs, key=lambda pair: (pair[1].low, pair[1].gpu_hours), default=None)


def fabric_of(p, w):
    """The fabric figures of the nodes ``w``'s jobs ran on (the gather sets them with ``node_ids``); the
    partition's for a group without its nodes (plain data made by hand)."""
    if w.node_ids:
        return w.oversubscription, w.oversubscribed_switches, w.fabrics, w.fabric_gbps_per_gpu
    return p.oversubscription, p.oversubscribed_switches, p.fabrics, p.fabric_gbps_per_gpu


def like_for_like_differential(p, single, widest, t):
    """Which groups were compared and which were left out because their GPU model or fabric differs."""
    others = [w for w in p.widths if w.group != single.group]
    compared = [figure(f"Per-GPU utilization on {w.label} ({w.group_label})", w.util, "%", role)
                for w, role in ((single, "the reference"), (widest, "compared"))]
    if not others:
        return ruled_out("like_for_like", f"Every job measured ran on {single.group_label} nodes: single-node and "
                                          "multi-node jobs are compared on the same hardware.", *compared)
    excluded = [figure(f"Jobs on {w.label} ({w.group_label})", w.jobs, "", "excluded: other GPU model or fabric")
                for w in others]
    excluded += [figure(f"Per-GPU utilization on {w.label} ({w.group_label})", w.util, "%", "not compared")
                 for w in others]
    groups = ", ".join(dict.fromkeys(w.group_label for w in others))
    return ruled_out("like_for_like", f"Compared like with like: {widest.label} against 1 node, both on "
                                      f"{single.group_label}. Left out: jobs on {groups} (another GPU model or "
                                      "fabric runs at its own per-GPU utilization, whatever the network).",
                     *compared, *excluded)


def network_bound(p, t=THRESHOLDS):
    pair = like_for_like(p, t)
    if pair is None:
        return None
    single, widest = pair
    drop = 1 - widest.util / single.util
    oversubscription, switches_over, fabric_names, gbps = fabric_of(p, widest)
    oversubscribed = oversubscription is not None and oversubscription > 1
    thin = gbps is not None and gbps < t.fabric_gbps_per_gpu
    if drop < t.network_util_drop or not (oversubscribed or thin):
        return None
    name = p.partition or "(none)"
    fabrics = ", ".join(fabric_names)
    switches = ", ".join(f"{switch} ({ratio:.2f}:1)" for switch, ratio in switches_over.items())
    fixes = []
    if oversubscribed:
        fixes.append(f"add spine uplinks to {switches} for a non-blocking (1:1) fat tree")
    if thin:
        fixes.append(f"give each GPU its own {t.fabric_gbps_per_gpu:.0f} Gb/s rail on {fabrics} "
                     f"(now {gbps:.0f} Gb/s per GPU)")
    weakness = " and ".join(([f"oversubscribed up to {oversubscription:.2f}:1"] if oversubscribed else [])
                            + ([f"gives only {gbps:.0f} Gb/s per GPU"] if thin else []))
    multi = p.multi_node_share or 0.0
    mine = [w for w in p.widths if w.group == single.group]  # the compared hardware; the others are in the differential
    figures = []
    for w in mine:
        figures += [
            figure(f"Jobs on {w.label}", w.jobs, "", f"≥ {t.network_min_jobs} to count"),
            figure(f"GPU-hours of jobs on {w.label}", w.gpu_hours, "GPU-h",
                   f"≥ {t.network_min_gpu_hours:.0f} to count"),
            figure(f"Per-GPU utilization on {w.label}", w.util, "%",
                   "the reference" if w is single else ("compared" if w is widest else "")),
        ]
    on = f" on {single.group_label}" if len(mine) < len(p.widths) else ""
    return Finding(
        kind=K.NETWORK, key=f"{K.NETWORK}:partition={p.partition}",
        severity=SEV.HIGH if multi >= t.network_multi_node_share else SEV.MEDIUM,
        title=f"Partition {name} is network-bound",
        summary=(f"Per-GPU utilization falls with the nodes a job spans{on}: {single.util:.0f} % on one node, "
                 f"{widest.util:.0f} % on {widest.label} ({pct(drop):.0f} % lower, {widest.jobs} jobs), while "
                 f"multi-node jobs carry {pct(multi):.0f} % of the partition's GPU-hours. The fabric between "
                 f"their nodes ({fabrics}) is {weakness}: their GPUs wait on gradient all-reduce."),
        action=(f"Upgrade the interconnect of partition {name}: {'; '.join(fixes)}. Until then, "
                "place multi-node jobs under as few leaf switches as possible (Slurm topology/tree)."),
        figures=[
            *figures,
            figure(f"Per-GPU utilization lost on {widest.label}", pct(drop), "%",
                   f"≥ {pct(t.network_util_drop):.0f} % below single-node jobs"),
            figure("GPU-hours from multi-node jobs", pct(p.multi_node_share), "%",
                   f"≥ {pct(t.network_multi_node_share):.0f} % for high severity"),
            figure("Fabric oversubscription (worst switch)", oversubscription, ":1", "> 1 is oversubscribed"),
            figure("Oversubscribed switches", switches or None),
            figure("Fabric bandwidth per GPU (weakest node)", gbps, "Gb/s", f"< {t.fabric_gbps_per_gpu:.0f} is thin"),
        ],
        chart={"type": "hbar", "title": f"Per-GPU utilization by node count, partition {name}{on}", "data": {
            "labels": [w.label for w in mine], "x_title": "mean per-GPU utilization (%)", "x_range": [0, 100],
            "series": [{"name": "mean per-GPU utilization (%)", "values": [round(w.util, 1) for w in mine]}],
        }},
        partition=p.partition, site_id=p.site_id,
        ruled_out=[like_for_like_differential(p, single, widest, t)],
    )
