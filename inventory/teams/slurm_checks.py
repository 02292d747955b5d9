"""Settings that make Slurm's limits misleading, the billing weights per partition, and pending reasons in words.

``check(config, associations, qos, partitions, wanted_tres, monthly)`` reads ``scontrol show config`` (a dict:
``sacctmgr.read_config``), the associations and QOSes (``sacctmgr.read_associations`` / ``read_qos``) and the
partitions (``sacctmgr.read_partitions``), and returns a ``ConfigWarning`` per problem, each saying what to set.
``read_and_check(cluster, …)`` reads them all. ``billing_weights(partitions)`` gives each partition's
``TRESBillingWeights``; ``explain_reason("AssocGrpGRESMinutes")`` says a pending job's reason to a person.
"""

import re
import subprocess
from dataclasses import asdict, dataclass

from . import sacctmgr

GPU = "gres/gpu"
ERROR, WARNING = "error", "warning"


@dataclass
class ConfigWarning:
    """``code`` (stable, for tests and pages), ``severity`` (ERROR: a limit is not enforced or cannot be set;
    WARNING: it is enforced but means less than it seems), ``message``, ``fix`` (what to set), ``subject``."""

    code: str
    severity: str
    message: str
    fix: str
    subject: str = ""

    def as_dict(self):
        return asdict(self)

    @classmethod
    def from_dict(cls, data):
        return cls(**data)


def listed(value):
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def duration_seconds(text):
    """Slurm's ``[days-]hh:mm:ss`` (``7-00:00:00``, ``00:00:00``), or minutes as a number → seconds."""
    text = (text or "").strip()
    if not text or text.upper() in ("NONE", "0"):
        return 0
    days, _, clock = text.rpartition("-") if "-" in text else ("0", "", text)
    parts = [int(part) for part in clock.split(":")]
    if len(parts) == 1:
        return int(days or 0) * 86400 + parts[0] * 60
    while len(parts) < 3:
        parts.insert(0, 0)
    return int(days or 0) * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2]


def check(config, associations=(), qos=(), partitions=None, wanted_tres=(), monthly=True):
    """Warnings for the limits the portal writes (see the module's docstring)."""
    warnings = []
    tracked = set(listed(config.get("AccountingStorageTRES")))
    if GPU not in tracked:
        warnings.append(ConfigWarning(
            "gpu_not_tracked", ERROR, "GPUs are not a tracked resource: GrpTRES/GrpTRESMins for gres/gpu cannot be "
            "set, and jobs' GPU-hours read as 0.", "AccountingStorageTRES=gres/gpu in slurm.conf (restart "
            "slurmctld)", "AccountingStorageTRES"))
    for tres in sorted(set(wanted_tres) - tracked - {GPU}):
        if tres.startswith(GPU + ":"):
            warnings.append(ConfigWarning(
                "gpu_type_not_tracked", ERROR, f"{tres} is not tracked: a limit per GPU model cannot be set.",
                f"add {tres} to AccountingStorageTRES (AccountingStorageTRES=gres/gpu,{tres})", tres))
    enforce = set(listed(config.get("AccountingStorageEnforce")))
    budgets = [a for a in associations if a.grp_tres_mins and not a.user]
    qos_budgets = [q for q in qos if q.grp_tres_mins]
    if not enforce & {"limits", "safe"}:
        warnings.append(ConfigWarning(
            "limits_not_enforced", ERROR, "AccountingStorageEnforce has neither limits nor safe: Slurm stores "
            "the limits but never holds a job for them.", "AccountingStorageEnforce=associations,limits,qos,safe",
            "AccountingStorageEnforce"))
    elif "safe" not in enforce and (budgets or qos_budgets):
        warnings.append(ConfigWarning(
            "budget_can_overrun", WARNING, "Without safe a job starts while any GPU-minutes are left and may run "
            "past the budget.", "add safe to AccountingStorageEnforce", "AccountingStorageEnforce"))
    if "qos" not in enforce and qos_budgets:
        warnings.append(ConfigWarning(
            "qos_not_enforced", ERROR, "AccountingStorageEnforce lacks qos: partition budgets (held in QOSes) are "
            "not enforced.", "add qos to AccountingStorageEnforce", "AccountingStorageEnforce"))
    decays = duration_seconds(config.get("PriorityDecayHalfLife")) > 0
    reset = (config.get("PriorityUsageResetPeriod") or "NONE").upper()
    if decays:
        # An association's usage decays whatever its QOS says; NoDecay keeps only the QOS's own usage.
        for assoc in budgets:
            warnings.append(ConfigWarning(
                "budget_decays", WARNING, f"PriorityDecayHalfLife={config.get('PriorityDecayHalfLife')}: the usage "
                f"counted against account {assoc.account}'s GrpTRESMins decays, so its budget refills by itself.",
                "PriorityDecayHalfLife=0 with PriorityUsageResetPeriod=MONTHLY, or hold the budget in a QOS with "
                "Flags=NoDecay (as the portal does for partition budgets)", assoc.account))
        for entry in qos_budgets:
            if "NoDecay" not in entry.flags:
                warnings.append(ConfigWarning(
                    "qos_budget_decays", WARNING, f"QOS {entry.name}'s GrpTRESMins usage decays "
                    f"(PriorityDecayHalfLife={config.get('PriorityDecayHalfLife')}).",
                    f"sacctmgr modify qos {entry.name} set Flags+=NoDecay", entry.name))
    if monthly and (budgets or qos_budgets):
        if not decays and reset == "NONE" and budgets:
            warnings.append(ConfigWarning(
                "budget_never_resets", WARNING, "PriorityUsageResetPeriod=NONE with PriorityDecayHalfLife=0: "
                "usage is never reset, so a monthly budget becomes a lifetime one.",
                "PriorityUsageResetPeriod=MONTHLY", "PriorityUsageResetPeriod"))
        if any("NoDecay" in entry.flags for entry in qos_budgets):
            warnings.append(ConfigWarning(
                "qos_usage_kept", WARNING, "A NoDecay QOS's usage is reset neither by decay nor by "
                "PriorityUsageResetPeriod: a monthly partition budget needs its usage reset each month.",
                "each month: sacctmgr -i modify qos where name=<qos> cluster=<cluster> set RawUsage=0", "NoDecay"))
    for name, fields in (partitions or {}).items():
        team_qos = [entry.name for entry in qos_budgets if entry.name.endswith(f"-{name}")]
        if team_qos and (fields.get("AllowQos") or "ALL").upper() == "ALL":
            warnings.append(ConfigWarning(
                "partition_allows_any_qos", WARNING, f"Partition {name} allows every QOS: a job there can use "
                f"another QOS than its team's ({', '.join(team_qos)}) and escape the partition budget.",
                f"PartitionName={name} AllowQos={','.join(team_qos)} in slurm.conf", name))
    return warnings


def read_and_check(cluster, wanted_tres=(), monthly=True, runner=subprocess.run):
    """``check`` on what Slurm says now."""
    return check(sacctmgr.read_config(runner), sacctmgr.read_associations(cluster, runner=runner),
                 sacctmgr.read_qos(runner=runner), sacctmgr.read_partitions(runner), wanted_tres, monthly)


# --- billing weights -----------------------------------------------------------------------------------------------

MEMORY_PER_GB = {"K": 1024 * 1024, "M": 1024, "G": 1, "T": 1 / 1024, "": 1024}  # a weight without unit is per MB


def parse_billing_weights(text):
    """``CPU=1.0,Mem=0.25G,GRES/gpu=2.0`` → ``{"cpu": 1.0, "mem": 0.25, "gres/gpu": 2.0}`` (memory per GB)."""
    weights = {}
    for pair in listed(text):
        name, _, value = pair.partition("=")
        match = re.match(r"^([0-9.]+)([KMGT]?)$", value.strip(), re.IGNORECASE)
        if not match:
            raise ValueError(f"not a billing weight: {pair!r}")
        number, unit = float(match.group(1)), match.group(2).upper()
        name = name.strip().lower()
        weights[name] = number * MEMORY_PER_GB[unit] if name == "mem" else number
    return weights


def billing_weights(partitions):
    """``{partition: {tres: weight}}`` from ``scontrol show partition -o`` (``sacctmgr.parse_partitions``); a
    partition without ``TRESBillingWeights`` bills its CPUs (``{}``: Slurm's default)."""
    return {name: parse_billing_weights(fields.get("TRESBillingWeights", "")) for name, fields in partitions.items()}


def read_billing_weights(runner=subprocess.run):
    return billing_weights(sacctmgr.read_partitions(runner))


# --- pending reasons -----------------------------------------------------------------------------------------------

REASONS = {
    "AssocGrpGRESMinutes": "the team's GPU-hour budget in Slurm is used up",
    "AssocGrpGRES": "the team already uses all the GPUs its allocation allows at once",
    "AssocGrpBillingMinutes": "the team's budget in billing units in Slurm is used up",
    "AssocGrpCPUMinutes": "the team's CPU-hour budget in Slurm is used up",
    "AssocGrpCpuLimit": "the team already uses all the CPUs its allocation allows at once",
    "AssocMaxJobsLimit": "the user or team runs as many jobs as Slurm allows at once",
    "AssocGrpJobsLimit": "the team runs as many jobs as Slurm allows at once",
    "QOSGrpGRESMinutes": "the GPU-hour budget of the team's partition allocation (its QOS) is used up",
    "QOSGrpGRES": "the team already uses all the GPUs its partition allocation (its QOS) allows at once",
    "QOSMaxGRESPerUser": "the user already uses all the GPUs the QOS allows one user",
    "InvalidAccount": "the job names an account the user has no access to in Slurm",
    "InvalidQOS": "the job asks for a QOS its account may not use",
    "QOSNotAllowed": "the partition does not allow the job's QOS",
    "Priority": "jobs with a higher priority are waiting first",
    "Resources": "the GPUs or nodes it asks for are busy; it starts when they free up",
    "Dependency": "it waits for another job to finish",
    "DependencyNeverSatisfied": "the job it depends on failed: it will never start",
    "ReqNodeNotAvail": "a node it needs is down, drained or reserved",
    "PartitionTimeLimit": "its time limit is longer than the partition allows",
    "JobHeldUser": "its owner put it on hold",
    "JobHeldAdmin": "an administrator put it on hold",
    "BeginTime": "it was asked to start later",
}


def explain_reason(reason):
    """A Slurm pending reason → words for a person ('' for None/"None"; unknown reasons are named as Slurm's)."""
    reason = (reason or "").strip()
    if reason in ("", "None"):
        return ""
    return REASONS.get(reason, f"Slurm says: {reason}")
