"""Running Slurm's ``sacctmgr`` and ``scontrol`` safely, and reading their answers into plain data.

The command prefixes come from the settings or the environment (``SLURM_SACCTMGR``, default ``sacctmgr``;
``SLURM_SCONTROL``, default ``scontrol``), split with ``shlex`` so that a site can run them on its Slurm head over
ssh (``ssh -o BatchMode=yes portal@slurm-head sacctmgr``). They run without a shell, with a timeout; a command that
fails, times out or cannot start raises ``SlurmCommandError`` with the command and what it printed.

Readers: ``read_associations``, ``read_qos``, ``read_config``, ``read_partitions``. Writers build a command's
arguments (``add_account_args``, ``add_user_args``, ``remove_user_args``, ``modify_account_args``,
``add_qos_args``, ``modify_qos_args``, ``reset_usage_args``), which ``write`` runs as one ``sacctmgr -i`` call
and ``render`` shows as the command a person would type (the sync's diff page shows exactly what will run).

Limits are TRES dicts: ``gres/gpu=8,billing=100`` ↔ ``{"gres/gpu": 8, "billing": 100}``; a typed GPU is
``gres/gpu:a100``. In a write, ``-1`` clears one TRES of a limit.
"""

import os
import re
import shlex
import subprocess
from dataclasses import asdict, dataclass, field

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

TIMEOUT = 60
# Slurm lower-cases account and QOS names; these also keep a name from reading as an option or a where clause.
NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
USER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}\$?$")
WORD = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")  # a flag or a QOS name in a setting
TRES_NAME = re.compile(r"^[a-z]+(/[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)?)?$")
ASSOC_FIELDS = ["cluster", "account", "user", "partition", "parentname", "share", "grptres", "grptresmins",
                "maxtres", "qos"]
QOS_FIELDS = ["name", "flags", "grptres", "grptresmins", "maxtres", "maxtresperaccount", "usagefactor"]


class SlurmCommandError(RuntimeError):
    """A Slurm command that failed: ``command`` (the argument list), ``returncode`` (None when it did not run or
    timed out), ``stderr`` and ``stdout``."""

    def __init__(self, command, message, returncode=None, stderr="", stdout=""):
        self.command, self.returncode, self.stderr, self.stdout = list(command), returncode, stderr, stdout
        super().__init__(f"{shlex.join(self.command)}: {message}")


def prefix(program):
    """``SLURM_SACCTMGR`` / ``SLURM_SCONTROL`` from Django's settings, else the environment, else the program name,
    as an argument list."""
    variable = f"SLURM_{program.upper()}"
    try:
        value = getattr(settings, variable, None)
    except ImproperlyConfigured:  # a script outside Django
        value = None
    value = value or os.environ.get(variable) or program
    return shlex.split(value) if isinstance(value, str) else list(value)


def over_ssh(command_prefix):
    """ssh joins its arguments into one line that the remote shell splits again: they must be quoted for it."""
    return bool(command_prefix) and os.path.basename(command_prefix[0]) == "ssh"


def run(program, args, timeout=TIMEOUT, runner=subprocess.run):
    """Run ``program`` (``"sacctmgr"`` or ``"scontrol"``) with ``args``; its stdout. ``runner`` stands in for
    ``subprocess.run`` in tests."""
    head = prefix(program)
    args = [str(arg) for arg in args]
    command = head + ([shlex.quote(arg) for arg in args] if over_ssh(head) else args)
    try:
        result = runner(command, capture_output=True, text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise SlurmCommandError(command, f"no answer after {timeout} s") from None
    except OSError as error:
        raise SlurmCommandError(command, f"could not run: {error}") from None
    if result.returncode != 0:
        said = (result.stderr or "").strip() or (result.stdout or "").strip()
        raise SlurmCommandError(command, f"exited with {result.returncode}: {said}", result.returncode,
                                result.stderr or "", result.stdout or "")
    return result.stdout


# --- TRES strings --------------------------------------------------------------------------------------------------

def parse_tres(text):
    """``gres/gpu=8,billing=100`` → ``{"gres/gpu": 8, "billing": 100}`` ('' → {}). ``ValueError`` on a bad pair."""
    limits = {}
    for pair in (text or "").split(","):
        if not pair.strip():
            continue
        name, sep, value = pair.strip().partition("=")
        if not sep or not TRES_NAME.match(name):
            raise ValueError(f"not a TRES limit: {pair!r}")
        limits[name] = int(value)
    return limits


def format_tres(limits):
    """``{"gres/gpu": 8}`` → ``gres/gpu=8``, sorted by name (one spelling for one set of limits)."""
    for name in limits:
        if not TRES_NAME.match(name):
            raise ValueError(f"not a TRES name: {name!r}")
    return ",".join(f"{name}={int(value)}" for name, value in sorted(limits.items()))


def parse_parsable(text, fields):
    """``--parsable2 --noheader`` lines → one dict per line, keyed by ``fields``."""
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        values = line.split("|")
        if len(values) != len(fields):
            raise ValueError(f"expected {len(fields)} fields, got {len(values)}: {line!r}")
        rows.append(dict(zip(fields, values, strict=True)))
    return rows


# --- readers -------------------------------------------------------------------------------------------------------

@dataclass
class Association:
    """One line of ``sacctmgr show assoc``: an account's (``user`` '') or a user's association in a cluster."""

    cluster: str
    account: str
    user: str = ""
    partition: str = ""
    parent: str = ""
    share: int | None = None  # None: "parent" (the user shares its account's)
    grp_tres: dict = field(default_factory=dict)
    grp_tres_mins: dict = field(default_factory=dict)
    max_tres: dict = field(default_factory=dict)
    qos: list = field(default_factory=list)

    def as_dict(self):
        return asdict(self)

    @classmethod
    def from_dict(cls, data):
        return cls(**data)


@dataclass
class Qos:
    """One line of ``sacctmgr show qos``."""

    name: str
    flags: list = field(default_factory=list)
    grp_tres: dict = field(default_factory=dict)
    grp_tres_mins: dict = field(default_factory=dict)
    max_tres: dict = field(default_factory=dict)
    max_tres_per_account: dict = field(default_factory=dict)
    usage_factor: float = 1.0

    def as_dict(self):
        return asdict(self)

    @classmethod
    def from_dict(cls, data):
        return cls(**data)


def parse_associations(text):
    """``sacctmgr show assoc -P --noheader format=<ASSOC_FIELDS>`` output → ``Association`` list."""
    return [Association(
        cluster=row["cluster"], account=row["account"], user=row["user"], partition=row["partition"],
        parent=row["parentname"], share=int(row["share"]) if row["share"].lstrip("-").isdigit() else None,
        grp_tres=parse_tres(row["grptres"]), grp_tres_mins=parse_tres(row["grptresmins"]),
        max_tres=parse_tres(row["maxtres"]), qos=[name for name in row["qos"].split(",") if name],
    ) for row in parse_parsable(text, ASSOC_FIELDS)]


def parse_qos(text):
    """``sacctmgr show qos -P --noheader format=<QOS_FIELDS>`` output → ``Qos`` list."""
    return [Qos(
        name=row["name"], flags=[flag for flag in row["flags"].split(",") if flag],
        grp_tres=parse_tres(row["grptres"]), grp_tres_mins=parse_tres(row["grptresmins"]),
        max_tres=parse_tres(row["maxtres"]), max_tres_per_account=parse_tres(row["maxtresperaccount"]),
        usage_factor=float(row["usagefactor"] or 1),
    ) for row in parse_parsable(text, QOS_FIELDS)]


def parse_config(text):
    """``scontrol show config`` → ``{"AccountingStorageTRES": "cpu,…,gres/gpu", …}`` (the ``Key = value`` lines;
    ``(null)`` read as '')."""
    config = {}
    for line in text.splitlines():
        key, sep, value = line.partition(" = ")
        if sep and key.strip() and " " not in key.strip():
            value = value.strip()
            config[key.strip()] = "" if value == "(null)" else value
    return config


def parse_partitions(text):
    """``scontrol show partition -o`` → ``{name: {"AllowQos": "ALL", "TRESBillingWeights": "…", …}}``."""
    partitions = {}
    for line in text.splitlines():
        fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
        if "PartitionName" in fields:
            partitions[fields.pop("PartitionName")] = fields
    return partitions


def read_associations(cluster, accounts=None, runner=subprocess.run):
    """The associations of ``cluster`` (of ``accounts`` only, when given)."""
    where = ["where", f"cluster={checked(NAME, cluster)}"]
    if accounts:
        where.append(f"account={','.join(checked(NAME, account) for account in accounts)}")
    text = run("sacctmgr", ["show", "assoc", "-P", "--noheader", *where, f"format={','.join(ASSOC_FIELDS)}"],
               runner=runner)
    return parse_associations(text)


def read_qos(names=None, runner=subprocess.run):
    """Every QOS (those named, when given)."""
    where = ["where", f"name={','.join(checked(NAME, name) for name in names)}"] if names else []
    return parse_qos(run("sacctmgr", ["show", "qos", "-P", "--noheader", *where, f"format={','.join(QOS_FIELDS)}"],
                         runner=runner))


def read_config(runner=subprocess.run):
    return parse_config(run("scontrol", ["show", "config"], runner=runner))


def read_partitions(runner=subprocess.run):
    return parse_partitions(run("scontrol", ["show", "partition", "-o"], runner=runner))


# --- writers: one sacctmgr -i call each ----------------------------------------------------------------------------

def checked(pattern, value):
    if not isinstance(value, str) or not pattern.match(value):
        raise ValueError(f"not a valid Slurm name: {value!r}")
    return value


def text_value(value):
    """A description or organization: one line, no quotes (sacctmgr strips them and stores the rest)."""
    value = str(value).strip()
    if any(char in value for char in "'\"\n\r\t") or len(value) > 200:
        raise ValueError(f"not a valid Slurm description: {value!r}")
    return value


def add_account_args(cluster, account, parent="root", description="", organization=""):
    args = ["add", "account", checked(NAME, account), f"Cluster={checked(NAME, cluster)}",
            f"Parent={checked(NAME, parent)}"]
    if description:
        args.append(f"Description={text_value(description)}")
    if organization:
        args.append(f"Organization={text_value(organization)}")
    return args


def add_user_args(cluster, user, account):
    return ["add", "user", checked(USER, user), f"Account={checked(NAME, account)}",
            f"Cluster={checked(NAME, cluster)}"]


def remove_user_args(cluster, user, account):
    return ["remove", "user", "where", f"name={checked(USER, user)}", f"account={checked(NAME, account)}",
            f"cluster={checked(NAME, cluster)}"]


def setting(name, value):
    """``GrpTRES``/``GrpTRESMins`` from a TRES dict (``-1`` clears one TRES), ``Fairshare``/… from a number,
    ``QOS+``/``Flags`` from a name."""
    if isinstance(value, dict):
        return f"{name}={format_tres(value)}"
    if isinstance(value, int):
        return f"{name}={value}"
    return f"{name}={checked(WORD, value)}"


def modify_account_args(cluster, account, settings):
    """``modify account where name=A cluster=C set K=V …`` (``settings``: {"GrpTRES": {"gres/gpu": 8}, "QOS+":
    "physics-gpu"}): the account's own association; a QOS granted also reaches its users' associations."""
    return ["modify", "account", "where", f"name={checked(NAME, account)}", f"cluster={checked(NAME, cluster)}",
            "set", *(setting(name, value) for name, value in settings.items())]


def add_qos_args(name, flags=()):
    args = ["add", "qos", checked(NAME, name)]
    if flags:
        args.append(f"Flags={','.join(checked(WORD, flag) for flag in flags)}")
    return args


def modify_qos_args(name, settings):
    return ["modify", "qos", "where", f"name={checked(NAME, name)}", "set",
            *(setting(key, value) for key, value in settings.items())]


def reset_usage_args(cluster, account=None, qos=None):
    """Forget the usage counted against a budget (``RawUsage=0``, the only value Slurm takes): an account's, or a
    QOS's (a ``NoDecay`` QOS keeps its usage until this, whatever ``PriorityUsageResetPeriod`` says)."""
    if (account is None) == (qos is None):
        raise ValueError("reset the usage of one account or one QOS")
    kind, name = ("account", account) if account else ("qos", qos)
    return ["modify", kind, "where", f"name={checked(NAME, name)}", f"cluster={checked(NAME, cluster)}", "set",
            "RawUsage=0"]


def render(args):
    """The command as a person would type it (for the diff page and the history)."""
    return shlex.join(["sacctmgr", "-i", *args])


def write(args, runner=subprocess.run, timeout=TIMEOUT):
    """Run one ``sacctmgr -i`` change; its stdout. ``SlurmCommandError`` when sacctmgr refuses it (it exits 1
    also for "Nothing modified"/"Nothing new added")."""
    return run("sacctmgr", ["-i", *args], timeout=timeout, runner=runner)
