"""The demo fleet's Slurm as the simulator tells it (``simulator``): the jobs running on its nodes, written as
``sacct --json`` writes them (``jobs``), the XID faults that end them (``job_faults``), and Slurm's host lists.
Pure functions of (nodes, time), like the rest of the simulator; ``simulator`` re-exports them."""

from collections import defaultdict
from datetime import UTC, datetime

from . import simulator
from .simulator import HOUR, JOB_NAMES, USERS, block_of, node_index, slot_jobs, unit


def hostlist(hostnames):
    """Host names → a Slurm host list: zrh-h100-001, -002, -003, -005 → 'zrh-h100-[001-003,005]'."""
    groups = defaultdict(list)
    singles = []
    for hostname in hostnames:
        prefix, index, digits = node_index(hostname)
        if digits:
            groups[(prefix, digits)].append(index + 1)
        else:
            singles.append(hostname)
    parts = []
    for (prefix, digits), numbers in groups.items():
        numbers = sorted(set(numbers))
        if len(numbers) == 1:
            parts.append(f"{prefix}{numbers[0]:0{digits}d}")
            continue
        runs, low = [], numbers[0]
        for previous, current in zip(numbers, numbers[1:] + [None], strict=True):
            if current != previous + 1:
                runs.append(f"{low:0{digits}d}" if low == previous else f"{low:0{digits}d}-{previous:0{digits}d}")
                low = current
        parts.append(f"{prefix}[{','.join(runs)}]")
    return ",".join(parts + singles)


def active_jobs(nodes, first, now):
    """``(Job, the nodes it runs on)`` for the jobs of ``nodes`` submitted by ``now`` (unix seconds) and running
    after ``first``."""
    blocks = defaultdict(dict)  # block → position → node
    for node in nodes:
        if node.state == "in_service" and node.hostname not in simulator.IDLE_NODES:  # read now: tests patch it
            block = block_of(node)
            blocks[block][block.position(node.hostname)] = node
    for block, members in blocks.items():
        length = block.scenario.slot_hours * HOUR
        t = block.slot_start(first - length)
        while t <= now + block.scenario.wait_minutes[1] * 60 + length:  # far enough for jobs already queued
            for job in slot_jobs(block, t):
                running_on = [members[p] for p in job.positions if p in members]
                if running_on and job.submit <= now and job.end > first:
                    yield job, running_on
            t += length


def job_faults(nodes, start, end):
    """The XID events of the hardware faults that ended jobs of ``nodes`` in [start, end): ``(hostname, GPU slot,
    when, code)``, as an exporter scraping every few seconds would have read them."""
    first, now = start.timestamp(), end.timestamp()
    found = []
    for job, running_on in active_jobs(nodes, first, now):
        if job.fault and first <= job.fault[2] < now:
            position, slot, moment, code = job.fault
            node = running_on[min(position, len(running_on) - 1)]
            found.append((node.hostname, slot, datetime.fromtimestamp(int(moment), UTC), code))
    return found


def jobs(nodes, start, end):
    """The Slurm jobs of ``nodes`` active in [start, end) as ``sacct --json`` (data_parser v0.0.40) prints
    them, seen at ``end``: jobs not started yet are PENDING, jobs still running are RUNNING."""
    first, now = start.timestamp(), end.timestamp()
    documents = [sacct_job(job, running_on, now) for job, running_on in active_jobs(nodes, first, now)]
    return {
        "meta": {
            "plugin": {"type": "openapi/slurmdbd", "name": "Slurm OpenAPI slurmdbd",
                       "data_parser": "data_parser/v0.0.40", "accounting_storage": "accounting_storage/slurmdbd"},
            "client": {"source": "simulate_telemetry", "user": "root", "group": "root"},
            "command": ["sacct", "--json"],
            "slurm": {"version": {"major": "23", "micro": "6", "minor": "11"}, "release": "23.11.6",
                      "cluster": nodes[0].cluster if nodes else "demo"},
        },
        "jobs": sorted(documents, key=lambda job: job["job_id"]),
        "warnings": [],
        "errors": [],
    }


def number(value):
    return {"set": value is not None, "infinite": False, "number": int(value or 0)}


def sacct_job(job, running_on, now):
    node = running_on[0]
    team = node.team or "default"
    u = unit(job.job_id, 11)
    names, users = JOB_NAMES.get(team, ("train",)), USERS.get(team, ("user",))
    name, user = names[int(u * len(names))], users[int(unit(job.job_id, 12) * len(users))]
    started, ended = job.start <= now, job.end <= now
    state = job.state if ended else "RUNNING" if started else "PENDING"
    gpus = 8 * len(running_on)
    elapsed = int(min(job.end, now) - job.start) if started else 0
    exit_code = {"COMPLETED": 0, "FAILED": 1}.get(state, 0)
    tres = [
        {"type": "cpu", "name": "", "id": 1, "count": 224 * len(running_on)},
        {"type": "mem", "name": "", "id": 2, "count": 2_000_000 * len(running_on)},
        {"type": "node", "name": "", "id": 4, "count": len(running_on)},
        {"type": "billing", "name": "", "id": 5, "count": 224 * len(running_on)},
        {"type": "gres", "name": "gpu", "id": 1001, "count": gpus},
    ]
    return {
        "account": team, "allocation_nodes": len(running_on) if started else 0,
        "association": {"account": team, "cluster": node.cluster, "partition": node.partition, "user": user},
        "cluster": node.cluster, "constraints": "", "derived_exit_code": number(0),
        "exit_code": {"status": ["SUCCESS" if exit_code == 0 else "ERROR"], "return_code": number(exit_code)},
        "group": team, "job_id": job.job_id, "name": name,
        "nodes": hostlist(n.hostname for n in running_on) if started else "None assigned",
        "partition": node.partition, "priority": number(10_000), "qos": "normal",
        "state": {"current": [state], "reason": "Priority" if state == "PENDING" else "None"},
        "time": {
            "elapsed": elapsed, "eligible": int(job.submit),
            "submission": number(job.submit), "start": number(job.start if started else None),
            "end": number(job.end if ended else None),
            "limit": number((job.end - job.start) // 60 + 60), "suspended": 0,
        },
        "tres": {"allocated": tres if started else [], "requested": tres},
        "user": user, "working_directory": f"/scratch/{team}/{user}", "restart_cnt": job.restarts,
    }
