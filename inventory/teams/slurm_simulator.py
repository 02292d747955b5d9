"""A simulated Slurm accounting database for the demo (``SLURM_SYNC_BACKEND=simulator``): it answers the
``sacctmgr`` and ``scontrol`` commands the sync runs (``sacctmgr``'s readers and writers) from a JSON file in
``VAR_DIR``, as a real cluster would, so that ``make demo`` shows a diff to approve, applies it and reads it back
with no Slurm installed. Only those commands are understood; anything else fails as sacctmgr fails.

The file holds ``associations`` (dicts of ``sacctmgr.ASSOC_FIELDS``), ``qos`` (of ``QOS_FIELDS``), ``config``
(``scontrol show config``'s keys) and ``partitions`` (``scontrol show partition -o``'s). ``seed`` writes the demo's
cluster: the simulator's teams as accounts, some limits that differ from the portal's allocations.
"""

import json
import os
import subprocess
from pathlib import Path

from django.conf import settings

from . import sacctmgr

CONFIG = {
    "AccountingStorageEnforce": "associations,limits,qos,safe",
    "AccountingStorageTRES": "cpu,mem,energy,node,billing,fs/disk,vmem,pages,gres/gpu",
    "PriorityDecayHalfLife": "7-00:00:00",
    "PriorityUsageResetPeriod": "NONE",
    "PriorityType": "priority/multifactor",
}


def path():
    return Path(settings.VAR_DIR) / "slurm-simulator.json"


def load():
    try:
        return json.loads(path().read_text())
    except FileNotFoundError:
        return {"associations": [], "qos": [], "config": dict(CONFIG), "partitions": {}}


def save(state):
    target = path()
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_suffix(".tmp")
    temporary.write_text(json.dumps(state, indent=1, sort_keys=True))
    os.replace(temporary, target)  # a reader never sees half a file


def seed(cluster, accounts, partitions):
    """The demo's cluster: ``accounts`` ``{name: {"users": [...], "share": n, "grptres": "gres/gpu=8", ...}}`` under
    root, ``partitions`` ``{name: {"TRESBillingWeights": "...", "AllowQos": "ALL"}}``; replaces the file."""
    state = {"associations": [association(cluster, "root", parent="", share=1)], "qos": [qos("normal")],
             "config": {**CONFIG, "ClusterName": cluster}, "partitions": partitions}
    for name, settings_ in accounts.items():
        state["associations"].append(association(cluster, name, share=settings_.get("share", 1),
                                                 grptres=settings_.get("grptres", ""),
                                                 grptresmins=settings_.get("grptresmins", "")))
        for user in settings_.get("users", []):
            state["associations"].append(association(cluster, name, user=user, parent=""))
    save(state)
    return state


def association(cluster, account, user="", parent="root", share=1, grptres="", grptresmins="", qos_list="normal"):
    """A row as 22.05 prints it (a user's association: no parent, a share of 1; tests/fixtures/slurm)."""
    return {"cluster": cluster, "account": account, "user": user, "partition": "", "parentname": parent,
            "share": str(share), "grptres": grptres, "grptresmins": grptresmins, "maxtres": "", "qos": qos_list}


def qos(name, flags=""):
    return {"name": name, "flags": flags, "grptres": "", "grptresmins": "", "maxtres": "", "maxtresperaccount": "",
            "usagefactor": "1.000000"}


class Refused(Exception):
    pass


def runner():
    """A ``subprocess.run`` stand-in answering from the file."""
    return run


def run(command, **kwargs):
    program, args = os.path.basename(command[0]), [arg for arg in command[1:] if arg != "-i"]
    state = load()
    try:
        if program == "scontrol":
            output = scontrol(state, args)
        elif program == "squeue":
            output = ""  # the simulated cluster's queue is empty
        elif program == "sacctmgr":
            output, changed = sacctmgr_command(state, args)
            if changed:
                save(state)
        else:
            raise Refused(f"{program}: command not found")
    except Refused as error:
        return subprocess.CompletedProcess(command, 1, "", f" {error}\n")
    return subprocess.CompletedProcess(command, 0, output, "")


def scontrol(state, args):
    if args == ["show", "config"]:
        return "Configuration data as of now\n" + "".join(f"{key} = {value}\n" for key, value in
                                                          sorted(state["config"].items()))
    if args == ["show", "partition", "-o"]:
        return "".join(f"PartitionName={name} " + " ".join(f"{key}={value}" for key, value in fields.items()) + "\n"
                       for name, fields in sorted(state["partitions"].items()))
    raise Refused(f"scontrol: unknown command {' '.join(args)}")


def clauses(words):
    """``key=value`` words → dict (keys lower-cased)."""
    found = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep:
            raise Refused(f"Unknown option: {word}")
        found[key.lower()] = value
    return found


def sacctmgr_command(state, args):
    """(stdout, changed) of one sacctmgr call."""
    if args[:2] == ["show", "assoc"]:
        where = clauses(word for word in args[2:] if "=" in word and not word.startswith("format="))
        fields = next(word for word in args if word.startswith("format=")).split("=", 1)[1].split(",")
        accounts = set(where["account"].split(",")) if "account" in where else None
        rows = [row for row in state["associations"] if row["cluster"] == where.get("cluster", row["cluster"])
                and (accounts is None or row["account"] in accounts)]
        return "".join("|".join(row[name] for name in fields) + "\n" for row in rows), False
    if args[:2] == ["show", "qos"]:
        where = clauses(word for word in args[2:] if "=" in word and not word.startswith("format="))
        fields = next(word for word in args if word.startswith("format=")).split("=", 1)[1].split(",")
        names = set(where["name"].split(",")) if "name" in where else None
        rows = [row for row in state["qos"] if names is None or row["name"] in names]
        return "".join("|".join(row[name] for name in fields) + "\n" for row in rows), False
    if args[:2] == ["add", "account"]:
        options = clauses(args[3:])
        if find(state, options["cluster"], args[2]):
            raise Refused("Nothing new added.")
        state["associations"].append(association(options["cluster"], args[2], parent=options.get("parent", "root")))
        return f" Adding Account(s)\n  {args[2]}\n", True
    if args[:2] == ["add", "user"]:
        options = clauses(args[3:])
        account = find(state, options["cluster"], options["account"])
        if account is None:
            raise Refused(f"No account {options['account']}")
        if find(state, options["cluster"], options["account"], args[2]):
            raise Refused("Nothing new added.")
        state["associations"].append(association(options["cluster"], options["account"], user=args[2], parent="",
                                                 qos_list=account["qos"]))
        return f" Adding User(s)\n  {args[2]}\n", True
    if args[:3] == ["remove", "user", "where"]:
        where = clauses(args[3:])
        row = find(state, where["cluster"], where["account"], where["name"])
        if row is None:
            raise Refused("Nothing deleted")
        state["associations"].remove(row)
        return f" Deleting user associations...\n  U = {where['name']} A = {where['account']}\n", True
    if args[:3] in (["modify", "account", "where"], ["modify", "qos", "where"]):
        split = args.index("set")
        where, changes = clauses(args[3:split]), args[split + 1:]
        if args[1] == "account":
            rows = [row for row in state["associations"] if row["account"] == where["name"]
                    and row["cluster"] == where["cluster"]]
            own = [row for row in rows if not row["user"]]
        else:
            rows = own = [row for row in state["qos"] if row["name"] == where["name"]]
        if not own:
            raise Refused("Nothing modified")
        for change in changes:
            modify(own[0], rows, change)
        return f" Modified {args[1]} associations...\n", True
    if args[:2] == ["add", "qos"]:
        if any(row["name"] == args[2] for row in state["qos"]):
            raise Refused("Nothing new added.")
        flags = clauses(args[3:]).get("flags", "")
        state["qos"].append(qos(args[2], flags))
        return f" Adding QOS(s)\n  {args[2]}\n", True
    raise Refused(f"Unknown option: {' '.join(args[:2])}")


def find(state, cluster, account, user=""):
    return next((row for row in state["associations"] if row["cluster"] == cluster and row["account"] == account
                 and row["user"] == user and not row["partition"]), None)


def modify(row, rows, change):
    """One ``Key=value`` of a ``modify … set`` on ``row`` (a QOS granted reaches the account's users' rows too)."""
    key, _, value = change.partition("=")
    if key in ("GrpTRES", "GrpTRESMins"):
        field = key.lower()
        limits = sacctmgr.parse_tres(row[field])
        for name, number in sacctmgr.parse_tres(value).items():
            if number < 0:
                limits.pop(name, None)
            else:
                limits[name] = number
        row[field] = sacctmgr.format_tres(limits) if limits else ""
    elif key == "Fairshare":
        row["share"] = value
    elif key == "QOS+":
        for each in rows:
            granted = [name for name in each["qos"].split(",") if name]
            if value not in granted:
                each["qos"] = ",".join(sorted([*granted, value]))
    elif key == "Flags+":
        flags = [flag for flag in row["flags"].split(",") if flag]
        row["flags"] = ",".join(sorted({*flags, value}))
    elif key == "RawUsage":
        pass  # usage is not simulated
    else:
        raise Refused(f"Unknown option: {change}")
