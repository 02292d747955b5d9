"""Slurm accounting: read job records from ``sacct --json`` output or slurmrestd's jobs endpoints.

A Slurm source's URL serves one of:

- slurmrestd ``/slurmdb/v0.0.3x|4x/jobs`` (accounting; the same document ``sacct --json`` prints), or
- slurmrestd ``/slurm/v0.0.3x|4x/jobs`` (the controller's live queue), or
- any URL serving saved ``sacct --json`` output.

Prefer the slurmdb endpoint: the controller's /slurm/ endpoint forgets a job minutes after it ends
(``MinJobAge``), so a job that ended between two pulls keeps its last state (running) there.

All of them have a top-level ``"jobs"`` list, but the shape of a job changed between Slurm releases, and
the parser reads every shape rather than one:

- state: ``state.current`` a string (22.05, 23.02: ``"COMPLETED"``) or a list of a base state and flags
  (v0.0.40+: ``["RUNNING", "COMPLETING"]``), or ``job_state`` (the /slurm/ endpoint; string or list);
- numbers: plain integers, where 0 means unset and 4294967294/5 are Slurm's NO_VAL/INFINITE, or
  ``{"set": true, "infinite": false, "number": N}`` objects (v0.0.39+);
- times: ``time.submission/start/end`` (accounting) or ``submit_time/start_time/end_time`` (/slurm/, where a
  pending job's start and a running job's end are *forecasts*, so they are dropped);
- GPUs: ``tres.allocated`` entries ``{"type": "gres", "name": "gpu" | "gpu:h100"}`` (or ``"gres/gpu"``
  spelled out), or a ``tres_alloc_str`` like ``cpu=64,mem=1T,node=2,gres/gpu=16``. When a site tracks both the
  untyped and the typed GPU TRES, a job lists both (``gres/gpu=8,gres/gpu:h100=8``): the untyped one is the
  total, and the typed ones are summed only when it is missing, so a GPU is never counted twice;
- nodes: a Slurm host list (``gpu-[001-004,007]``), counted from ``allocation_nodes``/``node_count`` where the
  job says, else by expanding the list;
- array and heterogeneous jobs: one record per task/component, keyed like Slurm prints them (``123_4``,
  ``200+1``). The one record that stands for an array's tasks still pending together (``123_[5-9%2]``) is
  left out: its id changes each time a task starts, so storing it would leave a stale pending row per pull;
  each task is stored once it starts, with the array's submit time, so its queue wait is still counted.

Time a job is counted for, so that the same answer gives the same totals whenever it is read:

- a job still running counts up to the moment of the answer, never up to the portal's clock: its start +
  ``time.elapsed`` (sacct and slurmdb compute it when they answer), else the answer's own ``last_update``
  (the /slurm/ endpoint), else the time of the pull (said on the source's page). A saved ``sacct --json``
  read a day later adds nothing; a live source moves the job on at the next pull;
- a job in a terminal state without an end (Slurm writes ``end: 0`` for some NODE_FAIL, REQUEUED and
  CANCELLED jobs) ends at start + elapsed; where the answer gives no elapsed time it ends at its start
  (0 GPU-hours). Both are counted on the source's data-quality panel, with the jobs' ids.

Requeued jobs: each run is a record, keyed by (job id, submit time): Slurm resets the submit time at a
requeue, and ``sacct --duplicates`` lists every run with its own state (REQUEUED, NODE_FAIL…) and ``restart_cnt``
(kept as ``restarts`` when the answer has it). Without ``--duplicates`` only the latest run is listed; the pull
closes the earlier runs it stored (``pull.close_requeued_runs``).

A job that cannot be read is skipped with a warning; the rest of the pull goes on. A document that is not
JSON or has no ``"jobs"`` list is a ``SourceError``.
"""

import json
import logging
import re
from datetime import UTC, datetime, timedelta

import requests

from portal import http

from .records import Collected, JobRecord, Quality, SourceError, finite

log = logging.getLogger(__name__)

# Slurm's NO_VAL (0xfffffffe) and INFINITE (0xffffffff), and their 64-bit forms, in plain-integer output.
NO_VAL = 0xFFFFFFFE

BASE_STATES = {
    "PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
    "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY",
}
NOT_STARTED = {"PENDING"}
STILL_RUNNING = {"RUNNING", "SUSPENDED", "CONFIGURING", "COMPLETING", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED"}
NO_NODES = {"", "None assigned", "(null)"}
MAX_HOSTS = 100_000
MAX_GPUS = 1_000_000  # per job: more is a corrupt record
MAX_WARNINGS = 20  # skipped jobs named one by one in the source's log; the rest are counted

# SlurmJob's column widths (tests check they match): longer values are cut, not refused by the database.
FIELD_LIMITS = {"job_id": 50, "cluster": 100, "name": 200, "user": 100, "account": 100, "partition": 100, "reason": 100,
                "state": 40}


def parse_jobs(document, warnings=None, quality=None):
    """``sacct --json`` / slurmrestd jobs document (str, bytes or already-decoded dict) → ``JobRecord`` list.

    Jobs that cannot be read are skipped, each with a line appended to ``warnings`` (when given); errors the
    document itself reports (slurmrestd's ``"errors"``) are appended there too. Jobs whose times had to be
    inferred are counted in ``quality`` (a ``records.Quality``, when given).
    """
    warnings = [] if warnings is None else warnings
    quality = Quality() if quality is None else quality
    if isinstance(document, str | bytes | bytearray):
        try:
            document = json.loads(document)
        except ValueError:
            raise SourceError("Slurm answer is not JSON") from None
    if not isinstance(document, dict) or not isinstance(document.get("jobs"), list):
        reports_errors = " (it reports errors)" if describe_errors(document) else ""
        raise SourceError(f"Slurm answer has no \"jobs\" list{reports_errors}")
    reported = describe_errors(document)
    if reported:
        warnings.append(f"Slurm reported: {reported}")
    records, skipped = {}, []
    try:
        answered_at = timestamp(document.get("last_update"))
    except (TypeError, ValueError, OverflowError) as error:
        warnings.append(f"the answer's last_update is not a time ({error}): running jobs count up to the pull")
        answered_at = None
    for position, job in enumerate(document["jobs"]):
        try:
            record = parse_job(job, answered_at, quality)
        except (TypeError, ValueError, OverflowError, AttributeError) as error:
            job_id = job.get("job_id") if isinstance(job, dict) else None
            skipped.append(f"skipped Slurm job #{position} (job_id {job_id!r}): {error}")
            continue
        if record is None:
            continue
        # A requeued job is listed once per run by ``sacct --duplicates``, each run with its own submit time (Slurm
        # resets it at the requeue): every run is kept, one record per (job id, submit time).
        records[(record.job_id, record.submit_time)] = record
    warnings.extend(skipped[:MAX_WARNINGS])
    if len(skipped) > MAX_WARNINGS:
        warnings.append(f"skipped {len(skipped) - MAX_WARNINGS} more Slurm jobs that could not be read")
    return list(records.values())


def describe_errors(document):
    """slurmrestd's ``"errors": [{"error": …, "description": …}]`` as one line ('' when none)."""
    errors = document.get("errors") if isinstance(document, dict) else None
    if not isinstance(errors, list):
        return ""
    texts = []
    for error in errors:
        if isinstance(error, dict):
            texts.append(str(error.get("description") or error.get("error") or error.get("error_number") or error))
        else:
            texts.append(str(error))
    return "; ".join(text for text in texts if text)


def parse_job(job, answered_at=None, quality=None):
    """One job of any shape → ``JobRecord`` (None for an array's pending tasks); ``ValueError`` when it lacks
    what a record needs. ``answered_at``: the answer's own time, if it says it (a running job without elapsed
    time counts up to it); ``quality``: where inferred end times are counted."""
    if not isinstance(job, dict):
        raise ValueError(f"a job is an object, not {type(job).__name__}")
    key = job_key(job)
    if key is None:
        return None
    state = job_state(job)
    times = job.get("time") if isinstance(job.get("time"), dict) else {}
    submit = timestamp(times.get("submission", job.get("submit_time")))
    if submit is None:
        raise ValueError("no submit time")
    started = state not in NOT_STARTED
    start = timestamp(times.get("start", job.get("start_time"))) if started else None
    running = state in STILL_RUNNING
    end = timestamp(times.get("end", job.get("end_time"))) if started and not running else None
    elapsed = number(times.get("elapsed"))
    ran = timedelta(seconds=elapsed) if elapsed else None
    running_until = None
    if start and running:
        running_until = start + ran if ran else answered_at
    elif start and end is None:  # ended (NODE_FAIL, REQUEUED, CANCELLED…) but Slurm wrote no end
        quality = Quality() if quality is None else quality
        if ran:
            end = start + ran
            quality.add("job_end_inferred", f"{key} {state}: ended at start + elapsed ({elapsed} s)")
        else:
            end = start
            quality.add("job_skipped", f"{key} {state}: no end and no elapsed time")
    association = job.get("association") or {}
    nodes = text(job.get("nodes"))
    nodes = "" if nodes in NO_NODES else nodes
    return JobRecord(
        job_id=cut("job_id", key),
        submit_time=submit,
        start_time=start,
        end_time=end,
        cluster=cut("cluster", text(job.get("cluster") or association.get("cluster"))),
        name=cut("name", text(job.get("name"))),
        user=cut("user", text(job.get("user") or job.get("user_name") or association.get("user"))),
        account=cut("account", text(job.get("account") or association.get("account"))),
        partition=cut("partition", text(job.get("partition"))),
        state=cut("state", state),
        nodes=nodes,
        node_count=bounded(number(job.get("allocation_nodes")) or number(job.get("node_count"))
                           or len(expand_hostlist(nodes)), MAX_HOSTS, "node count"),
        gpus=bounded(gpu_count(job, started), MAX_GPUS, "GPU count"),
        running_until=running_until,
        restarts=restart_count(job),
        reason=cut("reason", state_reason(job)),
    )


def state_reason(job):
    """Slurm's reason for the job's state: ``state.reason`` (sacct --json, slurmdbd), ``state_reason`` (slurmctld's
    /slurm/ jobs); "None" (Slurm's word for none) read as ''."""
    value = job.get("state")
    reason = value.get("reason") if isinstance(value, dict) else None
    reason = text(reason if reason is not None else job.get("state_reason"))
    return "" if reason in ("None", "none") else reason


def restart_count(job):
    """``restart_cnt`` (a plain integer, or a number object in newer answers); None when the answer lacks it."""
    if "restart_cnt" not in job:
        return None
    count = number(job["restart_cnt"])
    if count is not None and count < 0:
        raise ValueError(f"restart count {count} is negative")
    return None if count is None else bounded(count, MAX_HOSTS, "restart count")


def job_state(job):
    """The base state: from ``state.current`` or ``job_state``, a string or a list of a state and flags."""
    value = job.get("state")
    if isinstance(value, dict):
        value = value.get("current")
    if value is None:
        value = job.get("job_state")
    states = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    # "CANCELLED by 1234" in some outputs; keep the word.
    states = [item.split()[0].upper() for item in states if isinstance(item, str) and item.strip()]
    if not states:
        raise ValueError("no job state")
    return next((item for item in states if item in BASE_STATES), states[0])


def job_key(job):
    """The job's id as Slurm prints it: ``123``, array task ``123_4``, het component ``200+1``; None for the
    record of an array's tasks still pending together (``123_[5-9]``)."""
    array = job.get("array") if isinstance(job.get("array"), dict) else {}
    het = job.get("het") if isinstance(job.get("het"), dict) else {}
    array_job = number(array.get("job_id", job.get("array_job_id")))
    task = number(array.get("task_id", job.get("array_task_id")))
    tasks = text(array.get("task", job.get("array_task_string")))
    het_job = number(het.get("job_id", job.get("het_job_id")))
    offset = number(het.get("job_offset", job.get("het_job_offset")))
    if array_job and task is not None:
        return f"{array_job}_{task}"
    if array_job and tasks:
        return None
    if het_job and offset is not None:
        return f"{het_job}+{offset}"
    job_id = number(job.get("job_id"))
    if not job_id:
        raise ValueError("no job_id")
    return str(job_id)


def gpu_count(job, started=True):
    """Allocated GPUs from ``tres.allocated`` or ``tres_alloc_str``; for a job that has not started, the GPUs
    it asks for (``tres.requested`` / ``tres_req_str``), which is what it waits for."""
    tres = job.get("tres") if isinstance(job.get("tres"), dict) else {}
    allocated = gpus_in(tres.get("allocated"), job.get("tres_alloc_str"))
    if allocated is None and not started:
        allocated = gpus_in(tres.get("requested"), job.get("tres_req_str"))
    return allocated or 0


def gpus_in(tres_list, tres_string):
    """GPUs in one TRES list (``[{type, name, count}]``) or string (``gres/gpu=8,...``); None when it names none."""
    if isinstance(tres_list, list) and tres_list:
        pairs = [(tres_name(item), item.get("count")) for item in tres_list if isinstance(item, dict)]
    elif isinstance(tres_string, str) and tres_string.strip():
        pairs = [item.partition("=")[::2] for item in tres_string.split(",")]
    else:
        return None
    total, typed = None, None
    for name, count in pairs:
        name = name.strip().lower()
        if name == "gres/gpu":
            total = (total or 0) + (number(count) or 0)
        elif name.startswith("gres/gpu:"):
            typed = (typed or 0) + (number(count) or 0)
    return total if total is not None else typed


def tres_name(item):
    """``{"type": "gres", "name": "gpu:h100"}`` → ``gres/gpu:h100``; also reads ``name: "gres/gpu"`` and
    ``type: "gres/gpu"``."""
    kind = text(item.get("type")).lower()
    name = text(item.get("name")).lower()
    if not name:
        return kind
    return name if name.startswith(f"{kind}/") else f"{kind}/{name}"


def number(value):
    """An integer from a plain number, a numeric string, or a ``{set, infinite, number}`` object; None when unset,
    infinite or NO_VAL. ``ValueError`` for anything else (a job that says garbage is skipped, not guessed)."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite"):
            return None
        value = value.get("number")
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError(f"not a number: {value!r}")
    if isinstance(value, float):
        if finite(value) is None:
            raise ValueError(f"not a number: {value!r}")
        value = int(value)
    elif not isinstance(value, int):
        value = int(str(value).strip())
    return None if value >= NO_VAL else value


LATEST_TIME = 253402300799  # 9999-12-31 23:59:59 UTC, the last moment a datetime can hold


def bounded(value, limit, what):
    """``value`` if it is at most ``limit``; ``ValueError`` otherwise (a job claiming 4 billion GPUs is skipped,
    not stored)."""
    if value > limit:
        raise ValueError(f"{what} {value} is more than {limit:,}")
    return value


def timestamp(value):
    """Epoch seconds (any ``number`` shape) → aware UTC datetime; 0, unset or infinite → None.
    ``ValueError`` past the year 9999 (a job that says so is skipped, not a crash of the pull)."""
    seconds = number(value)
    if seconds and seconds > LATEST_TIME:
        raise ValueError(f"time {seconds} is past the year 9999")
    return datetime.fromtimestamp(seconds, tz=UTC) if seconds and seconds > 0 else None


def text(value):
    return "" if value is None else str(value).strip()


def cut(field, value):
    return value[:FIELD_LIMITS[field]]


def expand_hostlist(hostlist):
    """A Slurm host list → host names, in order.

    ``gpu-[001-003,010]`` → gpu-001 gpu-002 gpu-003 gpu-010 (zero padding kept); ``a[1-2]b`` → a1b a2b;
    ``n1,n2`` → n1 n2; ``r[1-2]n[1-2]`` → r1n1 r1n2 r2n1 r2n2. ``ValueError`` for unbalanced brackets, bad
    ranges, or more than ``MAX_HOSTS`` names.
    """
    hosts = []
    for item in split_hostlist(hostlist or ""):
        hosts.extend(expand_host(item))
        if len(hosts) > MAX_HOSTS:
            raise ValueError(f"host list longer than {MAX_HOSTS}")
    return hosts


def split_hostlist(hostlist):
    """Split on the commas outside brackets: ``a[1,3],b`` → ``a[1,3]``, ``b``."""
    items, current, depth = [], [], 0
    for char in hostlist:
        depth += {"[": 1, "]": -1}.get(char, 0)
        if depth not in (0, 1):
            raise ValueError(f"unbalanced brackets in host list {hostlist!r}")
        if char == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth:
        raise ValueError(f"unbalanced brackets in host list {hostlist!r}")
    items.append("".join(current))
    return [item.strip() for item in items if item.strip()]


def expand_host(item):
    """One host pattern (no top-level commas), brackets expanded left to right."""
    match = re.fullmatch(r"([^\[\]]*)\[([^\[\]]*)\](.*)", item)
    if not match:
        if "[" in item or "]" in item:
            raise ValueError(f"bad host pattern {item!r}")
        return [item]
    prefix, ranges, rest = match.groups()
    tails = expand_host(rest)
    numbers = list(range_numbers(ranges))
    if len(numbers) * len(tails) > MAX_HOSTS:
        raise ValueError(f"host list longer than {MAX_HOSTS}")
    return [f"{prefix}{value}{tail}" for value in numbers for tail in tails]


def range_numbers(ranges):
    """``001-003,010`` → 001 002 003 010 (the width of a range's first number is kept)."""
    for part in ranges.split(","):
        match = re.fullmatch(r"\s*([0-9]+)(?:-([0-9]+))?\s*", part)
        if not match:
            raise ValueError(f"bad range {part!r} in host list")
        low, high = match.groups()
        if high is None:
            yield low
            continue
        if int(high) < int(low) or int(high) - int(low) > MAX_HOSTS:
            raise ValueError(f"bad range {part!r} in host list")
        for value in range(int(low), int(high) + 1):
            yield str(value).zfill(len(low))


def collect(source, start, end):
    """Pull jobs from ``source.url`` for the window [start, end] → ``Collected``.

    slurmrestd's slurmdb endpoint selects jobs by ``start_time``/``end_time``, sent as ``uts<epoch seconds>``
    (``slurm_time``); a URL serving saved ``sacct --json`` output ignores them. With JWT auth slurmrestd wants the
    token's user name beside the token (``X-SLURM-USER-NAME``; token only: HTTP 401). ``SourceError`` when the
    source cannot be reached, is slower than ``source.timeout_seconds``, answers an HTTP error, or answers
    something that is not a jobs document.
    """
    params = {"start_time": slurm_time(start), "end_time": slurm_time(end)}
    headers = {"Accept": "application/json"}
    if source.auth_token:
        headers["X-SLURM-USER-TOKEN"] = source.auth_token
    if getattr(source, "user_name", ""):
        headers["X-SLURM-USER-NAME"] = source.user_name
    try:
        response = http.fetch("GET", source.url, params=params, headers=headers, timeout=source.timeout_seconds)
    except requests.RequestException as error:
        raise SourceError(f"Slurm source: {http.describe(error, source.timeout_seconds)}") from None
    if response.status_code >= 400:
        log_error_answer(source, response)
        raise SourceError(f"Slurm source: {http.status_error(response.status_code)}")
    collected = Collected()
    collected.jobs = parse_jobs(response.content, collected.warnings, collected.quality)
    collected.synced_until = resume_from(collected.jobs, start, end)
    return collected


def slurm_time(moment):
    """A time as slurmrestd's slurmdb ``start_time``/``end_time`` take it: ``uts1733000000``.

    v0.0.38 (22.05) and v0.0.39 (23.02) read these with Slurm's ``parse_time()`` and refuse a bare number (HTTP
    500 "Invalid time specification"); v0.0.40+ read a number or, for a string, ``parse_time()`` again.
    ``parse_time()`` takes ``uts<seconds>`` in every release since 22.05, and unlike ``2026-12-01T00:00:00`` it
    does not depend on slurmrestd's time zone."""
    return f"uts{int(moment.timestamp())}"


def log_error_answer(source, response):
    """slurmrestd's ``errors`` of an HTTP error answer, for the worker's log only: the stored and shown error is
    the portal's own words (the answer could hold anything, e.g. a metadata service's keys)."""
    try:
        reported = describe_errors(response.json())
    except ValueError:
        reported = ""
    log.info("Slurm source %s answered HTTP %s: %r", source.name, response.status_code, reported[:300])


def resume_from(jobs, start, end):
    """Where the next pull's window should start.

    A job's record changes until it ends (pending → running → completed), and the next pull only re-reads
    jobs inside its window. So the window may only move past a job once it has ended: the next pull starts at
    the earliest submit time of a job still pending or running in this answer, or at ``end`` when all ended.
    It never moves back before ``start``: a source that returned an open job submitted before ``start``
    selects jobs by activity in the window (as slurmdb and ``sacct -S`` do), or ignores the window, so
    asking from ``start`` again returns that job again.
    """
    open_submits = [job.submit_time for job in jobs if job.end_time is None]
    return max(start, min([end, *open_submits]))
