"""Network-bound: per-GPU utilization falling with a job's node count on an oversubscribed or thin fabric."""



from ..evidence import figure, pct
from .data import SEV, THRESHOLDS, Finding, K


def network_bound(p, t=THRESHOLDS):
    counted = [w for w in p.widths if w.jobs >= t.network_min_jobs and w.gpu_hours >= t.network_min_gpu_hours]
    single = next((w for w in counted if w.low == 1), None)
    widest = counted[-1] if counted else None
    if single is None or widest is single or not single.util:
        return None
    drop = 1 - widest.util / single.util
    oversubscribed = p.oversubscription is not None and p.oversubscription > 1
    thin = p.fabric_gbps_per_gpu is not None and p.fabric_gbps_per_gpu < t.fabric_gbps_per_gpu
    if drop < t.network_util_drop or not (oversubscribed or thin):
        return None
    name = p.partition or "(none)"
    fabrics = ", ".join(p.fabrics)
    switches = ", ".join(f"{switch} ({ratio:.2f}:1)" for switch, ratio in p.oversubscribed_switches.items())
    fixes = []
    if oversubscribed:
        fixes.append(f"add spine uplinks to {switches} for a non-blocking (1:1) fat tree")
    if thin:
        fixes.append(f"give each GPU its own {t.fabric_gbps_per_gpu:.0f} Gb/s rail on {fabrics} "
                     f"(now {p.fabric_gbps_per_gpu:.0f} Gb/s per GPU)")
    weakness = " and ".join(
        ([f"oversubscribed up to {p.oversubscription:.2f}:1"] if oversubscribed else [])
        + ([f"gives only {p.fabric_gbps_per_gpu:.0f} Gb/s per GPU"] if thin else []))
    multi = p.multi_node_share or 0.0
    figures = []
    for w in p.widths:
        figures += [
            figure(f"Jobs on {w.label}", w.jobs, "", f"≥ {t.network_min_jobs} to count"),
            figure(f"GPU-hours of jobs on {w.label}", w.gpu_hours, "GPU-h",
                   f"≥ {t.network_min_gpu_hours:.0f} to count"),
            figure(f"Per-GPU utilization on {w.label}", w.util, "%",
                   "the reference" if w is single else ("compared" if w is widest else "")),
        ]
    return Finding(
        kind=K.NETWORK, key=f"{K.NETWORK}:partition={p.partition}",
        severity=SEV.HIGH if multi >= t.network_multi_node_share else SEV.MEDIUM,
        title=f"Partition {name} is network-bound",
        summary=(f"Per-GPU utilization falls with the nodes a job spans: {single.util:.0f} % on one node, "
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
            figure("Fabric oversubscription (worst switch)", p.oversubscription, ":1", "> 1 is oversubscribed"),
            figure("Oversubscribed switches", switches or None),
            figure("Fabric bandwidth per GPU (weakest node)", p.fabric_gbps_per_gpu, "Gb/s",
                   f"< {t.fabric_gbps_per_gpu:.0f} is thin"),
        ],
        chart={"type": "hbar", "title": f"Per-GPU utilization by node count, partition {name}", "data": {
            "labels": [w.label for w in p.widths], "x_title": "mean per-GPU utilization (%)", "x_range": [0, 100],
            "series": [{"name": "mean per-GPU utilization (%)", "values": [round(w.util, 1) for w in p.widths]}],
        }},
        partition=p.partition, site_id=p.site_id,
    )
