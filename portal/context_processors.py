from .roles import role_of

# The main menu: (section, [(label, URL name, permission needed)]).
NAVIGATION = [
    ("Inventory", [
        ("Sites", "inventory:site_list", "inventory.view_site"),
        ("Racks", "inventory:rack_list", "inventory.view_rack"),
        ("Nodes", "inventory:node_list", "inventory.view_node"),
        ("GPUs", "inventory:gpu_list", "inventory.view_gpu"),
        ("Fabrics", "inventory:fabric_list", "inventory.view_fabric"),
        ("Switches", "inventory:switch_list", "inventory.view_switch"),
        ("Fabric attachments", "inventory:fabricattachment_list", "inventory.view_fabricattachment"),
        ("Storage", "inventory:storagesystem_list", "inventory.view_storagesystem"),
    ]),
    ("Telemetry", [
        ("Utilization", "inventory:utilization", "inventory.view_telemetrysource"),
        ("Telemetry sources", "inventory:telemetrysource_list", "inventory.view_telemetrysource"),
    ]),
    ("Planning", [
        ("Contracts", "planning:contract_list", "planning.view_contract"),
        ("Uncovered assets", "planning:uncovered", "planning.view_contract"),
        ("Purchase orders", "planning:purchaseorder_list", "planning.view_purchaseorder"),
        ("Deliveries", "planning:delivery_list", "planning.view_delivery"),
        ("Webhooks", "planning:webhook_list", "planning.view_webhook"),
        ("Capacity plans", "planning:capacityplan_list", "planning.view_capacityplan"),
        ("Recommendations", "planning:recommendation_list", "planning.view_recommendation"),
        ("Workload sizing", "planning:sizing", "inventory.view_gpumodel"),  # any role: sizing reads the catalog
    ]),
    ("Support", [
        ("Tickets", "support:ticket_list", "support.view_support_pages"),  # researchers: theirs and their teams'
        ("Report a problem", "support:ticket_add", "support.add_ticket"),
        ("Support metrics", "support:metrics", "support.view_ticket"),
    ]),
    ("Catalog", [
        ("GPU models", "inventory:gpumodel_list", "inventory.view_gpumodel"),
        ("Node models", "inventory:nodemodel_list", "inventory.view_nodemodel"),
    ]),
]


def navigation(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    menu = [
        (section, [(label, url) for label, url, perm in items if user.has_perm(perm)])
        for section, items in NAVIGATION
    ]
    return {"navigation": [(section, items) for section, items in menu if items], "user_role": role_of(user)}
