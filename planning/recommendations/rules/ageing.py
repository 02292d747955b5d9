"""Ageing: nodes out of warranty or with repeated faults, per site."""

from collections import Counter, defaultdict

from ..evidence import figure
from .data import SEV, THRESHOLDS, Finding, K


def is_ageing(node, today, t=THRESHOLDS):
    """(out of warranty, repeated faults) of a node."""
    expired = node.warranty_end is not None and node.warranty_end < today
    faulty = node.fault_days >= t.fault_days or node.xid_days >= t.xid_days
    return expired, faulty


def ageing(nodes, today, t=THRESHOLDS):
    """One finding per site with nodes out of warranty or with repeated faults."""
    by_site = defaultdict(list)
    for node in nodes:
        expired, faulty = is_ageing(node, today, t)
        if expired or faulty:
            by_site[node.site_id].append((node, expired, faulty))
    findings = []
    for site_id, rows in sorted(by_site.items()):
        rows.sort(key=lambda row: row[0].hostname)
        expired = [n.hostname for n, e, _ in rows if e]
        faulty = [n.hostname for n, _, f in rows if f]
        both = [n.hostname for n, e, f in rows if e and f]
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
                    + "; until then keep spares and a support contract for them."),
            figures=[
                figure("Nodes out of warranty", len(expired), "", "warranty end before today"),
                figure("Nodes with repeated faults", len(faulty), "",
                       f"≥ {t.fault_days} days degraded in {t.fault_window_days} d or XID errors on "
                       f"≥ {t.xid_days} days in {t.xid_window_days} d"),
                figure("Both", len(both)),
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
        ))
    return findings
