"""The power and rack space nodes take: a site's power left (the plans' "Site power left", and their cap on the nodes
a site can still take) and the warnings of an import that would put a site or rack over its power or a rack over
its height. A node draws its model's maximum power unless it is retired, as the plans count it."""

from django.db.models import Sum

from .models import LifecycleState, Node


def drawing():
    """The nodes that count: every one not retired."""
    return Node.objects.exclude(state=LifecycleState.RETIRED)


def power_headroom_kw(site, added_w=0, replaced=()):
    """The site's power capacity less the maximum draw of its nodes that are not retired; None if unknown. An import
    asks with the watts its nodes add (``added_w``) and the pks of the stored nodes they replace."""
    if site is None or not site.power_capacity_kw:
        return None
    drawn = drawing().filter(site=site).exclude(pk__in=replaced).aggregate(w=Sum("node_model__max_power_w"))["w"]
    return float(site.power_capacity_kw) - ((drawn or 0) + added_w) / 1000


def shown_kw(kw):
    return f"{kw / 1000:,.1f} MW" if abs(kw) >= 1000 else f"{kw:,.1f} kW"


def overcommitted(nodes=(), sites=(), racks=()):
    """Warnings for the sites and racks over their power, and the racks over their height, once ``nodes`` (new or
    changed, unsaved: each with its site, rack and node model) and the new figures of ``sites`` and ``racks`` are
    stored. A query per site, one for the racks, whatever the number of nodes."""
    nodes = list(nodes)
    changed = [node.pk for node in nodes if node.pk]
    counted = [node for node in nodes if node.state != LifecycleState.RETIRED]
    site_by_pk = {node.site_id: node.site for node in counted if node.site_id}
    site_by_pk.update({site.pk: site for site in sites if site.pk})
    rack_by_pk = {node.rack_id: node.rack for node in counted if node.rack_id}
    rack_by_pk.update({rack.pk: rack for rack in racks if rack.pk})
    stored = drawing().exclude(pk__in=changed)
    rack_use = {rack: (w, u) for rack, w, u in stored.filter(rack__in=rack_by_pk).values("rack").annotate(
        w=Sum("node_model__max_power_w"), u=Sum("node_model__height_u")).values_list("rack", "w", "u")} \
        if rack_by_pk else {}
    added = {}  # (site or rack pk) -> [nodes, W, U] this file adds
    for node in counted:
        for key in (("site", node.site_id), ("rack", node.rack_id)):
            if key[1]:
                row = added.setdefault(key, [0, 0, 0])
                row[0] += 1
                row[1] += node.node_model.max_power_w
                row[2] += node.node_model.height_u
    warnings = []
    for pk, site in sorted(site_by_pk.items(), key=lambda item: str(item[1])):
        count, file_w, _ = added.get(("site", pk), (0, 0, 0))
        left = power_headroom_kw(site, file_w, changed)
        if left is not None and left < 0:
            capacity = float(site.power_capacity_kw)
            warnings.append(f"Site {site}: its nodes would draw {shown_kw(capacity - left)}, over its "
                            f"{shown_kw(capacity)} of power capacity ({count:,} nodes of this file draw "
                            f"{shown_kw(file_w / 1000)}); the plans would show {shown_kw(left)} of power left.")
    for pk, rack in sorted(rack_by_pk.items(), key=lambda item: str(item[1])):
        count, file_w, file_u = added.get(("rack", pk), (0, 0, 0))
        stored_w, stored_u = rack_use.get(pk, (0, 0))
        kw, units = ((stored_w or 0) + file_w) / 1000, (stored_u or 0) + file_u
        if rack.height_u and units > rack.height_u:
            warnings.append(f"Rack {rack}: {units} U of nodes in a {rack.height_u} U rack ({count:,} nodes of this "
                            f"file take {file_u} U).")
        if rack.power_budget_kw and kw > float(rack.power_budget_kw):
            warnings.append(f"Rack {rack}: its nodes would draw {shown_kw(kw)}, over its "
                            f"{shown_kw(float(rack.power_budget_kw))} power budget.")
    return warnings
