"""inventory/teams/sacctmgr.py without a cluster: saved real answers of Slurm 22.05.8 (tests/fixtures/slurm/
sacctmgr_22.05.8, its README says the state they show) parsed to hand-written values, the commands built, and how
a command is run (prefix from the environment, ssh quoting, errors)."""

import subprocess
from types import SimpleNamespace

import pytest

from inventory.teams import sacctmgr
from inventory.teams.sacctmgr import Association, Qos, SlurmCommandError
from tests.helpers.paths import FIXTURES

SAVED = FIXTURES / "slurm" / "sacctmgr_22.05.8"


def saved(name):
    return (SAVED / name).read_text()


def test_associations_of_the_saved_cluster():
    by_key = {(a.account, a.user): a for a in sacctmgr.parse_associations(saved("assoc.txt"))}
    assert sorted(by_key) == [("chemistry", ""), ("chemistry", "daemon"), ("chemistry", "nobody"),
                              ("physics", ""), ("physics", "root"), ("root", ""), ("root", "root")]
    assert by_key[("physics", "")] == Association(
        cluster="portaltest", account="physics", parent="root", share=10, grp_tres={"gres/gpu": 8},
        grp_tres_mins={"billing": 100000, "gres/gpu": 6000}, max_tres={"gres/gpu": 4}, qos=["normal", "physics-gpu"])
    # A user's association shows the MaxTRES it inherits, not its account's Grp limits.
    assert by_key[("physics", "root")] == Association(
        cluster="portaltest", account="physics", user="root", share=1, max_tres={"gres/gpu": 4},
        qos=["normal", "physics-gpu"])
    assert by_key[("chemistry", "")].grp_tres == {"gres/gpu": 2} and by_key[("chemistry", "")].grp_tres_mins == {}
    assert Association.from_dict(by_key[("physics", "")].as_dict()) == by_key[("physics", "")]


def test_qos_of_the_saved_cluster():
    assert sacctmgr.parse_qos(saved("qos.txt")) == [
        Qos("normal"),
        Qos("budget", flags=["NoDecay"], grp_tres_mins={"gres/gpu": 100}),
        Qos("physics-gpu", flags=["NoDecay"], grp_tres={"gres/gpu": 4}, grp_tres_mins={"gres/gpu": 600}),
    ]


def test_config_and_partitions_of_the_saved_cluster():
    config = sacctmgr.parse_config(saved("config.txt"))
    assert config["AccountingStorageTRES"] == "cpu,mem,energy,node,billing,fs/disk,vmem,pages,gres/gpu"
    assert config["AccountingStorageEnforce"] == "associations,limits,qos,safe"
    assert (config["PriorityDecayHalfLife"], config["PriorityUsageResetPeriod"]) == ("7-00:00:00", "NONE")
    assert config["ClusterName"] == "portaltest" and config["AccountingStoreFlags"] == ""  # "(null)"
    partitions = sacctmgr.parse_partitions(saved("partitions.txt"))
    assert list(partitions) == ["gpu"]
    assert (partitions["gpu"]["AllowQos"], partitions["gpu"]["TRES"]) == (
        "ALL", "cpu=2,mem=1M,node=1,billing=2,gres/gpu=8")


@pytest.mark.parametrize("text, limits", [
    ("", {}),
    ("gres/gpu=8,billing=100", {"gres/gpu": 8, "billing": 100}),
    ("gres/gpu:a100=4,gres/gpu=8", {"gres/gpu:a100": 4, "gres/gpu": 8}),
    ("cpu=64,mem=1024", {"cpu": 64, "mem": 1024}),
])
def test_tres_strings(text, limits):
    assert sacctmgr.parse_tres(text) == limits


@pytest.mark.parametrize("text", ["gres/gpu", "gres/gpu=x", "gres/gpu=1;rm -rf /=2", "GPU=1 where"])
def test_bad_tres_strings_are_refused(text):
    with pytest.raises(ValueError):
        sacctmgr.parse_tres(text)


def test_commands_built():
    assert sacctmgr.render(sacctmgr.add_account_args("portaltest", "physics", "root", "physics team", "portal")) == (
        "sacctmgr -i add account physics Cluster=portaltest Parent=root 'Description=physics team' "
        "Organization=portal")
    assert sacctmgr.add_user_args("portaltest", "alice", "physics") == [
        "add", "user", "alice", "Account=physics", "Cluster=portaltest"]
    assert sacctmgr.remove_user_args("portaltest", "alice", "physics") == [
        "remove", "user", "where", "name=alice", "account=physics", "cluster=portaltest"]
    assert sacctmgr.modify_account_args("portaltest", "physics", {
        "GrpTRESMins": {"gres/gpu:a100": 6000, "gres/gpu": -1}, "Fairshare": 10, "QOS+": "physics-gpu"}) == [
        "modify", "account", "where", "name=physics", "cluster=portaltest", "set",
        "GrpTRESMins=gres/gpu=-1,gres/gpu:a100=6000", "Fairshare=10", "QOS+=physics-gpu"]
    assert sacctmgr.add_qos_args("physics-gpu", ["NoDecay"]) == ["add", "qos", "physics-gpu", "Flags=NoDecay"]
    assert sacctmgr.modify_qos_args("physics-gpu", {"GrpTRES": {"gres/gpu": 2}}) == [
        "modify", "qos", "where", "name=physics-gpu", "set", "GrpTRES=gres/gpu=2"]
    assert sacctmgr.render(sacctmgr.reset_usage_args("portaltest", qos="physics-gpu")) == (
        "sacctmgr -i modify qos where name=physics-gpu cluster=portaltest set RawUsage=0")
    assert sacctmgr.reset_usage_args("portaltest", account="physics")[:3] == ["modify", "account", "where"]
    with pytest.raises(ValueError):
        sacctmgr.reset_usage_args("portaltest")


@pytest.mark.parametrize("build", [
    lambda: sacctmgr.add_account_args("portaltest", "Physics Team"),
    lambda: sacctmgr.add_account_args("portaltest", "physics", description="it's"),
    lambda: sacctmgr.add_user_args("portaltest", "bob where", "physics"),
    lambda: sacctmgr.add_user_args("portaltest", "-i", "physics"),
    lambda: sacctmgr.modify_account_args("portaltest", "physics", {"QOS+": "a,b"}),
])
def test_names_that_could_change_the_command_are_refused(build):
    with pytest.raises(ValueError):
        build()


class Recorder:
    """Stands in for subprocess.run: records the command, answers ``result``."""

    def __init__(self, returncode=0, stdout="", stderr="", raises=None):
        self.commands, self.result, self.raises = [], SimpleNamespace(
            returncode=returncode, stdout=stdout, stderr=stderr), raises

    def __call__(self, command, **kwargs):
        self.commands.append(command)
        assert "shell" not in kwargs and kwargs["timeout"] > 0
        if self.raises:
            raise self.raises
        return self.result


def test_prefix_from_the_environment_and_ssh_quoting(monkeypatch, settings):
    runner = Recorder()
    sacctmgr.write(sacctmgr.add_account_args("portaltest", "physics", description="physics team"), runner=runner)
    assert runner.commands[-1][:4] == ["sacctmgr", "-i", "add", "account"]
    assert runner.commands[-1][-1] == "Description=physics team"  # one argument, no shell
    monkeypatch.setenv("SLURM_SACCTMGR", "ssh -o BatchMode=yes slurm-head /usr/bin/sacctmgr")
    sacctmgr.write(sacctmgr.add_account_args("portaltest", "physics", description="physics team"), runner=runner)
    assert runner.commands[-1][:5] == ["ssh", "-o", "BatchMode=yes", "slurm-head", "/usr/bin/sacctmgr"]
    assert runner.commands[-1][-1] == "'Description=physics team'"  # the remote shell splits it again
    settings.SLURM_SCONTROL = "/opt/slurm/bin/scontrol"  # the settings win over the environment
    monkeypatch.setenv("SLURM_SCONTROL", "scontrol-from-env")
    sacctmgr.read_config(runner=runner)
    assert runner.commands[-1] == ["/opt/slurm/bin/scontrol", "show", "config"]


@pytest.mark.parametrize("runner, said", [
    (Recorder(1, " Nothing new added.\n", ""), "exited with 1: Nothing new added."),
    (Recorder(1, "", "sacctmgr: error: Unknown option: GrpTRES=gres/gpu:a100=4\n"), "Unknown option"),
    (Recorder(raises=subprocess.TimeoutExpired("sacctmgr", 60)), "no answer after 60 s"),
    (Recorder(raises=FileNotFoundError(2, "No such file or directory")), "could not run"),
])
def test_errors_carry_the_command_and_what_it_said(runner, said):
    with pytest.raises(SlurmCommandError) as error:
        sacctmgr.write(sacctmgr.add_account_args("portaltest", "physics"), runner=runner)
    assert said in str(error.value)
    assert error.value.command[:3] == ["sacctmgr", "-i", "add"]
    assert str(error.value).startswith("sacctmgr -i add account physics Cluster=portaltest Parent=root: ")


def test_readers_ask_for_their_fields(monkeypatch):
    runner = Recorder(stdout=saved("assoc.txt"))
    assert len(sacctmgr.read_associations("portaltest", ["physics", "chemistry"], runner=runner)) == 7
    assert runner.commands[-1] == [
        "sacctmgr", "show", "assoc", "-P", "--noheader", "where", "cluster=portaltest", "account=physics,chemistry",
        "format=cluster,account,user,partition,parentname,share,grptres,grptresmins,maxtres,qos"]
