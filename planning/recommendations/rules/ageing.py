"""Ageing: nodes out of warranty or with repeated faults, per site; a fault concentrated on one or a few nodes of
a model still under warranty is a repair (open an RMA with the vendor), not ageing, and nothing is bought for it."""

from collections import Counter, defaultdict

from ..evidence import figure, pct, ruled_out
from .data import SEV, THRESHOLDS, Finding, K


def is_ageing(node, today, t=THRESHOLDS):
    """(out of warranty, repeated faults) of a node."""
    expired = node.warranty_end is not None and node.warranty_end < today
    faulty = node.fault_days >= t.fault_days or node.xid_days >= t.xid_days
    return expired, faulty


def under_warranty(node, today):
    return node.warranty_end is not None and node.warranty_end >= today


def faulting_by_model(nodes, today, t=THRESHOLDS):
    """{(site, node model): (nodes with repeated faults, nodes of that model there)}: the fleet a fault is weighed
    against. The fleet is at least the nodes faulting (0: the gather did not count it)."""
    faulty = Counter((n.site_id, n.node_model_id) for n in nodes if is_ageing(n, today, t)[1])
    fleet = {(n.site_id, n.node_model_id): n.fleet_nodes for n in nodes}
    return {key: (count, max(count, fleet[key])) for key, count in faulty.items()}


def spread(count, fleet, t=THRESHOLDS):
    """Faults spread over a model's fleet (wear or a bad batch), not concentrated on one or a few nodes."""
    return count >= t.repair_spread_nodes and count / fleet >= t.repair_spread_share


def is_repair(node, today, faulting, t=THRESHOLDS):
    """A node whose repeated faults are the vendor's to repair: under warranty, faults concentrated."""
    return (is_ageing(node, today, t)[1] and under_warranty(node, today)
            and not spread(*faulting[(node.site_id, node.node_model_id)], t))


def repair_differential(site, replaced, repairs, faulting, today, t):
    """The nodes left out of ageing as repairs ("open an RMA"), or why none of the nodes to replace is one."""
    models = {(n.site_id, n.node_model_id): n.node_model_name for n in [*repairs, *(n for n, _, _ in replaced)]}
    weighed = [figure(f"{name} nodes at {site} with repeated faults", faulting[key][0], "",
                      f"a repair below {t.repair_spread_nodes} nodes or {pct(t.repair_spread_share):.0f} % of them")
               for key, name in sorted(models.items(), key=lambda item: item[1]) if key in faulting]
    weighed += [figure(f"{name} nodes at {site}", faulting[key][1])
                for key, name in sorted(models.items(), key=lambda item: item[1]) if key in faulting]
    unknown = [n.hostname for n, expired, faulty in replaced if faulty and n.warranty_end is None]
    record = (f" Record the warranty of {', '.join(unknown)}: if it is still covered, open an RMA for it instead."
              if unknown else "")
    if not repairs:
        expired = sum(1 for _, e, _ in replaced if e)
        covered = [n.hostname for n, e, f in replaced if f and under_warranty(n, today)]
        reasons = ([f"{expired} out of warranty"] if expired else []) + (
            [f"{len(unknown)} faulting with no warranty recorded"] if unknown else []) + (
            [f"{', '.join(covered)} faulting under warranty, but with the faults spread over their model's nodes "
             "(wear or a bad batch, not one bad unit)"] if covered else [])
        return ruled_out("warranty_repair", "No repair under warranty among the nodes to replace: "
                                            + "; ".join(reasons) + "." + record,
                         figure("Nodes out of warranty", expired), *weighed)
    hosts = ", ".join(n.hostname for n in repairs)
    return ruled_out(
        "warranty_repair",
        f"Left out of the replacement: {hosts} fault under warranty while the rest of their model's nodes at {site} "
        f"run clean: open an RMA with the vendor to repair or swap {'them' if len(repairs) > 1 else 'it'} under "
        f"warranty; nothing to buy." + record,
        *weighed,
        *(figure(f"{n.hostname}: warranty end", n.warranty_end.isoformat()) for n in repairs),
        *(figure(f"{n.hostname}: days with faults", n.fault_days, "days", f"in {t.fault_window_days} d")
          for n in repairs),
        *(figure(f"{n.hostname}: days with XID errors", n.xid_days, "days", f"in {t.xid_window_days} d")
          for n in repairs),
    )


def split(nodes, today, t=THRESHOLDS):
    """({site: [(node, out of warranty, faulting)] to replace}, {site: [nodes to repair under warranty]},
    the faulting nodes by site and model)."""
    nodes = list(nodes)
    faulting = faulting_by_model(nodes, today, t)
    by_site, repairs = defaultdict(list), defaultdict(list)
    for node in nodes:
        expired, faulty = is_ageing(node, today, t)
        if is_repair(node, today, faulting, t):
            repairs[node.site_id].append(node)
        elif expired or faulty:
            by_site[node.site_id].append((node, expired, faulty))
    return by_site, repairs, faulting


def repairs(nodes, today, t=THRESHOLDS):
    """One finding per site with nodes whose repeated faults are a repair under warranty: open an RMA, buy nothing.
    Its differential says why it is not ageing."""
    _, to_repair, faulting = split(nodes, today, t)
    findings = []
    for site_id, rows in sorted(to_repair.items()):
        rows.sort(key=lambda n: n.hostname)
        site, hosts = rows[0].site_name, ", ".join(n.hostname for n in rows)
        count = f"{len(rows)} node{'s' if len(rows) != 1 else ''}"
        fleet = [faulting[(n.site_id, n.node_model_id)] for n in rows]
        findings.append(Finding(
            kind=K.REPAIR, key=f"{K.REPAIR}:site={site_id}", severity=SEV.MEDIUM,
            title=f"{count} to repair under warranty at {site}",
            summary=(f"At {site}, {hosts} fault{'s' if len(rows) == 1 else ''} again and again while the rest of "
                     f"{'its' if len(rows) == 1 else 'their'} model's nodes run clean, under warranty until "
                     f"{max(n.warranty_end for n in rows):%Y-%m-%d}: one bad unit, not an ageing fleet."),
            action=(f"Open an RMA with the vendor for {hosts}: have {'it' if len(rows) == 1 else 'them'} repaired or "
                    "swapped under warranty (drain it first, keep a spare node for its jobs); nothing to buy."),
            figures=[
                figure("Nodes to repair", len(rows), "", "faulting under warranty, faults concentrated"),
                {"label": "Nodes", "value": None, "unit": "", "rule": "", "rows": [
                    {"hostname": n.hostname, "warranty_end": n.warranty_end.isoformat(), "fault_days": n.fault_days,
                     "xid_days": n.xid_days, "xid_errors": n.xid_errors} for n in rows]},
            ],
            chart={"type": "hbar", "title": "Faults per node", "data": {
                "labels": [n.hostname for n in rows], "x_title": "days with the fault",
                "series": [{"name": f"days moved to degraded ({t.fault_window_days} d)",
                            "values": [n.fault_days for n in rows]},
                           {"name": f"days with XID errors ({t.xid_window_days} d)",
                            "values": [n.xid_days for n in rows]}]}},
            site_id=site_id, node_model_id=rows[0].node_model_id, node_count=0,
            measured={"repair_nodes": len(rows)},
            ruled_out=[ruled_out(
                "fleet_ageing", "Not ageing: the faults sit on "
                + ", ".join(f"{c} of {n}" for c, n in sorted(set(fleet)))
                + f" nodes of the model at {site} (a replacement needs them spread: ≥ {t.repair_spread_nodes} nodes "
                  f"and ≥ {pct(t.repair_spread_share):.0f} % of them), and the warranty still covers them.",
                *(figure(f"{n.hostname}: warranty end", n.warranty_end.isoformat()) for n in rows),
                *(figure(f"Faulting {n.node_model_name} nodes at {site}", c) for n, (c, _) in zip(rows, fleet,
                                                                                                   strict=True)),
                *(figure(f"{n.node_model_name} nodes at {site}", f) for n, (_, f) in zip(rows, fleet, strict=True)))],
        ))
    return findings


def ageing(nodes, today, t=THRESHOLDS):
    """One finding per site with nodes out of warranty or with repeated faults, the repairs under warranty in its
    differential (they are ``repairs``' findings: nothing is bought for them)."""
    by_site, repairs, faulting = split(nodes, today, t)
    findings = []
    for site_id, rows in sorted(by_site.items()):
        rows.sort(key=lambda row: row[0].hostname)
        expired = [n.hostname for n, e, _ in rows if e]
        faulty = [n.hostname for n, _, f in rows if f]
        both = [n.hostname for n, e, f in rows if e and f]
        covered = [n.hostname for n, e, f in rows if f and under_warranty(n, today)]
        model_counts = Counter((n.node_model_id, n.node_model_name, n.node_price) for n, _, _ in rows)
        (model_id, model_name, price), _ = model_counts.most_common(1)[0]
        site = rows[0][0].site_name
        parts = []
        if expired:
            parts.append(f"{len(expired)} out of warranty ({', '.join(expired)})")
        if faulty:
            parts.append(f"{len(faulty)} with repeated faults ({', '.join(faulty)})")
        findings.append(Finding(
            kind=K.AGEING, key=f"{K.AGEING}:site={site_id}",
            severity=SEV.HIGH if both or len(faulty) >= 3 else SEV.MEDIUM,
            title=f"{len(rows)} ageing node{'s' if len(rows) != 1 else ''} at {site}",
            summary=f"At {site}, {len(rows)} nodes are due for replacement: {'; '.join(parts)}.",
            action=(f"Replace {len(rows)} node{'s' if len(rows) != 1 else ''} ({model_name} or its successor)"
                    + (f", starting with {', '.join(both)} (out of warranty and faulting)" if both else "")
                    + "; until then keep spares and a support contract for them"
                    + (f", and have the vendor repair {', '.join(covered)} under warranty meanwhile" if covered else "")
                    + "."),
            figures=[
                figure("Nodes out of warranty", len(expired), "", "warranty end before today"),
                figure("Nodes with repeated faults", len(faulty), "",
                       f"≥ {t.fault_days} days degraded in {t.fault_window_days} d or XID errors on "
                       f"≥ {t.xid_days} days in {t.xid_window_days} d"),
                figure("Both", len(both)),
                figure("Nodes left out as repairs under warranty (RMA)", len(repairs[site_id])),
                {"label": "Nodes", "value": None, "unit": "", "rule": "", "rows": [
                    {"hostname": n.hostname, "warranty_end": n.warranty_end.isoformat() if n.warranty_end else None,
                     "out_of_warranty": e, "fault_days": n.fault_days, "xid_days": n.xid_days,
                     "xid_errors": n.xid_errors} for n, e, _ in rows]},
            ],
            chart={"type": "hbar", "title": "Faults per node", "data": {
                "labels": [n.hostname for n, _, _ in rows], "x_title": "days with the fault",
                "series": [{"name": f"days moved to degraded ({t.fault_window_days} d)",
                            "values": [n.fault_days for n, _, _ in rows]},
                           {"name": f"days with XID errors ({t.xid_window_days} d)",
                            "values": [n.xid_days for n, _, _ in rows]}],
            }},
            site_id=site_id, node_model_id=model_id, node_count=len(rows), node_price=price,
            ruled_out=[repair_differential(site, rows, repairs[site_id], faulting, today, t)],
        ))
    return findings
