"""``manage.py simulate_telemetry``: serve the demo fleet's simulated telemetry over HTTP, as real sources do.

- ``/metrics``: the DCGM exporter page for every installed GPU in the inventory, at the current time;
- ``/slurmdb/v0.0.40/jobs``: the Slurm jobs of the last ``--hours`` hours as ``sacct --json`` (slurmrestd's
  accounting endpoint); ``?start_time=<epoch>`` moves the start of the window.

The portal pulls them through its ordinary exporter and Slurm sources (``seed_demo`` creates both), so the
demo's live data takes the same code path as a real site's. The fleet is read from the database on every
request, so a node sent to repair in the portal stops reporting. See ``inventory.telemetry.simulator``.
"""

import json
import threading
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from django.core.management.base import BaseCommand
from django.db import connections
from django.utils import timezone

from inventory.telemetry import simulator

METRICS_PATH = "/metrics"
JOBS_PATH = "/slurmdb/v0.0.40/jobs"


class Handler(BaseHTTPRequestHandler):
    server_version = "simulate_telemetry/1.0"
    fleet = staticmethod(simulator.fleet)  # replaced per server (tests serve a fixed list of GPUs)
    job_hours = 24
    verbose = False

    def do_GET(self):  # the name http.server calls
        url = urlsplit(self.path)
        try:
            if url.path == METRICS_PATH:
                self.reply(200, "text/plain; version=0.0.4; charset=utf-8",
                           simulator.metrics_text(self.fleet(), timezone.now()))
            elif url.path == JOBS_PATH:
                self.reply(200, "application/json", json.dumps(self.jobs(parse_qs(url.query))))
            elif url.path == "/":
                self.reply(200, "text/plain; charset=utf-8", f"{METRICS_PATH}\n{JOBS_PATH}?start_time=<epoch>\n")
            else:
                self.reply(404, "text/plain; charset=utf-8", "not found\n")
        except ValueError as error:
            self.reply(400, "application/json", json.dumps({"jobs": [], "errors": [{"description": str(error)}]}))
        finally:
            connections.close_all()  # each request has its own thread: close its connection, do not leak it

    def jobs(self, query):
        now = timezone.now()
        start = now - timedelta(hours=self.job_hours)
        if query.get("start_time"):
            # As slurmrestd takes it from the portal's Slurm source: ``uts<epoch seconds>`` (or a bare number).
            start = datetime.fromtimestamp(int(query["start_time"][0].removeprefix("uts")), UTC)
        return simulator.jobs(simulator.nodes_of(self.fleet()), start, now)

    def reply(self, status, content_type, body):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format, *args):  # http.server's signature
        if self.verbose:
            super().log_message(format, *args)


def make_server(host="127.0.0.1", port=9400, fleet=None, job_hours=24, verbose=False):
    """A threaded HTTP server for the simulator (port 0: any free port, see ``server.server_address``)."""
    handler = type("SimulatorHandler", (Handler,), {
        "fleet": staticmethod(fleet or simulator.fleet), "job_hours": job_hours, "verbose": verbose,
    })
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def serve_in_thread(**options):
    """Start a server in a daemon thread (tests, notebooks); returns it: ``server.shutdown()`` stops it."""
    server = make_server(**options)
    threading.Thread(target=server.serve_forever, name="simulate_telemetry", daemon=True).start()
    return server


class Command(BaseCommand):
    help = "Serve simulated DCGM exporter metrics and Slurm job records for the inventory's fleet."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=9400)
        parser.add_argument("--hours", type=int, default=24, help="Jobs window without ?start_time (hours).")

    def handle(self, *args, host, port, hours, verbosity, **options):
        self.server = make_server(host, port, job_hours=hours, verbose=verbosity > 1)  # shutdown() stops it
        base = f"http://{host}:{self.server.server_address[1]}"
        self.stdout.write(f"Simulated DCGM exporter:     {base}{METRICS_PATH}\n"
                          f"Simulated Slurm accounting:  {base}{JOBS_PATH}")
        try:
            self.server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            self.server.server_close()
