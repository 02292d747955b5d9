"""Demo contracts for ``manage.py seed_demo`` (``inventory.demo`` calls ``seed`` after the fleet exists, ``finish``
once every app has seeded; inventory does not import planning): the purchase of each site's nodes, a support
contract covering most of them (not the old A100s), a GPU rental that ends within 60 days, an expansion contract
and, under it, an expansion order partly delivered (2 of 4 DGX H200 with their GPUs, received through
``procurement.orders.receive_delivery``, so the nodes and GPUs are in state delivered, without a rack yet, with their
lifecycle records).

Idempotent like the rest of the demo: contracts are matched on vendor and reference, coverage and SLA
terms are only written where they differ; the order is matched on vendor and reference, its delivery on its
external id (a delivery, once received, is not repeated).

Capacity plans: a draft (the 2027 H200 expansion, with its planned training runs and scenario assumptions), one
submitted by the admin and waiting for a second manager (the demo manager can approve it), and one the manager
submitted and the admin approved, whose bill of materials the procurement API can turn into an order, and one
approved in the past whose workloads have run: three teams' pre-training runs in the whole months of Slurm history
the inventory demo writes (``inventory.demo.JOB_HISTORY_MONTHS``), each under its team's Slurm account, so the
Calibration page has finished workloads to compare with their jobs. Once the analysis has run, the admin proposes
the move its reclaim recommendation suggests (train-h100's idle nodes to the inference partition), for the demo
manager to decide. A plan is
created once with its workloads and lines and moved through ``planning.plans.workflow`` (which records the events); it
is found again by name and left as it is, so a plan changed in the portal is not undone by seeding again."""

from datetime import date, timedelta
from decimal import Decimal as D

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db.models import Count
from django.utils import timezone

from inventory.demo import JOB_HISTORY_MONTHS, gpu_uuid
from inventory.models import GPUModel, Node, NodeModel, Site
from inventory.partitionmoves import workflow as moves
from inventory.partitionmoves.models import PartitionMove

from .contracts.models import Contract, SLATerm
from .contracts.tasks import raise_renewal_alerts
from .plans import bom, workflow
from .plans.forecast import add_months
from .plans.models import CapacityPlan, PlanItem, PlanWorkload
from .plans.summary import analyse_and_store
from .procurement.models import Delivery, OrderLine, PurchaseOrder
from .procurement.orders import ItemIn, receive_delivery
from .recommendations import store as recommendations
from .recommendations.actions import RECLAIM_KEY, reclaim_rows
from .recommendations.models import Recommendation

# The progress lines of ``seed_demo``: what ``seed`` and ``finish`` write.
SEEDS = "contracts, the expansion order and its delivery, capacity plans"
FINISHES = "recommendations and the capacity plans' analyses"
PRICE_PER_NODE = D("300000")  # a DGX H100 class server, list price
SLA = [("P1", 4, 24), ("P2", 8, 48), ("P3", 24, 120), ("P4", 72, 240)]
SITE_PURCHASES = {  # site: (reference, start)
    "Zurich DC1": ("NV-PO-2023-0412", date(2023, 9, 1)),
    "Lyon DC2": ("NV-PO-2022-1187", date(2022, 11, 15)),
}
UNSUPPORTED_PREFIX = "lys-a100"  # out of the support contract: the legacy A100 nodes
DEFAULTS = {"end": None, "notice_days": 0, "auto_renew": False, "one_off_cost": D(0), "monthly_cost": D(0),
            "gpu_hour_cost": D(0), "currency": "USD", "depreciation_months": 48, "rented_gpus": 0,
            "rented_gpu_model": None}  # every row names every field: the seeder compares them all
EXPANSION_ORDER = {"vendor": "NVIDIA", "reference": "NV-SO-2026-0311", "site": "Zurich DC1",
                   "ordered_on": date(2026, 3, 10), "currency": "USD"}
EXPANSION_LINES = [("DGX H200", None, 4, D("380000")), (None, "H200 SXM 141GB", 32, D("0"))]  # GPUs come in the price
EXPANSION_DELIVERY = {"external_id": "demo-NV-SO-2026-0311-1", "delivered_on": date(2026, 4, 2),
                      "note": "First half of the expansion: 2 DGX H200, GPUs installed."}
EXPANSION_HOSTNAMES = ["zrh-h200-009", "zrh-h200-010"]  # the H200 pod's next numbers; serials follow its pattern

H200, H100, A100 = "H200 SXM 141GB", "H100 SXM 80GB", "A100 80GB SXM"
IB_SWITCHES = "NVIDIA QM9700 NDR InfiniBand switch, 64 × 400G ports"
PLAN_DEFAULTS = {"description": "", "horizon_months": 12, "site": None, "node_model": None, "node_price": None,
                 "partition": "",
                 "rental_gpu_hour_cost": None, "target_utilization": 80, "build_lead_months": 9,
                 "expand_lead_months": 4, "rent_lead_months": 1}
# name → the plan's fields (site and node model by name; "months_ago": its first month that many months before this
# one, else next month), its workloads (name, start as the plan's n-th month, GPU model, sizing inputs and optionally
# the Slurm account it runs under), the lines its bill of materials adds to the recommended option's (node model, GPU
# model, description, quantity, unit cost in USD: what no scenario prices) and its workflow: [(step, user, comment)]
# through ``planning.plans.workflow``. The bill is filled from the plan's answer (``bom.fill``) as a manager would,
# so that the demo's plans never contradict their own analysis. Bursty runs on a fleet that rents at 2.50 USD an
# hour are rented; the plans that buy state the on-demand quote they were priced against (6.00 for an H200).
H200_QUOTE = D("6.00")
PLANS = {
    "2027 H200 expansion": {
        "fields": {
            "description": "Compute for the 2027 foundation-model roadmap: a dense 70B model, an 8x22B mixture of "
                           "experts and the instruction-tuning runs, on more DGX H200 in Zurich DC1.",
            "horizon_months": 36, "site": "Zurich DC1", "node_model": "DGX H200", "target_utilization": 75,
            "expand_lead_months": 5, "rental_gpu_hour_cost": H200_QUOTE},
        "workloads": [
            ("Dense 70B pre-training", 3, H200, {"params_billion": 70, "tokens_billion": 1800, "num_gpus": 512,
                                                 "seq_len": 8192, "deadline_days": 60}),
            ("8x22B MoE pre-training", 8, H200, {"params_billion": 141, "active_params_billion": 39,
                                                 "tokens_billion": 4000, "precision": "fp8", "mfu": 0.3,
                                                 "num_gpus": 768, "dataset_tb": 30}),
            ("8B instruction tuning and evals", 2, H200, {"params_billion": 8, "tokens_billion": 300,
                                                          "num_gpus": 64}),
        ],
        "items": [],
        "workflow": [],
    },
    "Lyon DC2 A100 refresh": {
        "fields": {
            "description": "H200 for the speech and vision teams' planned runs at Lyon as the 8 DGX A100 (warranty "
                           "ending, storage-starved) are retired: what to own and what to rent.",
            "horizon_months": 36, "site": "Lyon DC2", "node_model": "DGX H200", "build_lead_months": 9,
            "rental_gpu_hour_cost": H200_QUOTE},
        "workloads": [
            ("Speech foundation model 3B", 2, H200, {"params_billion": 3, "tokens_billion": 1500, "num_gpus": 64}),
            ("Vision-language 13B", 5, H200, {"params_billion": 13, "tokens_billion": 1000, "num_gpus": 64,
                                              "seq_len": 2048}),
        ],
        "items": [(None, None, "Decommissioning and data-wipe of 8 DGX A100", 8, D("1500"))],
        "workflow": [("submit", "admin", "Lyon's A100 warranties end; the power budget fits 8 DGX H200.")],
    },
    "Zurich DC1 H200 pod 2": {
        "fields": {
            "description": "The second H200 pod in Zurich DC1: nodes, the compute fabric's switches and scratch "
                           "storage to keep 64 GPUs fed.",
            "horizon_months": 24, "site": "Zurich DC1", "node_model": "DGX H200", "node_price": D("380000"),
            "partition": "train-h200", "rental_gpu_hour_cost": H200_QUOTE},
        "workloads": [
            ("Dense 34B continued pre-training", 2, H200, {"params_billion": 34, "tokens_billion": 1000,
                                                           "num_gpus": 64}),
        ],
        "items": [(None, None, "DDN AI400X2 Turbo Lustre appliance, 1.5 PB usable", 1, D("1250000"))],
        "workflow": [("submit", "manager", "Pod 1 runs above 85 % with long queues; quotes attached in the wiki."),
                     ("approve", "admin", "Approved within the 2026 budget.")],
    },
    # Runs of the simulator's teams in the months of Slurm history (inventory/telemetry/simulator.py): each on the
    # team's in-service GPUs (vision: 3 DGX A100 + 2 DGX H100 = 40; llm-pretrain: 11 DGX H100 + 5 DGX H200 = 128;
    # speech: 3 DGX A100 + 4 HGX H100 = 56), sized on the model most of them are, a model its job names train, the
    # tokens planned to fill about three weeks of them. What the jobs really took is the Calibration page's to say.
    "Teams' recent pre-training runs": {
        "fields": {
            "description": "The pre-training runs of the vision, LLM and speech teams on the existing fleet, and the "
                           "scratch storage their data sets need.",
            "months_ago": JOB_HISTORY_MONTHS, "horizon_months": 12},
        "workloads": [
            ("ViT-H/14 pre-training", 1, A100, {"params_billion": 0.632, "tokens_billion": 1600, "num_gpus": 40,
                                                "seq_len": 256}, "vision"),
            ("13B long-context pre-training", 2, H100, {"params_billion": 13, "tokens_billion": 600,
                                                        "num_gpus": 128, "seq_len": 32768}, "llm-pretrain"),
            ("Speech LM 3B pre-training", 2, H100, {"params_billion": 3, "tokens_billion": 900, "num_gpus": 56},
             "speech"),
        ],
        "items": [(None, None, "Lustre scratch expansion for the training data sets, 400 TB", 1, D("180000"))],
        "workflow": [("submit", "manager", "The teams' runs for the next two months; data sets staged on scratch."),
                     ("approve", "admin", "Approved: runs on the existing fleet.")],
    },
}


def contract_rows(owner, sites, today):
    node_counts = dict(Node.objects.filter(site__in=sites.values(), delivery_item=None)  # not the expansion's
                       .values_list("site__name").annotate(n=Count("pk")))
    rows = [
        {"kind": Contract.Kind.PURCHASE, "vendor": "NVIDIA", "reference": reference,
         "title": f"Purchase of the {name} GPU nodes", "owner": owner, "start": start, "end": None,
         "one_off_cost": PRICE_PER_NODE * node_counts.get(name, 0), "depreciation_months": 48, "currency": "USD"}
        for name, (reference, start) in SITE_PURCHASES.items() if name in sites
    ]
    rows += [
        {"kind": Contract.Kind.SUPPORT, "vendor": "NVIDIA", "reference": "NVES-2025-0093",
         "title": "Enterprise support, business critical", "owner": owner, "start": date(2025, 1, 1),
         "end": date(2027, 12, 31), "notice_days": 90, "auto_renew": True, "monthly_cost": D("42000"),
         "currency": "USD"},
        {"kind": Contract.Kind.RENTAL, "vendor": "CoreWeave", "reference": "CW-2025-0142",
         "title": "64 H100 for the spring pre-training run", "owner": owner, "start": today - timedelta(days=300),
         "end": today + timedelta(days=45), "notice_days": 30, "gpu_hour_cost": D("2.10"), "rented_gpus": 64,
         "rented_gpu_model": GPUModel.objects.filter(name="H100 SXM 80GB").first(), "currency": "USD"},
        {"kind": Contract.Kind.EXPANSION, "vendor": "NVIDIA", "reference": "NV-EXP-2026-0007",
         "title": "Zurich DC1 expansion: 8 DGX H200", "owner": owner, "start": date(2026, 3, 1), "end": None,
         "one_off_cost": D("3200000"), "depreciation_months": 48, "currency": "USD"},
    ]
    return [{**DEFAULTS, **row} for row in rows]


def sync_relation(contract, relation, objects):
    """Set a coverage relation only when it differs (an unchanged set writes no history)."""
    manager = getattr(contract, relation)
    wanted = {obj.pk for obj in objects}
    if set(manager.values_list("pk", flat=True)) != wanted:
        manager.set(wanted)


def seed(seeder, users):
    """Create or repair the demo contracts; returns them by reference."""
    today = timezone.localdate()
    sites = {site.name: site for site in Site.objects.filter(name__in=SITE_PURCHASES)}
    contracts = {ref: obj for (_vendor, ref), obj in seeder.sync(
        Contract, ("vendor", "reference"), contract_rows(users["manager"], sites, today)).items()}
    for name, (reference, _start) in SITE_PURCHASES.items():
        if name in sites:
            sync_relation(contracts[reference], "sites", [sites[name]])
    support = contracts["NVES-2025-0093"]
    sync_relation(support, "sites", [s for name, s in sites.items() if name == "Zurich DC1"])
    sync_relation(support, "nodes", Node.objects.filter(site__name="Lyon DC2").exclude(
        hostname__startswith=UNSUPPORTED_PREFIX))
    for priority, response, resolution in SLA:
        term = SLATerm.objects.filter(contract=support, priority=priority).first()
        if term is None or (term.response_hours, term.resolution_hours) != (response, resolution):
            SLATerm.objects.update_or_create(contract=support, priority=priority, defaults={
                "response_hours": response, "resolution_hours": resolution})
    expansion_order(seeder, contracts["NV-EXP-2026-0007"], users["manager"])
    seed_plans(seeder, users)
    # What the daily task would do on its first run: the rental's notice deadline shows on the dashboard at once.
    raise_renewal_alerts()
    return contracts


def expansion_order(seeder, contract, user):
    """The expansion order and its first delivery, each created once (found again by reference / external id)."""
    site = Site.objects.filter(name=EXPANSION_ORDER["site"]).first()
    if site is None:
        return None
    order = PurchaseOrder.objects.filter(vendor=EXPANSION_ORDER["vendor"],
                                         reference=EXPANSION_ORDER["reference"]).first()
    if order is None:
        order = PurchaseOrder.objects.create(**{**EXPANSION_ORDER, "site": site}, contract=contract, created_by=user)
        OrderLine.objects.bulk_create(
            OrderLine(order=order, node_model=NodeModel.objects.get(name=node_model) if node_model else None,
                      gpu_model=GPUModel.objects.get(name=gpu_model) if gpu_model else None, quantity=quantity,
                      unit_price=price)
            for node_model, gpu_model, quantity, price in EXPANSION_LINES
        )
        seeder.created[PurchaseOrder._meta.verbose_name_plural] += 1
    if not Delivery.objects.filter(order=order, external_id=EXPANSION_DELIVERY["external_id"]).exists():
        node_line, gpu_line = order.lines.order_by("pk")
        items = []
        for hostname in EXPANSION_HOSTNAMES:
            i = int(hostname.rsplit("-", 1)[1])
            items.append(ItemIn(node_line, serial=f"17232409{i:04d}", hostname=hostname))
            items += [ItemIn(gpu_line, serial=f"17251240{i:04d}{slot}", uuid=gpu_uuid(hostname, slot), node=hostname,
                             slot=slot) for slot in range(8)]
        receive_delivery(order, items, user, **EXPANSION_DELIVERY)
        seeder.created[Delivery._meta.verbose_name_plural] += 1
    return order


def seed_plans(seeder, users):
    """The demo capacity plans; new ones get their workloads and lines, then go through their workflow."""
    sites = {site.name: site for site in Site.objects.all()}
    node_models = {model.name: model for model in NodeModel.objects.all()}
    gpu_models = {model.name: model for model in GPUModel.objects.all()}
    rows = []
    this_month = timezone.localdate().replace(day=1)
    for name, plan in PLANS.items():
        fields = {**PLAN_DEFAULTS, **plan["fields"]}
        if "months_ago" in fields:
            fields["first_month"] = add_months(this_month, -fields.pop("months_ago"))
        fields["site"] = sites.get(fields["site"])
        fields["node_model"] = node_models.get(fields["node_model"])
        rows.append({"name": name, "owner": users["manager"], **fields})
    found = seeder.sync(CapacityPlan, ("name",), rows, update=False)
    for plan in seeder.new[CapacityPlan]:
        spec = PLANS[plan.name]
        workloads = [PlanWorkload(plan=plan, name=name, start=add_months(plan.first_month, month - 1),
                                  gpu_model=gpu_models[gpu], inputs=inputs, slurm_account="".join(account))
                     for name, month, gpu, inputs, *account in spec["workloads"]]
        items = [PlanItem(plan=plan, node_model=node_models.get(node_model), gpu_model=gpu_models.get(gpu_model),
                          description=description, quantity=quantity, unit_cost=cost, currency="USD")
                 for node_model, gpu_model, description, quantity, cost in spec["items"]]
        for obj in workloads + items:
            obj.full_clean()
        PlanWorkload.objects.bulk_create(workloads)
        try:
            bill, _ = bom.fill(plan)  # the recommended option's bill, as a manager fills it
            seeder.created[PlanItem._meta.verbose_name_plural] += len(bill.lines)
        except ValidationError:
            pass  # renting or nothing needed: no node to buy
        PlanItem.objects.bulk_create(items)
        seeder.created[PlanWorkload._meta.verbose_name_plural] += len(workloads)
        seeder.created[PlanItem._meta.verbose_name_plural] += len(items)
        for step, username, comment in spec["workflow"]:
            plan = workflow.TRANSITIONS[step](plan, users[username], comment)
    return {name: obj for (name,), obj in found.items()}


def finish():
    """The expansion recommendations the daily task would write, once every app's demo is there (support's
    tickets count as fault days), and the plans' summaries for the plan list, as the refresh task would write them
    (the seed writes plans in bulk, which queues no refresh); safe to run again."""
    recommendations.run()
    propose_reclaim_move()
    for plan in CapacityPlan.objects.filter(summary_at__isnull=True).select_related("site", "node_model"):
        analyse_and_store(plan)


RECLAIM_PARTITION, RECLAIM_TO = "train-h100", "inference"


def propose_reclaim_move():
    """The admin proposes moving train-h100's idle nodes, as its reclaim recommendation names them, to inference:
    a move waiting for a second manager (the demo manager), once per recommendation."""
    rec = Recommendation.objects.filter(key=f"{RECLAIM_KEY}partition={RECLAIM_PARTITION}",
                                        status=Recommendation.Status.OPEN).first()
    admin = User.objects.filter(username="admin").first()
    if rec is None or admin is None or PartitionMove.objects.filter(recommendation=rec.pk).exists():
        return
    hostnames = [row["hostname"] for row in reclaim_rows(rec)]
    nodes = Node.objects.filter(hostname__in=hostnames, partition=RECLAIM_PARTITION)
    moves.propose(admin, nodes, RECLAIM_TO, f"{rec.title}: {rec.summary} The inference queue can use them.",
                  recommendation=rec.pk)
