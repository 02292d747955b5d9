"""Server time and query count of the list pages and API lists as the fleet grows.

    .venv/bin/python bench/list_pages.py [--sizes 50,500,5000] [--repeat 5]
    .venv/bin/python bench/list_pages.py --fleet [--repeat 7]

Starts a throwaway PostgreSQL (as the tests do), fills it with ``tests.factories.bulk_make`` and times
each page with Django's test client (median of ``--repeat`` requests, after one warm-up). Figures are
reported as ratios against the smallest size measured in the same run, so they compare across machines.

``--fleet`` measures issue 17's two list figures instead, on 1,250 nodes / 10,000 GPUs: the node API's
1,000 rows against a hand-written view returning the same JSON from ``.values()`` (``bare_nodes`` below,
checked equal to the API's answer), and the node list page's 500 rows against the API's 500 rows, timed in a
fresh process once the fleet is built (as a server's worker would serve them).
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
os.environ.setdefault("DEBUG", "1")  # a benchmark on a scratch database: the demo's settings

PAGES = ["/inventory/nodes/", "/inventory/gpus/", "/api/inventory/nodes/", "/api/inventory/gpus/"]


def bare_nodes(request):
    """The baseline: the node API's page of JSON (same fields and shape) from ``.values()``, formatted by hand."""
    from django.http import JsonResponse

    from inventory import querysets

    size = int(request.GET["page_size"])
    rows = querysets.nodes().order_by("pk").values(
        "pk", "hostname", "state", "serial", "asset_tag", "site", "site__name", "rack", "rack__name", "position",
        "node_model", "node_model__name", "gpu_count", "partition", "owner_team", "warranty_end", "state_since",
        "created", "updated")
    prefix = request.build_absolute_uri("/api/inventory/nodes/")

    def stamp(value):
        return value.isoformat().replace("+00:00", "Z")

    results = [{
        "id": r["pk"], "url": f"{prefix}{r['pk']}/", "display": r["hostname"], "hostname": r["hostname"],
        "state": r["state"], "serial": r["serial"], "asset_tag": r["asset_tag"], "site": r["site"],
        "site_name": r["site__name"], "rack": r["rack"], "rack_name": r["rack__name"], "position": r["position"],
        "node_model": r["node_model"], "node_model_name": r["node_model__name"], "gpu_count": r["gpu_count"],
        "partition": r["partition"], "owner_team": r["owner_team"],
        "warranty_end": r["warranty_end"] and r["warranty_end"].isoformat(),
        "state_since": r["state_since"] and stamp(r["state_since"]), "created": stamp(r["created"]),
        "updated": stamp(r["updated"]),
    } for r in rows[:size]]
    count = querysets.nodes().count()
    after = f"{prefix}?page=2&page_size={size}" if count > size else None
    return JsonResponse({"count": count, "next": after, "previous": None, "results": results})


urlpatterns = []  # with --fleet: the portal's URLs and bench/nodes/ (bare_nodes)


def build_fleet(nodes=1250, gpus_per_node=8):
    """A fleet as the issue measures it: 4 sites, 42U racks of 10 nodes (a tenth of the nodes unracked),
    serials, warranties (a third expired), 8 GPUs per node."""
    from datetime import date, timedelta

    from inventory.models import GPU, GPUModel, Node, NodeModel, Rack, Site, Team

    gpu_model = GPUModel.objects.get(name="H100 SXM 80GB")
    node_model = NodeModel.objects.filter(gpu_slots=8).first()
    sites = Site.objects.bulk_create(
        Site(name=f"bench-site-{i}", power_capacity_kw=10000, cooling_capacity_kw=10000) for i in range(4))
    racks = Rack.objects.bulk_create(Rack(site=sites[r % 4], name=f"rack-{r:03d}", height_u=42, power_budget_kw=40)
                                     for r in range(nodes // 10))
    Team.objects.bulk_create([Team(name=f"team-{i}") for i in range(5)], ignore_conflicts=True)
    fleet = Node.objects.bulk_create(
        Node(hostname=f"bench-{n:05d}", site=racks[n // 10].site if n % 10 else sites[n % 4],
             rack=racks[n // 10] if n % 10 else None, position=(n % 10) * 4 + 1 if n % 10 else None,
             node_model=node_model, state=["in_service", "delivered", "in_repair"][n % 3],
             partition=f"part-{n % 8}", owner_team_id=f"team-{n % 5}", serial=f"SN{n:06d}" if n % 7 else "",
             warranty_end=date.today() + timedelta(days=(n % 3 - 1) * 200) if n % 4 else None)
        for n in range(nodes))
    GPU.objects.bulk_create(
        GPU(node=node, slot=slot, gpu_model=gpu_model, state="in_service", uuid=f"GPU-bench-{node.pk}-{slot}")
        for node in fleet for slot in range(gpus_per_node))


def paired_ms(client, urls, repeat):
    """Median server time of each URL, the URLs requested in turn so that the machine's load weighs on each alike."""
    timings = {url: [] for url in urls}
    for url in urls:
        client.get(url)
    for _ in range(repeat):
        for url in urls:
            start = time.perf_counter()
            response = client.get(url)
            timings[url].append(time.perf_counter() - start)
            assert response.status_code == 200, (url, response.status_code)
    return [statistics.median(timings[url]) * 1000 for url in urls]


def fleet_ratios(client, repeat):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    api, bare = "/api/inventory/nodes/?page_size=1000", "/bench/nodes/?page_size=1000"
    got, want = client.get(api).json(), client.get(bare).json()
    if got != want:
        first, base = got["results"][0], want["results"][0]
        print({k: (first.get(k), base.get(k)) for k in set(first) | set(base) if first.get(k) != base.get(k)})
    assert got == want, "the baseline must answer the API's JSON"
    pairs = [(api, bare), ("/inventory/nodes/?per_page=500", "/api/inventory/nodes/?page_size=500")]
    print(f"{'request':38} {'ms':>8} {'queries':>8} {'SQL ms':>8}   {'against':38} {'ms':>8} {'ratio':>6}")
    for url, base in pairs:
        ms, base_ms = paired_ms(client, [url, base], repeat)
        with CaptureQueriesContext(connection) as queries:
            client.get(url)
        sql_ms = sum(float(query["time"]) for query in queries.captured_queries) * 1000
        print(f"{url:38} {ms:8.1f} {len(queries):8} {sql_ms:8.1f}   {base:38} {base_ms:8.1f} {ms / base_ms:6.2f}")


def measure_fleet(repeat):
    """``--fleet``'s ratios, on the fleet that the parent process built in the database of ``DATABASE_URL``."""
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.test import Client, override_settings
    from django.urls import include, path

    client = Client()
    client.force_login(User.objects.get(username="bench"))
    urlpatterns[:] = [path("bench/nodes/", bare_nodes), path("", include(settings.ROOT_URLCONF))]
    with override_settings(ROOT_URLCONF=__name__):
        fleet_ratios(client, repeat)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50,500,5000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--fleet", action="store_true", help="issue 17's list ratios on 1,250 nodes / 10,000 GPUs")
    parser.add_argument("--fleet-built", action="store_true", help=argparse.SUPPRESS)  # the child process of --fleet
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.fleet_built:
        measure_fleet(args.repeat)
        return

    from tests.helpers.pgserver import throwaway_postgres

    with throwaway_postgres() as (host, port, user):
        os.environ["DATABASE_URL"] = f"postgres://{user}@{host}:{port}/postgres"
        import django

        django.setup()
        from django.contrib.auth.models import User
        from django.core.management import call_command
        from django.db import connection
        from django.test import Client
        from django.test.utils import CaptureQueriesContext

        from tests.factories import bulk_make

        call_command("migrate", verbosity=0)
        admin = User.objects.create_superuser("bench", "bench@example.org", "bench")
        if args.fleet:
            # The requests are timed in a fresh process, as a server's worker serves them: in the process that has
            # just created the fleet's 11,000 objects the page's objects land in cache-cold memory and the same
            # work takes up to twice as long (README, "Where it stands").
            build_fleet()
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")  # the planner's statistics, as autovacuum gathers them after a bulk load
            connection.close()
            subprocess.run([sys.executable, __file__, "--fleet-built", "--repeat", str(args.repeat)], check=True)
            return
        client = Client()
        client.force_login(admin)
        results = {}
        created = {"node": 0, "gpu": 0}
        for size in sizes:
            for model in created:
                bulk_make(model, size - created[model])
                created[model] = size
            for url in PAGES:
                client.get(url)
                timings = []
                for _ in range(args.repeat):
                    start = time.perf_counter()
                    response = client.get(url)
                    timings.append(time.perf_counter() - start)
                    assert response.status_code == 200, (url, response.status_code)
                with CaptureQueriesContext(connection) as queries:
                    client.get(url)
                results[(url, size)] = (statistics.median(timings) * 1000, len(queries))

    base = sizes[0]
    print(f"{'page':28} {'rows':>6} {'ms':>8} {'x base':>7} {'queries':>8}")
    for url in PAGES:
        for size in sizes:
            ms, queries = results[(url, size)]
            print(f"{url:28} {size:>6} {ms:>8.1f} {ms / results[(url, base)][0]:>7.2f} {queries:>8}")


if __name__ == "__main__":
    main()
