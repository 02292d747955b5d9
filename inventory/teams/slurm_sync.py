"""Teams' allocations → Slurm accounts and limits: desired state, diff, compare-and-set apply, drift.

The flow (the pages and the history are built on these functions; everything here is plain data):

1. ``wanted(Desired)`` → ``State``: what Slurm should hold for the teams' accounts, in the fields the portal
   manages (existence, users, fair share, the GPU TRES of ``GrpTRES``/``GrpTRESMins``, partition QOSes).
2. ``read_state(cluster, accounts)`` → ``State`` as Slurm has it (``sacctmgr show assoc`` / ``show qos``).
3. ``diff(wanted, actual, last_applied)`` → ordered ``Change`` list; each ``Change.command()`` is the exact
   ``sacctmgr -i …`` line, and ``as_dict``/``from_dict`` let a diff be stored and approved later.
4. ``apply(change)`` → ``ApplyResult``: compare-and-set (re-read the value; refuse, ``STALE``, when it is no longer
   the change's ``before``), one ``sacctmgr -i`` call, read back, ``VERIFIED`` or ``FAILED`` with what was read.
5. ``drift(last_applied, actual)`` → ``Drift`` list: what someone changed by hand since the portal applied it.
   ``diff`` marks a change that would undo such a hand edit (``Change.overrides_drift``), so it is shown, never
   silently overwritten; nothing the portal did not add is removed (users only when ``last_applied`` has them,
   accounts and QOSes never).

Per partition: an account association's limits hold on the whole cluster, and Slurm has no partition-specific
*account* association (``sacctmgr add account … partition=`` is refused; only user associations have one). So an
allocation in one partition becomes a QOS named ``<account>-<partition>`` (``partition_qos``) holding its
``GrpTRES``/``GrpTRESMins`` with ``Flags=NoDecay``, granted to the account (``QOS+=``). It is enforced when the
partition allows only such QOSes (``AllowQos=`` in slurm.conf; ``slurm_checks`` warns on ``AllowQos=ALL``) and the
team's jobs there ask for it (``--qos``). See docs/slurm.md.

A budget in GPU-hours is written in GPU-minutes (``GrpTRESMins``); an allocation naming a GPU model is written as
the typed TRES ``gres/gpu:<type>`` (slurm.conf needs ``AccountingStorageTRES=gres/gpu,gres/gpu:<type>``).
"""

import dataclasses
import subprocess
from dataclasses import asdict, dataclass, field

from . import sacctmgr

GPU = "gres/gpu"
LIMIT_FIELDS = ("GrpTRES", "GrpTRESMins")
ADD_ACCOUNT, ADD_USER, REMOVE_USER, ADD_QOS, GRANT_QOS, SET_LIMIT = (
    "add_account", "add_user", "remove_user", "add_qos", "grant_qos", "set_limit")
VERIFIED, FAILED, STALE, ERROR = "verified", "failed", "stale", "error"
NEW_SHARE = 1  # Fairshare of a new association (sacctmgr's default)
PARTITION_QOS_FLAGS = ("NoDecay",)  # a fixed budget: the QOS's usage is not forgotten (PriorityDecayHalfLife)


def gpu_tres(gpu_type=None):
    """``gres/gpu`` or the typed ``gres/gpu:<type>`` (Slurm's GPU type names are lower case: ``a100``)."""
    return f"{GPU}:{gpu_type.lower()}" if gpu_type else GPU


def partition_qos(account, partition):
    return f"{account}-{partition}".lower()


def is_gpu_tres(name):
    return name == GPU or name.startswith(GPU + ":")


# --- desired state -------------------------------------------------------------------------------------------------

@dataclass
class Allocation:
    """One approved allocation: concurrent GPUs and/or a GPU-hour budget, cluster-wide or in one partition, for
    any GPU or one model."""

    gpus: int | None = None
    gpu_hours: float | None = None
    gpu_type: str | None = None
    partition: str | None = None


@dataclass
class TeamAccount:
    account: str
    users: list = field(default_factory=list)
    parent: str = "root"
    description: str = ""
    organization: str = ""
    fairshare: int | None = None  # None: left as Slurm has it
    allocations: list = field(default_factory=list)

    @classmethod
    def from_dict(cls, data):
        data = dict(data)
        data["allocations"] = [Allocation(**allocation) for allocation in data.get("allocations", [])]
        return cls(**data)


@dataclass
class Desired:
    cluster: str
    accounts: list = field(default_factory=list)

    def as_dict(self):
        return asdict(self)

    @classmethod
    def from_dict(cls, data):
        return cls(data["cluster"], [TeamAccount.from_dict(account) for account in data.get("accounts", [])])


# --- a state: the managed fields of each account and partition QOS --------------------------------------------------

@dataclass
class Entity:
    """An account (``kind`` "account") or a partition QOS ("qos") as the portal sees it: ``exists``, and the
    managed fields; ``grp_tres``/``grp_tres_mins`` hold GPU TRES only (others are not the portal's)."""

    kind: str
    name: str
    account: str
    exists: bool = True
    parent: str = "root"
    description: str = ""
    organization: str = ""
    users: list = field(default_factory=list)
    fairshare: int | None = None
    grp_tres: dict = field(default_factory=dict)
    grp_tres_mins: dict = field(default_factory=dict)
    qos: list = field(default_factory=list)  # account: the partition QOSes granted to it
    flags: list = field(default_factory=list)  # qos

    @property
    def key(self):
        return f"{self.kind}:{self.name}"

    def limits(self, name):
        return self.grp_tres if name == "GrpTRES" else self.grp_tres_mins


@dataclass
class State:
    cluster: str
    entities: dict = field(default_factory=dict)  # key ("account:physics", "qos:physics-gpu") → Entity

    def add(self, entity):
        self.entities[entity.key] = entity

    def get(self, kind, name):
        """The entity, or one that does not exist yet, with what Slurm gives a new one (an account's share: 1)."""
        return self.entities.get(f"{kind}:{name}") or Entity(
            kind, name, name if kind == "account" else "", exists=False, parent="",
            fairshare=NEW_SHARE if kind == "account" else None)

    def as_dict(self):
        return {"cluster": self.cluster, "entities": [asdict(entity) for entity in self.entities.values()]}

    @classmethod
    def from_dict(cls, data):
        state = cls(data["cluster"])
        for entity in data.get("entities", []):
            state.add(Entity(**entity))
        return state


def validate(desired):
    """``ValueError`` naming the first thing Slurm would refuse or misread: a name sacctmgr would change (Slurm
    lower-cases account and QOS names), a negative limit, two teams' partitions that would share one QOS name."""
    sacctmgr.checked(sacctmgr.NAME, desired.cluster)
    owners = {}
    for team in desired.accounts:
        sacctmgr.checked(sacctmgr.NAME, team.account)
        sacctmgr.checked(sacctmgr.NAME, team.parent)
        for user in team.users:
            sacctmgr.checked(sacctmgr.USER, user)
        for allocation in team.allocations:
            if any(value is not None and value < 0 for value in (allocation.gpus, allocation.gpu_hours)):
                raise ValueError(f"account {team.account}: a negative limit {allocation}")
            if allocation.gpu_type:
                sacctmgr.checked(sacctmgr.WORD, allocation.gpu_type)
            if allocation.partition:
                name = sacctmgr.checked(sacctmgr.NAME, partition_qos(team.account, allocation.partition))
                if owners.setdefault(name, (team.account, allocation.partition)) != (team.account,
                                                                                      allocation.partition):
                    raise ValueError(f"QOS {name} would hold both {owners[name]} and "
                                     f"{(team.account, allocation.partition)}")


def wanted(desired):
    """``Desired`` → the ``State`` Slurm should hold (allocations of one scope and TRES add up)."""
    validate(desired)
    state = State(desired.cluster)
    for team in desired.accounts:
        account = Entity("account", team.account, team.account, parent=team.parent, description=team.description,
                         organization=team.organization, users=sorted(set(team.users)), fairshare=team.fairshare)
        state.add(account)
        for allocation in team.allocations:
            scope = account
            if allocation.partition:
                name = partition_qos(team.account, allocation.partition)
                scope = state.entities.get(f"qos:{name}") or Entity("qos", name, team.account, parent="",
                                                                    flags=list(PARTITION_QOS_FLAGS))
                state.add(scope)
                if name not in account.qos:
                    account.qos.append(name)
            tres = gpu_tres(allocation.gpu_type)
            if allocation.gpus is not None:
                scope.grp_tres[tres] = scope.grp_tres.get(tres, 0) + int(allocation.gpus)
            if allocation.gpu_hours is not None:
                minutes = round(float(allocation.gpu_hours) * 60)
                scope.grp_tres_mins[tres] = scope.grp_tres_mins.get(tres, 0) + minutes
    return state


def wanted_tres(desired):
    """The TRES names the desired limits use (slurm_checks: each must be in AccountingStorageTRES)."""
    return sorted({name for entity in wanted(desired).entities.values()
                   for name in (*entity.grp_tres, *entity.grp_tres_mins)})


def observed(cluster, associations, qos_list):
    """What Slurm holds (``sacctmgr.Association``/``Qos`` lists) → ``State`` (GPU TRES only)."""
    state = State(cluster)
    accounts = [a for a in associations if a.cluster == cluster and not a.user and not a.partition]
    for assoc in accounts:
        state.add(Entity(
            "account", assoc.account, assoc.account, parent=assoc.parent, fairshare=assoc.share,
            users=sorted({a.user for a in associations if a.account == assoc.account and a.user and not a.partition}),
            grp_tres=gpu_only(assoc.grp_tres), grp_tres_mins=gpu_only(assoc.grp_tres_mins), qos=list(assoc.qos)))
    for qos in qos_list:
        state.add(Entity("qos", qos.name, "", parent="", grp_tres=gpu_only(qos.grp_tres),
                         grp_tres_mins=gpu_only(qos.grp_tres_mins), flags=list(qos.flags)))
    return state


def gpu_only(limits):
    return {name: value for name, value in limits.items() if is_gpu_tres(name)}


def read_state(cluster, accounts, qos_names=None, runner=subprocess.run):
    """Slurm's state of ``accounts`` and of ``qos_names`` (every QOS when None, none when empty) → ``State``."""
    associations = sacctmgr.read_associations(cluster, accounts, runner=runner)
    qos = sacctmgr.read_qos(qos_names, runner=runner) if qos_names is None or qos_names else []
    return observed(cluster, associations, qos)


# --- changes -------------------------------------------------------------------------------------------------------

@dataclass
class Change:
    """One ``sacctmgr -i`` call. ``target``/``name``: the account, QOS or user it acts on; ``field``/``tres``: the
    limit (``SET_LIMIT``); ``before``: what Slurm held when the diff was made (a limit's value or None; for the
    other actions whether the thing existed), ``after``: what it will hold. ``overrides_drift``: ``before`` is a
    hand edit made since the portal last applied this field."""

    action: str
    cluster: str
    account: str
    target: str = "account"
    name: str = ""
    field: str = ""
    tres: str = ""
    before: object = None
    after: object = None
    details: dict = dataclasses.field(default_factory=dict)  # ``field`` is a column name here
    overrides_drift: bool = False

    def args(self):
        if self.action == ADD_ACCOUNT:
            return sacctmgr.add_account_args(self.cluster, self.name, **self.details)
        if self.action == ADD_USER:
            return sacctmgr.add_user_args(self.cluster, self.name, self.account)
        if self.action == REMOVE_USER:
            return sacctmgr.remove_user_args(self.cluster, self.name, self.account)
        if self.action == ADD_QOS:
            return sacctmgr.add_qos_args(self.name, self.details.get("flags", ()))
        if self.action == GRANT_QOS:
            return sacctmgr.modify_account_args(self.cluster, self.account, {"QOS+": self.name})
        if self.action == SET_LIMIT:
            value = {self.tres: -1 if self.after is None else self.after} if self.tres else (
                -1 if self.after is None else self.after)
            if self.target == "qos" and self.field == "Flags":
                return sacctmgr.modify_qos_args(self.name, {"Flags+": self.after})
            if self.target == "qos":
                return sacctmgr.modify_qos_args(self.name, {self.field: value})
            return sacctmgr.modify_account_args(self.cluster, self.name, {self.field: value})
        raise ValueError(f"unknown change {self.action!r}")

    def command(self):
        return sacctmgr.render(self.args())

    def describe(self):
        if self.action == ADD_ACCOUNT:
            return f"create account {self.name} under {self.details.get('parent', 'root')}"
        if self.action == ADD_USER:
            return f"add user {self.name} to account {self.account}"
        if self.action == REMOVE_USER:
            return f"remove user {self.name} from account {self.account}"
        if self.action == ADD_QOS:
            return f"create QOS {self.name} for account {self.account}"
        if self.action == GRANT_QOS:
            return f"let account {self.account} use QOS {self.name}"
        what = f"{self.field} {self.tres}".strip()
        where = f"{self.target} {self.name}"
        if self.after is None:
            return f"clear {what} of {where} (was {self.before})"
        return f"set {what} of {where} from {'unset' if self.before is None else self.before} to {self.after}"

    def as_dict(self):
        return asdict(self)

    @classmethod
    def from_dict(cls, data):
        return cls(**data)


def current(change, state):
    """The value ``change.before``/``after`` refer to, in ``state``."""
    if change.action in (ADD_ACCOUNT, ADD_QOS):
        return state.get(change.target, change.name).exists
    account = state.get("account", change.account)
    if change.action in (ADD_USER, REMOVE_USER):
        return change.name in account.users
    if change.action == GRANT_QOS:
        return change.name in account.qos
    entity = state.get(change.target, change.name)
    if change.field == "Fairshare":
        return entity.fairshare
    if change.field == "Flags":
        return change.after if change.after in entity.flags else None
    return entity.limits(change.field).get(change.tres)


def diff(want, actual, last_applied=None):
    """``State`` wanted vs Slurm's → ordered ``Change`` list (empty when Slurm already holds what is wanted)."""
    changes = []
    accounts = [entity for entity in want.entities.values() if entity.kind == "account"]
    for account in accounts:
        have = actual.get("account", account.name)
        applied = last_applied.get("account", account.name) if last_applied else None

        def change(action, _account=account.name, _applied=applied, **fields):
            fields.setdefault("name", _account)
            made = Change(action, want.cluster, _account, **fields)
            # A limit that Slurm holds otherwise than the portal last applied was changed by hand.
            made.overrides_drift = bool(_applied and _applied.exists and action == SET_LIMIT
                                        and current(made, last_applied) != made.before)
            changes.append(made)

        if not have.exists:
            change(ADD_ACCOUNT, before=False, after=True, details={
                "parent": account.parent, "description": account.description, "organization": account.organization})
        for user in account.users:
            if user not in have.users:
                change(ADD_USER, name=user, before=False, after=True)
        if account.fairshare is not None and have.fairshare != account.fairshare:
            change(SET_LIMIT, field="Fairshare", before=have.fairshare, after=account.fairshare)
        limit_changes(account, have, change)
        for name in account.qos:
            qos, had = want.get("qos", name), actual.get("qos", name)
            if not had.exists:
                change(ADD_QOS, target="qos", name=name, before=False, after=True,
                       details={"flags": list(qos.flags)})
            else:
                for flag in qos.flags:
                    if flag not in had.flags:
                        change(SET_LIMIT, target="qos", name=name, field="Flags", before=None, after=flag)
            limit_changes(qos, had, change)
            if name not in have.qos:
                change(GRANT_QOS, name=name, before=False, after=True)
        for user in sorted(set(applied.users if applied else ()) - set(account.users)):
            if user in have.users:  # only users the portal added; never one added by hand
                change(REMOVE_USER, name=user, before=True, after=False)
    return changes


def limit_changes(entity, have, change):
    for name in LIMIT_FIELDS:
        wanted_limits, actual_limits = entity.limits(name), have.limits(name)
        for tres in sorted(set(wanted_limits) | set(actual_limits)):
            if wanted_limits.get(tres) != actual_limits.get(tres):
                change(SET_LIMIT, target=entity.kind, name=entity.name, field=name, tres=tres,
                       before=actual_limits.get(tres), after=wanted_limits.get(tres))


# --- apply ---------------------------------------------------------------------------------------------------------

@dataclass
class ApplyResult:
    """What one change did: ``status`` VERIFIED (read back equal to ``after``), FAILED (read back otherwise),
    STALE (Slurm no longer held ``before``: nothing run), ERROR (sacctmgr refused: ``output`` says why);
    ``read``: the value read (before running for STALE, after for the others)."""

    change: Change
    status: str
    read: object = None
    output: str = ""

    @property
    def ok(self):
        return self.status == VERIFIED

    def as_dict(self):
        return {"change": self.change.as_dict(), "status": self.status, "read": self.read, "output": self.output}

    @classmethod
    def from_dict(cls, data):
        return cls(Change.from_dict(data["change"]), data["status"], data.get("read"), data.get("output", ""))


def read_for(change, runner):
    qos = [change.name] if change.target == "qos" else []
    state = read_state(change.cluster, [change.account], qos, runner=runner)
    return current(change, state)


def apply(change, runner=subprocess.run):
    """Compare-and-set one change: read, refuse when stale, run, read back and verify.

    sacctmgr has no conditional write, so the check is a read just before the write; a hand edit in between shows
    in the read-back (FAILED) or, when it set the same value, changes nothing."""
    try:
        before = read_for(change, runner)
    except sacctmgr.SlurmCommandError as error:
        return ApplyResult(change, ERROR, None, str(error))
    if before != change.before:
        return ApplyResult(change, STALE, before, f"Slurm holds {before!r}, not {change.before!r} as when the "
                           "change was made: compute the diff again")
    try:
        output = sacctmgr.write(change.args(), runner=runner)
    except sacctmgr.SlurmCommandError as error:
        return ApplyResult(change, ERROR, before, str(error))
    try:
        after = read_for(change, runner)
    except sacctmgr.SlurmCommandError as error:
        return ApplyResult(change, FAILED, None, f"{output.strip()}\nread back failed: {error}")
    return ApplyResult(change, VERIFIED if after == change.after else FAILED, after, output.strip())


def apply_all(changes, runner=subprocess.run):
    """Apply in order, stopping at the first change that is not verified (later ones may depend on it)."""
    results = []
    for change in changes:
        results.append(apply(change, runner))
        if not results[-1].ok:
            break
    return results


# --- drift ---------------------------------------------------------------------------------------------------------

@dataclass
class Drift:
    """A managed field that Slurm holds otherwise than the portal last applied: ``applied`` vs ``actual``."""

    kind: str
    name: str
    field: str
    tres: str = ""
    applied: object = None
    actual: object = None

    def describe(self):
        what = f"{self.field} {self.tres}".strip()
        return f"{what} of {self.kind} {self.name} is {self.actual!r} in Slurm; the portal applied {self.applied!r}"

    def as_dict(self):
        return asdict(self)

    @classmethod
    def from_dict(cls, data):
        return cls(**data)


def drift(last_applied, actual):
    """The managed fields someone changed by hand since the portal applied ``last_applied`` (a ``State``)."""
    found = []
    for entity in last_applied.entities.values():
        have = actual.get(entity.kind, entity.name)
        if not have.exists:
            found.append(Drift(entity.kind, entity.name, "exists", applied=True, actual=False))
            continue
        if entity.kind == "account" and set(entity.users) != set(have.users):
            found.append(Drift(entity.kind, entity.name, "users", applied=sorted(entity.users),
                               actual=sorted(have.users)))
        if entity.fairshare is not None and entity.fairshare != have.fairshare:
            found.append(Drift(entity.kind, entity.name, "Fairshare", applied=entity.fairshare,
                               actual=have.fairshare))
        for name in LIMIT_FIELDS:
            mine, theirs = entity.limits(name), have.limits(name)
            for tres in sorted(set(mine) | set(theirs)):
                if mine.get(tres) != theirs.get(tres):
                    found.append(Drift(entity.kind, entity.name, name, tres, mine.get(tres), theirs.get(tres)))
        for missing in [qos for qos in entity.qos if qos not in have.qos]:
            found.append(Drift(entity.kind, entity.name, "QOS", missing, applied=True, actual=False))
        for missing in [flag for flag in entity.flags if flag not in have.flags]:
            found.append(Drift(entity.kind, entity.name, "Flags", missing, applied=True, actual=False))
    return found
