"""Server time and query count of the list pages and API lists as the fleet grows.

    .venv/bin/python bench/list_pages.py [--sizes 50,500,5000] [--repeat 5]

Starts a throwaway PostgreSQL (as the tests do), fills it with ``tests.factories.bulk_make`` and times
each page with Django's test client (median of ``--repeat`` requests, after one warm-up). Figures are
reported as ratios against the smallest size measured in the same run, so they compare across machines.
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

PAGES = ["/inventory/nodes/", "/inventory/gpus/", "/api/inventory/nodes/", "/api/inventory/gpus/"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50,500,5000")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

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
