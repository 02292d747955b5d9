"""A throwaway one-machine Slurm cluster for the test run, from Debian's ``slurm-wlm``, ``slurmdbd``, ``munge``
and ``mariadb-server`` packages (22.05 on Debian 12), run as root.

In a temporary folder: MariaDB (own socket and loopback port), slurmdbd (accounting, so associations, limits and
``sacct --json`` are real), slurmctld and slurmd with one node named after ``hostname -s`` that declares 8 GPUs in
``gres.conf`` (character devices under the folder: no real GPU is needed). Every daemon and client finds the
configuration through ``SLURM_CONF``; each cluster has its own folder and ports, so two xdist workers can each run
one. munged is shared: Slurm's clients only talk to the default socket (``/run/munge/munge.socket.2``), so a
munged already listening there is reused, and one started here is stopped by the last cluster that used it.

``docs/slurm.md`` says why each line of ``slurm.conf`` is there.
"""

import fcntl
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager, suppress
from pathlib import Path

from tests.helpers.pgserver import free_port

CLUSTER = "portaltest"
GPUS = 8
DAEMONS = {"slurmctld": "slurm-wlm", "slurmd": "slurm-wlm", "slurmdbd": "slurmdbd", "munged": "munge",
           "mariadbd": "mariadb-server"}
MUNGE_DIR = Path("/run/munge")
MUNGE_SOCKET = MUNGE_DIR / "munge.socket.2"
MUNGE_PID = MUNGE_DIR / "portal-tests-munged.pid"  # only a munged started here has this file: ours to stop
DB_PASSWORD = "portal-tests"
# No durability (a throwaway) and small files: 37 MB instead of 113 MB to write at each start.
INNODB = ["--innodb-flush-log-at-trx-commit=0", "--innodb-doublewrite=0", "--innodb-buffer-pool-size=64M",
          "--innodb-log-file-size=8M"]


class SlurmError(RuntimeError):
    pass


def jwt_plugin():
    """auth/jwt (Debian's slurm-wlm-jwt-plugin, a Recommends only): slurmrestd's tokens need it in the cluster."""
    return next(iter(glob.glob("/usr/lib/*/slurm-wlm/auth_jwt.so") + glob.glob("/usr/lib*/slurm/auth_jwt.so")), None)


def slurmrestd_missing():
    """The Debian packages ``SlurmCluster.slurmrestd`` needs and this machine lacks."""
    return [package for package, there in (("slurmrestd", find("slurmrestd")), ("slurm-wlm-jwt-plugin", jwt_plugin()))
            if not there]


def missing_packages():
    """The Debian packages whose daemons are not installed (empty when the cluster can start)."""
    missing = [package for daemon, package in DAEMONS.items()
               if not find(daemon) and not (daemon == "mariadbd" and find("mysqld"))]
    return sorted(set(missing))


def find(program):
    # The daemons live in /usr/sbin, which a non-login PATH may lack.
    return shutil.which(program) or shutil.which(program, path="/usr/sbin:/sbin")


def log_tail(path, lines=30):
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no log at {path})"


class Fatal(SlurmError):
    """Raised by a readiness check when waiting longer would not help."""


def wait_for(what, check, timeout, process=None, log=None):
    """Poll ``check()`` until it is true. A client that fails (``SlurmError``) counts as not ready yet; ``SlurmError``
    with the daemon's log tail (and the client's last error) when the process died or the time ran out."""
    deadline, delay, last = time.monotonic() + timeout, 0.05, None
    while True:
        try:
            if check():
                return
        except Fatal:
            raise
        except SlurmError as error:
            last = error
        said = f"\nlast client error: {last}" if last else ""
        if process is not None and process.poll() is not None:
            raise SlurmError(f"{what}: the daemon exited with status {process.returncode}{said}\n"
                             f"log {log}:\n{log_tail(log) if log else ''}")
        if time.monotonic() > deadline:
            raise SlurmError(f"{what}: not ready after {timeout} s{said}\nlog {log}:\n{log_tail(log) if log else ''}")
        time.sleep(delay)
        delay = min(delay * 1.5, 0.5)


def port_open(port):
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def stop_pids(pids, timeout=10):
    """SIGTERM to all at once, SIGKILL to those still there after ``timeout`` seconds; one already gone is fine."""
    alive = set()
    for pid in pids:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
            alive.add(pid)
    deadline = time.monotonic() + timeout
    while alive and time.monotonic() < deadline:
        alive = {pid for pid in alive if running(pid)}
        time.sleep(0.05)
    for pid in alive:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with suppress(ChildProcessError):
            os.waitpid(pid, 0)


def running(pid):
    try:
        # Reap it when it is our child (Popen), else just look whether it is still there.
        return os.waitpid(pid, os.WNOHANG)[0] != pid
    except ChildProcessError:
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False


def read_pid(path):
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def process_name(pid):
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


# --- munged, shared by every cluster on the machine --------------------------------------------------------------

def munge_answers():
    result = subprocess.run(["munge", "-n", "-S", str(MUNGE_SOCKET)], capture_output=True)
    return result.returncode == 0


@contextmanager
def shared_munged():
    """Use the munged on the default socket, starting one when none answers. Each user holds a shared lock on
    ``users.lock`` while it runs; the last one out (it gets the exclusive lock) stops a munged started here."""
    MUNGE_DIR.mkdir(mode=0o755, exist_ok=True)
    shutil.chown(MUNGE_DIR, "munge", "munge")
    start_lock = open(MUNGE_DIR / "portal-tests-start.lock", "a")
    users = open(MUNGE_DIR / "portal-tests-users.lock", "a")  # held (shared) while this cluster runs
    try:
        fcntl.flock(start_lock, fcntl.LOCK_EX)  # one worker checks-and-starts at a time
        try:
            if not munge_answers():
                start_munged()
            fcntl.flock(users, fcntl.LOCK_SH)
        finally:
            fcntl.flock(start_lock, fcntl.LOCK_UN)
        yield
    finally:
        fcntl.flock(start_lock, fcntl.LOCK_EX)
        try:
            fcntl.flock(users, fcntl.LOCK_UN)
            try:
                fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
                last = True
            except BlockingIOError:
                last = False
            pid = read_pid(MUNGE_PID)
            if last and pid and process_name(pid) == "munged":  # not a pid reused since a crashed run
                stop_pids([pid])
                MUNGE_PID.unlink(missing_ok=True)
        finally:
            users.close()
            start_lock.close()


def start_munged():
    key = Path("/etc/munge/munge.key")  # the package makes one; else a throwaway key (munged wants 0400, munge's)
    if not key.exists():
        key = MUNGE_DIR / "portal-tests.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
        shutil.chown(key, "munge", "munge")
        key.chmod(0o400)
    log = MUNGE_DIR / "portal-tests-munged.log"
    log.touch()
    shutil.chown(log, "munge", "munge")
    log.chmod(0o640)
    # munged daemonizes and writes its pid file; a stale socket from a dead munged is replaced (--force).
    result = subprocess.run(
        [find("runuser"), "-u", "munge", "--", find("munged"), "--force", f"--key-file={key}",
         f"--socket={MUNGE_SOCKET}", f"--pid-file={MUNGE_PID}", f"--log-file={log}",
         f"--seed-file={MUNGE_DIR / 'portal-tests.seed'}"],
        capture_output=True, text=True)
    if result.returncode != 0:
        raise SlurmError(f"munged did not start: {result.stderr.strip()}\n{log_tail(log)}")
    wait_for("munged", munge_answers, 10, log=log)


# --- the cluster ---------------------------------------------------------------------------------------------------

class SlurmCluster:
    """A running cluster: ``folder``, ``env`` (with ``SLURM_CONF``), ``node`` (its one node's name), the client
    helpers below, and ``log(daemon)`` for a daemon's log file."""

    def __init__(self, folder, node):
        self.folder = Path(folder)
        self.node = node
        self.cluster = CLUSTER
        self.conf = self.folder / "etc" / "slurm.conf"
        # A test run inside a Slurm job (or with SBATCH_ACCOUNT…) must not pass that job's settings on.
        self.env = {name: value for name, value in os.environ.items()
                    if not name.startswith(("SLURM_", "SBATCH_", "SALLOC_", "SRUN_", "SQUEUE_", "SACCT_"))}
        self.env["SLURM_CONF"] = str(self.conf)
        self.env["PATH"] = f"{self.env.get('PATH', '/usr/bin:/bin')}:/usr/sbin:/sbin"
        self.jobs = self.folder / "jobs"
        self.started = []  # (name, pid file, Popen) of each daemon, for stop_all
        self.rest_url = None

    def log(self, daemon):
        return self.folder / "log" / f"{daemon}.log"

    def run(self, command, timeout=60, check=True):
        """Run a Slurm client with this cluster's ``SLURM_CONF``; its stdout, or ``SlurmError`` with its stderr."""
        command = [str(part) for part in command]
        try:
            result = subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise SlurmError(f"{' '.join(command)}: no answer after {timeout} s") from None
        if check and result.returncode != 0:
            raise SlurmError(f"{' '.join(command)} exited with {result.returncode}: "
                             f"{(result.stderr or result.stdout).strip()}")
        return result.stdout

    def sacctmgr(self, *args):
        """``sacctmgr -i ARGS`` (no confirmation prompt): its stdout."""
        return self.run(["sacctmgr", "-i", *args])

    def sbatch(self, *args, wrap=None):
        """Submit a job; its id (int). Its output goes to the cluster's folder, not the current directory."""
        command = ["sbatch", "--parsable", f"--chdir={self.jobs}", f"--output={self.jobs}/slurm-%j.out", *args]
        if wrap is not None:
            command.append(f"--wrap={wrap}")
        return int(self.run(command).strip().split(";")[0])

    def sacct_json(self, *args):
        """``sacct --json ARGS``, decoded (the document a Slurm source reads)."""
        return json.loads(self.run(["sacct", "--json", *args]))

    def squeue_field(self, job_id, field):
        """One ``squeue -o`` field (``%T`` state, ``%r`` reason…) of a job; '' when the queue no longer has it."""
        return self.run(["squeue", "-h", "-o", field, "-j", job_id], check=False).strip()

    def slurmrestd(self, user="root"):
        """Start slurmrestd on first use (JWT auth); returns its URL and the headers a request needs as ``user``.

        What 22.05 asks for: with ``SLURM_JWT=daemon`` (it passes tokens on) it refuses to run as root (here as
        nobody), and it wants ``X-SLURM-USER-NAME`` besides ``X-SLURM-USER-TOKEN``. Its /slurmdb/v0.0.38/jobs
        takes ``start_time``/``end_time`` as Slurm time strings (``2026-12-01T00:00:00``, ``now``): epoch seconds
        are an "Invalid time specification" (HTTP 500).
        """
        if slurmrestd_missing():
            raise SlurmError(f"slurmrestd needs Debian's {' and '.join(slurmrestd_missing())}")
        if self.rest_url is None:
            port = free_port()
            arguments = ["-u", "nobody", "-g", "nogroup", "-a", "rest_auth/jwt", f"127.0.0.1:{port}"]
            process, log = start_daemon(self.folder, "slurmrestd", arguments, {**self.env, "SLURM_JWT": "daemon"},
                                        self.started)
            wait_for("slurmrestd", lambda: port_open(port), 30, process, log.with_suffix(".out"))
            self.rest_url = f"http://127.0.0.1:{port}"
        token = self.run(["scontrol", "token", f"username={user}", "lifespan=3600"]).strip().partition("=")[2]
        return self.rest_url, {"X-SLURM-USER-NAME": user, "X-SLURM-USER-TOKEN": token}

    def wait_for_job(self, job_id, states=("COMPLETED",), timeout=90):
        """Wait until accounting shows the job in one of ``states``; returns the state. ``SlurmError`` when it
        ends in another terminal state or the time runs out."""
        final = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL"}
        deadline, state = time.monotonic() + timeout, ""
        while time.monotonic() < deadline:
            state = self.run(["sacct", "-n", "-X", "-P", "-o", "State", "-j", job_id], check=False).strip()
            state = state.split()[0] if state else ""
            if state in states:
                return state
            if state in final:
                raise SlurmError(f"job {job_id} ended {state}; its output:\n"
                                 f"{log_tail(self.jobs / f'slurm-{job_id}.out', 10)}\n"
                                 f"slurmctld log:\n{log_tail(self.log('slurmctld'))}")
            time.sleep(0.25)
        raise SlurmError(f"job {job_id} is {state or 'unknown'} after {timeout} s, not {'/'.join(states)}; "
                         f"slurmctld log:\n{log_tail(self.log('slurmctld'))}")


def write_configs(folder, node, ports):
    etc, gpus = folder / "etc", folder / "dev"
    # GPUs without GPUs: slurmd counts the File= entries (a count-only line registers 0 GPUs and drains the node).
    # Character devices with NVIDIA's major number; plain files also work, with a warning in slurmd's log.
    for index in range(GPUS):
        path = gpus / f"gpu{index}"
        try:
            os.mknod(path, 0o666 | 0o020000, os.makedev(195, index))
        except OSError:
            path.touch()
    (etc / "gres.conf").write_text(f"NodeName={node} Name=gpu File={gpus}/gpu[0-{GPUS - 1}]\n")
    (etc / "slurm.conf").write_text(f"""\
ClusterName={CLUSTER}
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={ports['slurmctld']}
SlurmdPort={ports['slurmd']}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool
SlurmctldPidFile={folder}/run/slurmctld.pid
SlurmdPidFile={folder}/run/slurmd.pid
SlurmctldLogFile={folder}/log/slurmctld.log
SlurmdLogFile={folder}/log/slurmd.log
MailProg=/bin/true
# No cgroups in a container: plain process tracking, no task binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
# Jobs, associations and limits live in slurmdbd: sacct, sacctmgr and the limits below need it.
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort={ports['slurmdbd']}
AccountingStorageTRES=gres/gpu
AccountingStorageEnforce=associations,limits,qos,safe
PriorityType=priority/multifactor
PriorityWeightFairshare=10000
PriorityWeightAge=1000
# Usage (GrpTRESMins, fair share) is recounted each PriorityCalcPeriod minutes (default 5).
PriorityCalcPeriod=1
# The main scheduler re-tests pending jobs every 60 s by default: a raised limit would wait that long.
SchedulerParameters=sched_interval=2,bf_interval=2
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=2
MinJobAge=300
# The node as declared here, whatever the machine reports (CPU count and layout differ between machines).
SlurmdParameters=config_overrides
NodeName={node} NodeAddr=127.0.0.1 CPUs={max(os.cpu_count() or 1, 2)} Gres=gpu:{GPUS} State=UNKNOWN
PartitionName=gpu Nodes={node} Default=YES MaxTime=INFINITE State=UP
""")
    dbd = etc / "slurmdbd.conf"
    jwt = ""
    if jwt_plugin():  # tokens for slurmrestd (scontrol token); slurmctld and slurmdbd both check them
        key = etc / "jwt_hs256.key"
        key.write_bytes(os.urandom(32))
        key.chmod(0o600)
        jwt = f"AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key={key}\n"
        with (etc / "slurm.conf").open("a") as conf:
            conf.write(jwt)
    dbd.write_text(jwt + f"""\
AuthType=auth/munge
DbdHost={node}
DbdAddr=127.0.0.1
DbdPort={ports['slurmdbd']}
SlurmUser=root
PidFile={folder}/run/slurmdbd.pid
LogFile={folder}/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={ports['mariadb']}
StorageUser=slurm
StoragePass={DB_PASSWORD}
StorageLoc=slurm_acct_db
""")
    dbd.chmod(0o600)  # slurmdbd refuses a config others can read (it holds the database password)


def start_mariadb(folder, port, started):
    """A MariaDB server for slurmdbd only: no durability (a throwaway), loopback, the ``slurm`` user made at start."""
    db, run = folder / "db", folder / "run"
    for path in (db, run):
        path.mkdir()
        shutil.chown(path, "mysql", "mysql")
    log = folder / "log" / "mariadb.log"
    # --no-defaults: nothing from /etc/mysql (its socket, port, datadir) applies to this server.
    result = subprocess.run(
        ["mariadb-install-db", "--no-defaults", "--user=mysql", f"--datadir={db}", "--skip-test-db",
         "--auth-root-authentication-method=socket", "--skip-name-resolve", *INNODB],
        capture_output=True, text=True)
    if result.returncode != 0:
        raise SlurmError(f"mariadb-install-db failed: {result.stderr[-2000:]}")
    init = folder / "etc" / "mariadb-init.sql"
    init.write_text(
        f"CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{DB_PASSWORD}';\n"
        "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';\n")
    shutil.chown(init, "mysql", "mysql")
    server = find("mariadbd") or find("mysqld")
    process = subprocess.Popen(
        [server, "--no-defaults", "--user=mysql", f"--datadir={db}", f"--socket={run}/mysql.sock",
         f"--pid-file={run}/mariadb.pid", f"--port={port}", "--bind-address=127.0.0.1", f"--log-error={log}",
         "--skip-name-resolve", f"--init-file={init}", "--skip-log-bin", "--sync-binlog=0",
         "--innodb-lock-wait-timeout=900", *INNODB],  # the lock wait slurmdbd asks for (it warns below it)
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started.append(("mariadb", run / "mariadb.pid", process))
    wait_for("MariaDB", lambda: port_open(port), 60, process, log)


def start_daemon(folder, name, args, env, started):
    log = folder / "log" / f"{name}.log"
    with open(log.with_suffix(".out"), "w") as output:  # what it prints before its log file is open
        process = subprocess.Popen([find(name), *args], env=env, stdout=output, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    started.append((name, folder / "run" / f"{name}.pid", process))
    return process, log


@contextmanager
def throwaway_slurm(node=None):
    """Start MariaDB, slurmdbd, slurmctld and slurmd in a temporary folder (munged shared); yields a
    ``SlurmCluster`` once its node is idle; stops every daemon and removes the folder afterwards."""
    if missing_packages():
        raise SlurmError(f"missing Debian packages: {' '.join(missing_packages())}")
    if os.geteuid() != 0:
        raise SlurmError("the test Slurm cluster runs as root (SlurmUser=root, munged and MariaDB as their users)")
    node = node or socket.gethostname().split(".")[0]
    reap_stale()
    folder = Path(tempfile.mkdtemp(prefix="cluster-portal-slurm-"))
    (folder / "owner.pid").write_text(f"{os.getpid()}\n")
    folder.chmod(0o755)  # MariaDB runs as mysql and must reach its folders
    for name in ("etc", "dev", "log", "state", "spool", "jobs"):
        (folder / name).mkdir()
    (folder / "log").chmod(0o777)  # MariaDB's error log
    ports = {}
    while len(set(ports.values())) < 4:  # four different ones (the kernel may hand out the same port twice)
        ports = {name: free_port() for name in ("mariadb", "slurmdbd", "slurmctld", "slurmd")}
    cluster = SlurmCluster(folder, node)
    started = cluster.started
    try:
        # The daemons stop inside munged's block: scancel and the daemons' shutdown still authenticate.
        with shared_munged():
            try:
                start_mariadb(folder, ports["mariadb"], started)
                write_configs(folder, node, ports)
                start_slurm(cluster, ports, started)
                yield cluster
            finally:
                stop_all(started, cluster)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def reap_stale():
    """Stop the daemons of clusters whose test process died without its teardown (SIGKILL, a CI timeout) and
    remove their folders: started in their own sessions, they outlive it. A live process's cluster is left alone."""
    for folder in Path(tempfile.gettempdir()).glob("cluster-portal-slurm-*"):
        owner = read_pid(folder / "owner.pid")
        if owner is None or process_name(owner) is not None:  # still running (or being set up)
            continue
        mariadb = read_pid(folder / "run" / "mariadb.pid")
        stop_pids([mariadb] if mariadb and process_name(mariadb) in ("mariadbd", "mysqld") else [])
        stop_pids(leftovers(folder / "etc" / "slurm.conf"))  # the Slurm daemons, slurmrestd, slurmstepd, jobs
        shutil.rmtree(folder, ignore_errors=True)


def start_slurm(cluster, ports, started):
    folder, node = cluster.folder, cluster.node
    # slurmdbd creates its tables before it listens: the first start takes a few seconds.
    # -D: in the foreground, so a daemon that dies at start is seen at once (its pid is also in its pid file).
    process, log = start_daemon(folder, "slurmdbd", ["-D"], cluster.env, started)
    wait_for("slurmdbd", lambda: port_open(ports["slurmdbd"]), 90, process, log)
    wait_for("sacctmgr add cluster", lambda: added_cluster(cluster), 30, process, log)
    process, log = start_daemon(folder, "slurmctld", ["-D", "-c", "-i"], cluster.env, started)
    # "UP" from the controller itself: an open port alone could be another program's.
    wait_for("slurmctld", lambda: "UP" in cluster.run(["scontrol", "ping"], timeout=5), 60, process, log)
    process, log = start_daemon(folder, "slurmd", ["-D", "-N", node], cluster.env, started)

    def idle():
        state = cluster.run(["sinfo", "-h", "-N", "-n", node, "-o", "%T"], check=False, timeout=10).strip()
        if state.startswith("drain"):
            # e.g. "gres/gpu count reported lower than configured": waiting longer would not help.
            raise Fatal(f"node {node} is {state}: {reason(cluster, node)}\n{log_tail(log)}")
        return state == "idle"

    wait_for(f"slurmd (node {node} idle)", idle, 60, process, log)


def added_cluster(cluster):
    """``sacctmgr add cluster``, which slurmdbd may refuse for a moment after it starts listening."""
    try:
        cluster.sacctmgr("add", "cluster", CLUSTER)
    except SlurmError as error:
        if "already exists" not in str(error):  # else an earlier try got through
            raise
    return True


def reason(cluster, node):
    return cluster.run(["sinfo", "-h", "-N", "-n", node, "-o", "%E"], check=False, timeout=10).strip()


def stop_all(started, cluster):
    """Stop the daemons, each by the pid in its pid file and the one we started (the same unless it re-executed);
    jobs still running are cancelled first, and what still runs with this cluster's SLURM_CONF is stopped last."""
    if any(name == "slurmctld" for name, _, _ in started):
        with suppress(SlurmError, OSError):
            jobs = cluster.run(["squeue", "-h", "-o", "%A"], check=False, timeout=10).split()
            if jobs:
                cluster.run(["scancel", "--full", *jobs], check=False, timeout=10)
    # All at once: the order does not matter for a throwaway, and one by one each daemon's shutdown adds up.
    stop_pids({pid for _name, pid_file, process in started for pid in (read_pid(pid_file), process.pid) if pid})
    for _name, _pid_file, process in started:
        with suppress(OSError, subprocess.TimeoutExpired):
            process.wait(timeout=5)
    stop_pids(leftovers(cluster.conf), timeout=2)


def leftovers(conf):
    """Processes still running with this cluster's ``SLURM_CONF`` (slurmstepd and job steps outlive slurmd)."""
    mine, pids = f"SLURM_CONF={conf}".encode(), []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            with suppress(OSError):
                if mine in (entry / "environ").read_bytes().split(b"\0"):
                    pids.append(int(entry.name))
    return pids
