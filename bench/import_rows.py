"""Rows per second of the CSV import (preview and import) against a plain ``bulk_create`` of the same rows.

    .venv/bin/python bench/import_rows.py [--rows 8000] [--repeat 3]

Starts a throwaway PostgreSQL (as the tests do) and times ``portal.imports.run_import`` as the import page
and its background task run it: sites (no references) and nodes (site, rack and node model named in each
row, rack positions checked), each as a preview, an import in one transaction (the request's way) and an
import committed in batches (the task's way, ``IMPORT_BATCH_ROWS``). The baseline, measured in the same run,
is a bare ``bulk_create`` of the same objects without checks or change records; the ratio says how much of
the import's time its checks and records take, so it compares across machines.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
os.environ.setdefault("DEBUG", "1")  # a benchmark on a scratch database: the demo's settings


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from tests.helpers.pgserver import throwaway_postgres

    with throwaway_postgres() as (host, port, user):
        os.environ["DATABASE_URL"] = f"postgres://{user}@{host}:{port}/postgres"
        import django

        django.setup()
        from django.conf import settings
        from django.contrib.auth.models import User
        from django.core.management import call_command

        from inventory.forms import NodeImportForm, SiteImportForm
        from inventory.models import Node, Rack, Site
        from portal.imports import run_import
        from tests.factories import build_node_model, build_rack, build_site

        call_command("migrate", verbosity=0)
        admin = User.objects.create_superuser("bench", "bench@example.org", "bench")
        n = args.rows
        sites = "name,location,power_capacity_kw,cooling_capacity_kw\n" + "".join(
            f"bench-site-{i},Hall {i},2000,2200\n" for i in range(n))
        home = build_site(name="bench-home")
        home.save()
        model = build_node_model(name="bench-1U", height_u=1)
        model.save()
        racks = Rack.objects.bulk_create([build_rack(home, name=f"R{r:03}", height_u=42) for r in range(n // 40 + 1)])
        nodes = "hostname,site,rack,position,node_model,state\n" + "".join(
            f"bench-node-{i},bench-home,{racks[i // 40].name},{i % 40 + 1},bench-1U,in_service\n" for i in range(n))

        def timed(action, undo):
            seconds = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                outcome = action()
                seconds.append(time.perf_counter() - start)
                undo()
            return statistics.median(seconds), outcome

        def clear_sites():
            Site.history.model.objects.filter(name__startswith="bench-site-").delete()
            Site.objects.filter(name__startswith="bench-site-").delete()

        def clear_nodes():
            Node.history.model.objects.all().delete()
            Node.objects.all().delete()

        def importing(text, form_class, match_on, commit, batch_rows=None):
            def action():
                result = run_import(text, form_class, match_on, commit=commit, user=admin, batch_rows=batch_rows)
                assert not result.errors, result.errors[:5]
                assert result.committed == commit
                return result
            return action

        def baseline(make):
            return lambda: make()

        batch = settings.IMPORT_BATCH_ROWS
        results = []
        for label, text, form_class, match_on, clear, bare in [
            ("sites", sites, SiteImportForm, {"name": "name"}, clear_sites,
             lambda: Site.objects.bulk_create([build_site(name=f"bench-site-{i}") for i in range(n)])),
            ("nodes", nodes, NodeImportForm, {"hostname": "hostname"}, clear_nodes,
             lambda: Node.objects.bulk_create([
                 Node(hostname=f"bench-node-{i}", site=home, rack=racks[i // 40], position=i % 40 + 1,
                      node_model=model, state="in_service") for i in range(n)])),
        ]:
            base, _ = timed(baseline(bare), clear)
            results.append((label, "bulk_create (baseline)", base, base))
            for how, commit, batch_rows in [("preview", False, None), ("import, one transaction", True, None),
                                            (f"import, batches of {batch}", True, batch)]:
                seconds, _ = timed(importing(text, form_class, match_on, commit, batch_rows), clear)
                print(label, how, f"{seconds:.2f}", flush=True)
                results.append((label, how, seconds, base))

    print(f"{n:,} rows, median of {args.repeat}")
    print(f"{'rows':6} {'how':28} {'seconds':>8} {'rows/s':>8} {'x baseline time':>16}")
    for label, how, seconds, base in results:
        print(f"{label:6} {how:28} {seconds:>8.2f} {n / seconds:>8,.0f} {seconds / base:>16.1f}")


if __name__ == "__main__":
    main()
