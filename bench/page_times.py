"""Server time of every page in the navigation on the demo fleet, slowest first.

    .venv/bin/python bench/page_times.py [--db postgres|sqlite] [--repeat 5] [--top 0]

Seeds the demo (``seed_demo``: two sites, 42 nodes, 7 days of hourly and a year of daily telemetry,
contracts, plans, recommendations, tickets) into a throwaway database: PostgreSQL from ``tests/pgserver.py``
(the default, as in production) or SQLite (as ``make demo``), with ``PORTAL_VAR_DIR`` in a temporary folder.
Then, logged in as the demo manager, requests every page of the top bar's menus, the dashboard, the
utilization ranges and one detail page of each kind with Django's test client: one warm-up, then the median
(and the slowest) of ``--repeat`` requests, and the number of SQL queries. The client calls the view in
process, so the figures are the server's time (middleware, views, queries, templates) without the network
or the browser. Nothing is left behind.
"""

import argparse
import contextlib
import io
import os
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
os.environ.setdefault("DEBUG", "1")  # a benchmark on a scratch database: the demo's settings


@contextmanager
def database(kind):
    """Point the settings at a fresh database and a temporary var folder (media, broker) before Django starts."""
    with ExitStack() as stack:
        var = Path(tempfile.mkdtemp(prefix="portal-bench-"))
        stack.callback(shutil.rmtree, var, ignore_errors=True)
        os.environ["PORTAL_VAR_DIR"] = str(var)
        if kind == "postgres":
            from tests.helpers.pgserver import throwaway_postgres

            host, port, user = stack.enter_context(throwaway_postgres())
            os.environ["DATABASE_URL"] = f"postgres://{user}@{host}:{port}/postgres"
        else:
            os.environ["DATABASE_URL"] = f"sqlite:///{var / 'portal.sqlite3'}"
        yield


def pages():
    """(label, URL): the dashboard, each menu entry, the utilization ranges and one object of each kind."""
    from django.urls import reverse

    from inventory.models import GPU, Node, Site
    from planning.models import CapacityPlan, Contract, PurchaseOrder, Recommendation
    from portal.context_processors import NAVIGATION
    from support.models import Ticket

    found = [("Dashboard", reverse("home")), ("Changes", reverse("changelog"))]
    for section, items in NAVIGATION:
        found += [(f"{section} → {label}", reverse(name)) for label, name, _ in items]
    utilization = reverse("inventory:utilization")
    found += [(f"Utilization, {key}", f"{utilization}?range={key}") for key in ("24h", "30d", "1y")]
    plan = CapacityPlan.objects.filter(workloads__isnull=False).order_by("pk").first()
    objects = [
        ("Site", Site.objects.order_by("pk").first()),
        ("Node (in service)", Node.objects.filter(state="in_service").order_by("pk").first()),
        ("GPU", GPU.objects.filter(node__isnull=False).order_by("pk").first()),
        ("Contract", Contract.objects.order_by("pk").first()),
        ("Purchase order", PurchaseOrder.objects.order_by("pk").first()),
        ("Capacity plan", plan),
        ("Recommendation", Recommendation.objects.order_by("pk").first()),
        ("Ticket", Ticket.objects.order_by("pk").first()),
    ]
    found += [(f"{label} page", obj.get_absolute_url()) for label, obj in objects if obj is not None]
    if plan is not None:
        found.append(("Capacity plan analysis", reverse("planning:capacityplan_analysis", args=[plan.pk])))
    return found


def measure(client, url, repeat):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    response = client.get(url)  # warm-up: caches, compiled templates, imports
    if response.status_code != 200:
        raise SystemExit(f"{url} answered {response.status_code}; every page of the tour should answer 200.")
    times = []
    for _ in range(repeat):
        with CaptureQueriesContext(connection) as queries:
            start = time.perf_counter()
            client.get(url)
            times.append((time.perf_counter() - start) * 1000)
    return {"median": statistics.median(times), "max": max(times), "queries": len(queries),
            "kb": len(response.content) / 1024}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--top", type=int, default=0, help="show only the N slowest pages (0: all)")
    args = parser.parse_args()

    with database(args.db):
        import django

        django.setup()
        from django.contrib.auth.models import User
        from django.core.management import call_command
        from django.test import Client

        started = time.perf_counter()
        call_command("migrate", verbosity=0)
        with contextlib.redirect_stdout(io.StringIO()):  # its report and the console e-mail of renewal alerts
            call_command("seed_demo")
        print(f"Demo seeded into {args.db} in {time.perf_counter() - started:.0f} s; "
              f"median of {args.repeat} requests per page after one warm-up, as the demo manager.\n")
        client = Client()
        client.force_login(User.objects.get(username="manager"))
        rows = [(label, url, measure(client, url, args.repeat)) for label, url in pages()]

    rows.sort(key=lambda row: row[2]["median"], reverse=True)
    shown = rows[:args.top] if args.top else rows
    width = max(len(label) for label, _, _ in shown)
    print(f"{'page':<{width}}  {'median ms':>9}  {'max ms':>7}  {'queries':>7}  {'KB':>6}  URL")
    for label, url, m in shown:
        print(f"{label:<{width}}  {m['median']:>9.1f}  {m['max']:>7.1f}  {m['queries']:>7}  {m['kb']:>6.0f}  {url}")
    label, url, m = rows[0]
    print(f"\nSlowest: {label} ({url}), {m['median']:.0f} ms median server time, {m['queries']} queries.")


if __name__ == "__main__":
    main()
