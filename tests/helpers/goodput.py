"""A small fleet of Slurm jobs with interruptions whose goodput figures are worked out by hand (tests of
``inventory.goodput``; the next wave's dashboard and page tests can reuse it)."""

from datetime import timedelta

from inventory.models import GPU, Node, SlurmJob, SlurmJobNode, StateTransition, TelemetrySource, XidEvent
from inventory.telemetry.rollups import floor_hour
from tests.factories import make_gpu, make_gpu_model, make_node, make_node_model, make_site

H = timedelta(hours=1)
MIN = timedelta(minutes=1)


def add_job(source, job_id, node, gpus, submit, start, end, state, account="vision", partition="train"):
    """A job on ``node`` (None: no per-node row), times as datetimes (``end`` None: still running)."""
    job = SlurmJob.objects.create(source=source, job_id=job_id, account=account, partition=partition, state=state,
                                  gpus=gpus, node_count=1, submit_time=submit, start_time=start, end_time=end,
                                  running_until=None)
    if node is not None:
        SlurmJobNode.objects.create(job=job, host=node.hostname, node=node, gpus=gpus)
    return job


def xid(gpu, ts, code, kind="hardware"):
    return XidEvent.objects.create(gpu=gpu, ts=ts, hour=floor_hour(ts), code=code, kind=kind)


def make_goodput_fleet(now):
    """Sites alpha (nodes n1, n2: 8 GPUs of model M1 each) and beta (n3: 8 GPUs of M2). ``h`` is this hour (now is
    h + 30 min, so the 24h range starts at h − 23 h). Times in hours from h:

    ===  ======  =========  ====  ====  ===========================  ==========  ===================================
    job  team    partition  node  GPUs  submit → start → end          state       what happened
    ===  ======  =========  ====  ====  ===========================  ==========  ===================================
    J1   vision  train      n1    8     −11 → −10.5 → −6              NODE_FAIL   infrastructure (node_fail, on n1)
    J2   vision  train      n2    8     −8.25 → −8.25 → −4            FAILED      XID 79 on n2/gpu0 at −4 h 2 min
    J3   speech  infer      n3    4     −4 → −4 → −3                  OOM         the user's
    J4   speech  infer      n3    4     −3 → −3 → −2                  FAILED      the user's: an application XID 31
                                                                                  1 min before, no hardware fault
    J5   vision  train      n1    8     −6 → −5 → −1                  COMPLETED   J1's team's next job (waited 1 h)
    J6   vision  train      n2    8     −3.5 → −3 → running           RUNNING     J2's team's next job (1 h after)
    ===  ======  =========  ====  ====  ===========================  ==========  ===================================

    By hand, over the 24h range, checkpoints every 60 min, restart wait cap 24 h:

    - allocated GPU-hours: vision 8 × (4.5 + 4.25 + 4 + 3.5) = 130; speech 4 × (1 + 1) = 8;
    - J1: run 4.5 h, mod 1 h = 0.5 h lost × 8 = 4 GPU-h, + 1 h wait × 8 = 8 → 12 GPU-hours lost;
      J2: run 4.25 h → 0.25 h × 8 = 2, + 1 h × 8 = 8 → 10; vision loses 22, of which 6 of its allocation;
    - vision: goodput (130 − 6) / 130 = 0.9538; 2 interruptions per 130 / 24 GPU-days = 369.23 per 1,000;
      MTBI for 8 GPUs 130 / 2 / 8 = 8.125 h; a 24 h job's expected restarts 24 / 8.125 = 2.9538;
      queue wait 8 × (0.5 + 0 + 1 + 0.5) = 16 GPU-h against 130 run: share 16 / 146 = 0.1096;
    - speech: no infrastructure interruption (2 of the user's), goodput 1.0, queue wait share 0.
    """
    h = floor_hour(now)
    alpha, beta = make_site(name="alpha"), make_site(name="beta")
    m1, m2 = make_gpu_model(name="M1"), make_gpu_model(name="M2")
    node_model = make_node_model()
    nodes = {}
    for name, site, model in (("n1", alpha, m1), ("n2", alpha, m1), ("n3", beta, m2)):
        nodes[name] = make_node(site=site, node_model=node_model, hostname=name, state="in_service")
        for _ in range(8):
            make_gpu(node=nodes[name], gpu_model=model)
    source = TelemetrySource.objects.create(name="slurm", kind="slurm", url="http://slurm/slurmdb/v0.0.40/jobs")
    n1, n2, n3 = nodes["n1"], nodes["n2"], nodes["n3"]

    def at(hours):
        return h + hours * H

    jobs = {
        "J1": add_job(source, "1", n1, 8, at(-11), at(-10.5), at(-6), "NODE_FAIL"),
        "J2": add_job(source, "2", n2, 8, at(-8.25), at(-8.25), at(-4), "FAILED"),
        "J3": add_job(source, "3", n3, 4, at(-4), at(-4), at(-3), "OUT_OF_MEMORY", "speech", "infer"),
        "J4": add_job(source, "4", n3, 4, at(-3), at(-3), at(-2), "FAILED", "speech", "infer"),
        "J5": add_job(source, "5", n1, 8, at(-6), at(-5), at(-1), "COMPLETED"),
        "J6": add_job(source, "6", n2, 8, at(-3.5), at(-3), None, "RUNNING"),
    }
    n2_gpu0 = GPU.objects.get(node=n2, slot=0)
    events = {
        "xid79": xid(n2_gpu0, at(-4) - 2 * MIN, 79),
        "app31": xid(GPU.objects.get(node=n3, slot=0), at(-2) - MIN, 31, kind="application"),
    }
    return {"h": h, "now": now, "source": source, "sites": (alpha, beta), "models": (m1, m2), "nodes": nodes,
            "jobs": jobs, "events": events}


def degrade(obj, ts):
    """A lifecycle move of a node or GPU to degraded at ``ts`` (as support's fault tickets record it)."""
    from django.contrib.contenttypes.models import ContentType

    return StateTransition.objects.create(content_type=ContentType.objects.get_for_model(obj), object_id=obj.pk,
                                          from_state="in_service", to_state="degraded", created=ts)


def make_varied_fleet(now, seed=0, nodes=12, jobs=80, days=45):
    """A random fleet for checking figures against a recomputation and for timing (bulk inserts): 3 sites, 3 GPU
    models, ``nodes`` nodes of 8 GPUs (the first mixing two models, the last with none), ``jobs`` Slurm jobs over the
    last ``days`` days on 0–3 nodes each (unknown hosts and 0-GPU shares among them; those still running seen
    running now, as a pull writes them), and 40 % of the others interrupted (every cause; two interruptions for some
    runs; no node, no estimate, 0 GPUs now and then). Returns ``{node id: cost per GPU-hour}`` for half the nodes, a
    cost provider's answer."""
    import random

    from inventory.goodput.models import Interruption
    from tests.factories import build_gpu, build_node

    rng = random.Random(seed)
    sites = [make_site(name=f"site-{seed}-{i}") for i in range(3)]
    models = [make_gpu_model(name=f"model-{seed}-{i}") for i in range(3)]
    node_model = make_node_model()
    fleet = Node.objects.bulk_create(build_node(sites[i % 3], node_model, hostname=f"v{seed}-{i:05d}")
                                     for i in range(nodes))
    GPU.objects.bulk_create(build_gpu(models[(i + (slot < 4 and i == 0)) % 3], node=node, slot=slot)
                            for i, node in enumerate(fleet[:-1]) for slot in range(8))
    source = TelemetrySource.objects.create(name=f"slurm-{seed}", kind="slurm", url="http://slurm/jobs")
    teams, partitions = ["vision", "speech", "bio", ""], ["train", "infer", "debug"]
    runs, shares = [], {}
    for number in range(jobs):
        gpus = rng.choice([0, 1, 4, 8, 8, 16, 24])
        start = now - rng.uniform(0, days) * 24 * H
        end = start + rng.uniform(0.1, 80) * H
        runs.append(SlurmJob(source=source, job_id=str(number), account=rng.choice(teams),
                             partition=rng.choice(partitions), state="FAILED", gpus=gpus, node_count=1,
                             submit_time=start - rng.uniform(0, 5) * H, start_time=start,
                             end_time=None if end > now else end, running_until=now if end > now else None))
        shares[number] = [(node, rng.choice([gpus, gpus // 2, 0]))
                          for node in rng.sample([*fleet, None, None], rng.choice([0, 1, 1, 2, 3]))]
    runs = SlurmJob.objects.bulk_create(runs)
    SlurmJobNode.objects.bulk_create(
        SlurmJobNode(job=run, host=node.hostname if node else f"unknown-{run.pk}-{i}", node=node, gpus=gpus)
        for run in runs for i, (node, gpus) in enumerate(shares[int(run.job_id)]))
    rows = []
    for run in runs:
        if run.end_time is None or rng.random() < 0.6:
            continue
        for ended in {run.end_time, *([run.end_time - rng.uniform(1, 30) * H] if rng.random() < 0.15 else [])}:
            cause = rng.choice(["infrastructure", "infrastructure", "user", "scheduler"])
            infra = cause == "infrastructure"
            gpus = run.gpus if rng.random() < 0.9 else 0
            hours = (ended - run.start_time).total_seconds() / 3600
            lost_run = rng.choice([None, 0.0, rng.uniform(0, max(gpus, 1) * hours)]) if infra else None
            lost_wait = rng.choice([None, rng.uniform(0, 8 * max(gpus, 1))]) if infra else None
            rows.append(Interruption(
                job=run, state="NODE_FAIL", started_at=run.start_time, ended_at=ended, gpus=gpus,
                account=run.account, partition=run.partition, cause=cause, reason="node_fail",
                node=rng.choice([*fleet, None]), lost_run_gpu_hours=lost_run, lost_wait_gpu_hours=lost_wait,
                lost_gpu_hours=(lost_run or 0.0) + (lost_wait or 0.0) if infra else None))
    Interruption.objects.bulk_create(rows)
    return {node.pk: rng.choice([1.5, 2.25, 3.0]) for node in fleet[::2]}
