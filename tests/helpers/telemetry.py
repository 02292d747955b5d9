"""A small telemetry fleet whose figures are worked out by hand, a larger one for query counts, a frozen clock,
and the utilization dashboard's URL, htmx headers and CSV reader."""

import csv
import io
from datetime import timedelta

from django.utils import timezone

from inventory.models import GPUDaily, GPUHourly, TelemetrySource
from inventory.telemetry.rollups import floor_hour, rollup_usage
from tests.factories import make_gpu, make_gpu_model, make_node, make_node_model, make_site

H = timedelta(hours=1)
D = timedelta(days=1)
DASHBOARD = "/inventory/utilization/"
HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "dashboard"}


def freeze_now(monkeypatch):
    """Half past the current hour, frozen: the range's buckets cannot move while a test runs."""
    moment = floor_hour(timezone.now()) + timedelta(minutes=30)
    monkeypatch.setattr(timezone, "now", lambda: moment)
    return moment


def make_fleet(now):
    """Two sites. alpha: node a1 (train / vision) with two GPUs of model M1; beta: node b1 (infer / speech) with
    one GPU of model M2, and node b2 (no partition, no team) that never reports. a1 and b1 are in service, b2 just
    delivered.

    Hourly rows (this hour is ``h``): a1/gpu0 80 % at h-1 and 40 % at h-2; a1/gpu1 20 % at h-1; b1/gpu0 50 % at
    h-1 and a row without a utilization reading at h-3. Daily rows: a1/gpu0 10 hours at 30 % yesterday; a1/gpu1
    20 hours at 60 % the day before.
    """
    alpha, beta = make_site(name="alpha"), make_site(name="beta")
    m1, m2 = make_gpu_model(name="M1"), make_gpu_model(name="M2")
    node_model = make_node_model()
    a1 = make_node(site=alpha, node_model=node_model, hostname="a1", partition="train", owner_team="vision",
                   state="in_service")
    b1 = make_node(site=beta, node_model=node_model, hostname="b1", partition="infer", owner_team="speech",
                   state="in_service")
    b2 = make_node(site=beta, node_model=node_model, hostname="b2")
    a1g0, a1g1 = make_gpu(node=a1, gpu_model=m1), make_gpu(node=a1, gpu_model=m1)
    b1g0 = make_gpu(node=b1, gpu_model=m2)
    h = floor_hour(now)
    GPUHourly.objects.bulk_create([
        GPUHourly(gpu=a1g0, hour=h - H, util_mean=80, samples=60),
        GPUHourly(gpu=a1g0, hour=h - 2 * H, util_mean=40, samples=60),
        GPUHourly(gpu=a1g1, hour=h - H, util_mean=20, samples=60),
        GPUHourly(gpu=b1g0, hour=h - H, util_mean=50, samples=60),
        GPUHourly(gpu=b1g0, hour=h - 3 * H, util_mean=None, samples=0),
    ])
    today = timezone.localdate(now)
    GPUDaily.objects.bulk_create([
        GPUDaily(gpu=a1g0, day=today - D, util_mean=30, hours=10, samples=600),
        GPUDaily(gpu=a1g1, day=today - 2 * D, util_mean=60, hours=20, samples=1200),
    ])
    rollup_usage()
    source = TelemetrySource.objects.create(name="prom", kind="prometheus", url="http://prom:9090",
                                            last_success_at=now, synced_until=h)
    return {"alpha": alpha, "beta": beta, "m1": m1, "m2": m2, "a1": a1, "b1": b1, "b2": b2, "gpus": [a1g0, a1g1, b1g0],
            "source": source, "h": h}


def read_csv(response):
    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"].startswith("attachment; filename=")
    return list(csv.reader(io.StringIO(response.content.decode())))


def add_fleet(n_nodes, now, prefix):
    """``n_nodes`` nodes in service in their own sites, partitions and teams, 2 GPUs each, 30 hours and 3 days of
    rows."""
    model = make_gpu_model()
    node_model = make_node_model()
    h, today = floor_hour(now), timezone.localdate(now)
    hourly, daily = [], []
    for i in range(n_nodes):
        node = make_node(site=make_site(), node_model=node_model, partition=f"{prefix}-p{i}",
                         owner_team=f"{prefix}-t{i}", state="in_service")
        for _ in range(2):
            gpu = make_gpu(node=node, gpu_model=model)
            hourly += [GPUHourly(gpu=gpu, hour=h - k * H, util_mean=(i * 7 + k) % 100, samples=60)
                       for k in range(30)]
            daily += [GPUDaily(gpu=gpu, day=today - k * D, util_mean=50, hours=24) for k in range(3)]
    GPUHourly.objects.bulk_create(hourly)
    GPUDaily.objects.bulk_create(daily)
    rollup_usage()




def answer_prometheus(stub, answers, series, end):
    """Serve ``answers`` ({rollup field: value as Prometheus writes it}) on the stub's ``query_range`` as one
    sample of ``series`` (its labels) at ``end``, each field under the query the portal sends for it; a field
    without an answer has no series. ``/api/v1/targets`` is a 404, as on a Prometheus that does not serve it."""
    import json

    from inventory.telemetry import prometheus

    fields = {query: field for field, query in prometheus.queries().items()}

    def answer(query):
        value = answers.get(fields[query["query"][0]])
        result = [{"metric": series, "values": [[end.timestamp(), value]]}] if value else []
        return 200, "application/json", json.dumps({"status": "success",
                                                    "data": {"resultType": "matrix", "result": result}})

    stub.route("/api/v1/query_range", answer)
    stub.route("/api/v1/targets", (404, "text/plain", "404 page not found"))
