"""What a plan made from a recommendation needs, from the recommendation's evidence: the line that leads the plan's
analysis, and what the GPU capacity part must count so that it does not contradict it.

Plain Python over the recommendation's fields and plain data (``planning.plans.analysis`` reads them):

- *capacity-bound*: the partition's history is its busy GPU-hours, capped by its capacity; the queue held more.
  The GPUs' worth of jobs waiting on average (the evidence's ``measured.gpus_waiting``) become a demand line,
  "Queued demand (recommendation #N)", in every month: × 730 h. With the busy GPU-hours of the history both fill
  capacity to the plan's target, as the rule sizes its nodes, so the shortfall is the recommendation's node count
  when the forecast stays at the level the recommendation measured. Where the scope has no history yet, the load
  it measured (GPUs × utilization) stands in for it, said so.
- *ageing*: the nodes to replace leave the baseline: a node out of warranty from the plan's first month (now),
  one still under warranty (repeated faults) from its warranty end, when the vendor no longer repairs it. A
  replacement keeps the capacity the scope has: demand counts at least the capacity before they leave at the
  target utilization ("Capacity to keep (recommendation #N)", the part above the forecast), so the shortfall is the
  GPUs that leave, the recommendation's node count.
- *under-used*: the need is to reclaim, not to buy: idle nodes, GPUs a team holds unused, nodes stuck before
  service. It leads the analysis with the recommendation's evidence (the idle GPU-hours and their cost) and action;
  where the GPU capacity part finds no shortfall, the headline says to reclaim them before buying.
- *scheduling-, storage-, network- and memory-bound*: the need is not more GPUs. It leads the analysis with the
  recommendation's evidence and action; where the GPU capacity part finds no shortfall, the headline says that no
  more GPUs are needed and names the bottleneck in place of "No new capacity needed". Memory-bound names the
  catalog's GPU models with more memory than the partition's.
"""

from dataclasses import dataclass, field

from .capacity import HOURS_PER_MONTH, active_share

# The need of each kind, in a few words: what the line leading the analysis is about, and for the kinds whose need
# is not more GPUs, the bottleneck the headline names.
TOPICS = {
    "capacity_bound": ("GPU capacity", ""),
    "ageing": ("Replacement", ""),
    "scheduling_bound": ("Queue policy", "the queue policy"),
    "storage_bound": ("Storage read throughput", "storage"),
    "network_bound": ("Interconnect", "the network"),
    "memory_bound": ("GPU memory", "GPU memory"),
    "under_used": ("Reclaim, not buy", "GPUs already owned and left unused: reclaim them first"),
    "repair": ("Repair under warranty", "a node to repair under warranty: open an RMA with the vendor"),
}


@dataclass
class DemandLine:
    name: str
    per_month: list  # GPU-hours


@dataclass
class Need:
    rec_id: int
    kind: str
    topic: str
    statement: str  # leads the analysis: the evidence in words and the recommendation's action
    figures: list  # (label, value with its unit), from the evidence
    node_count: int = 0  # nodes the recommendation adds or replaces (capacity-bound, ageing)
    bottleneck: str = ""  # the kinds whose need is not more GPUs
    lines: list = field(default_factory=list)  # ``DemandLine``: demand the history cannot see
    leaving: dict = field(default_factory=dict)  # node id → the day it leaves the baseline (ageing)
    notes: list = field(default_factory=list)
    evidence: dict = field(default_factory=dict)

    @property
    def ref(self):
        return f"recommendation #{self.rec_id}"

    def headline(self, option):
        """The analysis's headline where no option to add GPUs is recommended, saying why in the need's terms;
        None where the decision's own headline stands."""
        if option is not None:
            return None
        if self.bottleneck:
            return f"No more GPUs needed: the bottleneck is {self.bottleneck} ({self.ref})."
        if self.kind == "ageing" and self.node_count:
            if not self.leaving:
                return (f"Nothing to replace in the plan's scope: none of the {self.node_count} nodes of {self.ref} "
                        "is in it.")
            return (f"No replacement needed within the plan's months: the {len(self.leaving)} nodes of {self.ref} "
                    f"stay in service until {max(self.leaving.values()):%b %Y} or the capacity left covers the "
                    "demand; nothing to buy yet.")
        if self.kind == "capacity_bound" and self.reclaimed:
            return (f"No GPUs to buy: the {sum(g for g, _ in self.reclaimed):,} GPUs returned to service or moved "
                    f"first cover the demand ({self.ref}).")
        return None

    @property
    def reclaimed(self):
        """Capacity-bound: (GPUs, words) the recommendation takes first, before buying: its partition's GPUs out of
        service returned (``measured.returned_gpus``) and idle ones of the same model moved (``rebalance_gpus``)."""
        found = []
        if returned := measured(self.evidence, "returned_gpus"):
            found.append((returned, f"Returned to service first ({self.ref}): {returned:,} GPUs now degraded or in "
                                    "repair, counted from the first month."))
        if moved := measured(self.evidence, "rebalance_gpus"):
            found.append((moved, f"Moved first from idle partitions of the same GPU model ({self.ref}): {moved:,} "
                                 "GPUs, counted from the first month."))
        return found if self.kind == "capacity_bound" else []

    def compare(self, best, gpus_per_node, predicted, base):
        """Why the recommended option (``best``, a ``Scenario`` or None) adds fewer or more nodes than the
        recommendation asked (capacity-bound, ageing), from the forecast (``forecast.Forecast``) and the baseline
        (``capacity.Capacity``); None when they agree."""
        nodes = best.nodes if best else 0
        if not self.node_count or nodes == self.node_count:
            return None
        why = []
        if best is not None and best.peak_rented_gpus:
            why.append(f"it rents up to {best.peak_rented_gpus:,} GPUs in place of buying"
                       + (f" ({self.node_count * gpus_per_node:,} GPUs asked)" if gpus_per_node else ""))
        if self.kind == "capacity_bound":
            gpus, util = measured(self.evidence, "gpus"), measured(self.evidence, "util_mean")
            peak_cap = max(base.gpus, default=0.0)
            if gpus is not None and round(peak_cap) != gpus:
                why.append(f"the plan's capacity in scope reaches {peak_cap:,.0f} GPUs (in service, returned or "
                           f"moved, rented, arriving) against the {gpus:,} in service the recommendation counted")
            if gpus and util is not None:
                why.append(f"the forecast of the scope's history peaks at {max(predicted.mean) / HOURS_PER_MONTH:,.1f}"
                           f" busy GPUs against the {gpus * util / 100:,.1f} the recommendation measured")
        elif self.kind == "ageing":
            if len(self.leaving) != self.node_count:
                why.append(f"{len(self.leaving)} of the {self.node_count} nodes to replace are in the plan's scope")
            why.append("demand above the capacity kept at the target utilization adds nodes")
        option = (f"The recommended option ({best.label.lower()}) buys {nodes} node{'s' if nodes != 1 else ''}"
                  if best else "No option is recommended")
        return (f"{option} where {self.ref} asked for {self.node_count}: "
                + "; ".join(why or ["the forecast differs from the window the recommendation measured"]) + ".")


def _value(figure):
    value = figure.get("value")
    if isinstance(value, float):
        value = f"{value:,.2f}".rstrip("0").rstrip(".")
    return f"{value} {figure.get('unit') or ''}".strip()


def evidence_figures(evidence):
    """(label, value with unit) of the evidence's figures that have a value (a table of nodes is left out)."""
    return [(f["label"], _value(f)) for f in evidence.get("figures", []) if f.get("value") not in (None, "")]


def measured(evidence, name):
    """A number the rule measured (``evidence.measured``); None when it did not say. Never read from a figure's
    label: display text is no data contract."""
    value = evidence.get("measured", {}).get(name)
    return value if isinstance(value, int | float) else None


def need_for(rec, first_month, horizon, nodes=None, larger_models=()):
    """The ``Need`` of recommendation ``rec`` for a plan of ``horizon`` months from ``first_month``.

    ``nodes``: {hostname: (node id, GPUs in scope)} of the nodes an ageing one replaces; ``larger_models``: the
    catalog's GPU models with more memory than the partition's, as text ("H200 (141 GB)"), for memory-bound."""
    topic, bottleneck = TOPICS.get(rec.kind, (rec.kind, ""))
    need = Need(rec.pk, rec.kind, topic, f"{topic}: {rec.summary} Need from recommendation #{rec.pk}: {rec.action}",
                evidence_figures(rec.evidence), bottleneck=bottleneck, evidence=rec.evidence)
    if rec.kind == "capacity_bound":
        need.node_count = rec.node_count
        waiting = measured(rec.evidence, "gpus_waiting")
        if waiting:
            need.lines.append(DemandLine(f"Queued demand ({need.ref})", [waiting * HOURS_PER_MONTH] * horizon))
        else:
            need.notes.append(f"The {need.ref} does not say how many GPUs' worth of jobs waited: the queue is left "
                              "out of the demand.")
    elif rec.kind == "ageing":
        need.node_count = rec.node_count
        need.leaving, said = leaving(rec.evidence, first_month, nodes or {})
        need.notes.append("Leaving the baseline: " + "; ".join(said) + "." if said else
                          "None of the nodes to replace is in the plan's scope now: nothing leaves the baseline.")
    elif rec.kind == "memory_bound":
        more = ", ".join(larger_models) or "none in the catalog"
        need.statement += f" Catalog GPU models with more memory than the partition's: {more}."
        need.figures.append(("GPU models with more memory", more))
    return need


def evidence_rows(evidence):
    """The rows of the evidence's tables (an ageing recommendation's nodes to replace: hostname, warranty end…)."""
    return [row for f in evidence.get("figures", []) for row in f.get("rows", [])]


def leaving(evidence, first_month, nodes):
    """({node id: the day it leaves}, one phrase per node saying when and why) for an ageing recommendation."""
    days, said = {}, []
    for row in evidence_rows(evidence):
        if row["hostname"] not in nodes:
            continue
        node_id, _ = nodes[row["hostname"]]
        end = row.get("warranty_end")
        if end and end > first_month.isoformat():  # under warranty: the vendor repairs it until then
            day = _date(end)
            said.append(f"{row['hostname']} from {day:%b %Y} (its warranty end)")
        else:
            day = first_month
            why = f"out of warranty since {end}" if end else "repeated faults, no warranty recorded"
            said.append(f"{row['hostname']} from {day:%b %Y} (now: {why})")
        days[node_id] = day
    return days, said


def _date(text):
    from datetime import date

    return date.fromisoformat(text)


def keep_capacity(need, months, demand, capacity_hours, nodes, target):
    """Ageing: the demand line that keeps the capacity the nodes leaving take away, per month the part of
    (capacity before they leave × target) above ``demand``; None when nothing leaves."""
    gpus = {node_id: n for node_id, n in nodes.values()}
    if not need.leaving:
        return None
    gone = [sum(gpus[n] * active_share(month, day, None) for n, day in need.leaving.items()) for month in months]
    per_month = [max(0.0, (hours + g * HOURS_PER_MONTH) * target - d)
                 for hours, g, d in zip(capacity_hours, gone, demand, strict=True)]
    return DemandLine(f"Capacity to keep ({need.ref})", per_month)


def measured_load(need, horizon):
    """Capacity-bound with no history in the scope: the busy GPUs the recommendation measured, as demand."""
    gpus, util = measured(need.evidence, "gpus"), measured(need.evidence, "util_mean")
    if not (gpus and util):
        return None
    return DemandLine(f"Measured load ({need.ref})", [gpus * util / 100 * HOURS_PER_MONTH] * horizon)

