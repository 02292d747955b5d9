"""inventory/teams/slurm_checks.py on the saved real configuration of the test cluster (tests/fixtures/slurm/
sacctmgr_22.05.8: AccountingStorageTRES with gres/gpu, Enforce associations,limits,qos,safe, PriorityDecayHalfLife
7 days, PriorityUsageResetPeriod NONE, partition gpu with AllowQos=ALL) and on altered copies of it."""

import pytest

from inventory.teams import sacctmgr, slurm_checks
from inventory.teams.slurm_checks import billing_weights, check, duration_seconds, explain_reason
from tests.helpers.paths import FIXTURES

SAVED = FIXTURES / "slurm" / "sacctmgr_22.05.8"


def saved(name):
    return (SAVED / name).read_text()


def config(**changes):
    values = sacctmgr.parse_config(saved("config.txt"))
    values.update(changes)
    return values


ASSOCIATIONS = sacctmgr.parse_associations(saved("assoc.txt"))
QOS = sacctmgr.parse_qos(saved("qos.txt"))
PARTITIONS = sacctmgr.parse_partitions(saved("partitions.txt"))


def codes(warnings):
    return [(w.code, w.subject) for w in warnings]


def test_the_saved_cluster_warns_about_decay_and_the_partition_qos():
    warnings = check(config(), ASSOCIATIONS, QOS, PARTITIONS, ["gres/gpu"])
    # physics' GrpTRESMins decays (7 days); the NoDecay QOSes keep their usage, so a monthly budget there needs a
    # reset by hand; partition gpu lets any QOS in, so physics-gpu's budget can be escaped.
    assert codes(warnings) == [("budget_decays", "physics"), ("qos_usage_kept", "NoDecay"),
                               ("partition_allows_any_qos", "gpu")]
    assert warnings[0].fix.startswith("PriorityDecayHalfLife=0 with PriorityUsageResetPeriod=MONTHLY")
    assert warnings[2].fix == "PartitionName=gpu AllowQos=physics-gpu in slurm.conf"
    assert all(w.severity == slurm_checks.WARNING for w in warnings)


def test_without_gres_gpu_in_accounting_storage_tres():
    altered = config(AccountingStorageTRES="cpu,mem,energy,node,billing,fs/disk,vmem,pages")
    warnings = check(altered, ASSOCIATIONS, QOS, PARTITIONS)
    assert codes(warnings)[0] == ("gpu_not_tracked", "AccountingStorageTRES")
    assert warnings[0].severity == slurm_checks.ERROR and "AccountingStorageTRES=gres/gpu" in warnings[0].fix


def test_a_gpu_model_limit_needs_its_typed_tres():
    warnings = check(config(), [], [], {}, ["gres/gpu", "gres/gpu:a100"])
    assert codes(warnings) == [("gpu_type_not_tracked", "gres/gpu:a100")]
    assert warnings[0].fix == (
        "add gres/gpu:a100 to AccountingStorageTRES (AccountingStorageTRES=gres/gpu,gres/gpu:a100)")
    tracked = config(AccountingStorageTRES="cpu,mem,gres/gpu,gres/gpu:a100")
    assert check(tracked, [], [], {}, ["gres/gpu", "gres/gpu:a100"]) == []


@pytest.mark.parametrize("enforce, expected", [
    ("associations", [("limits_not_enforced", "AccountingStorageEnforce"),
                      ("qos_not_enforced", "AccountingStorageEnforce")]),
    ("", [("limits_not_enforced", "AccountingStorageEnforce"), ("qos_not_enforced", "AccountingStorageEnforce")]),
    ("associations,limits", [("budget_can_overrun", "AccountingStorageEnforce"),
                             ("qos_not_enforced", "AccountingStorageEnforce")]),
    ("associations,safe,qos", []),  # safe implies limits
])
def test_enforcement(enforce, expected):
    found = codes(check(config(AccountingStorageEnforce=enforce, PriorityDecayHalfLife="00:00:00",
                               PriorityUsageResetPeriod="MONTHLY"), ASSOCIATIONS, QOS, {}, monthly=False))
    assert found == expected


def test_fixed_budgets_without_decay_need_a_monthly_reset():
    no_decay = config(PriorityDecayHalfLife="00:00:00")
    assert codes(check(no_decay, ASSOCIATIONS, [], {})) == [("budget_never_resets", "PriorityUsageResetPeriod")]
    assert check(no_decay, ASSOCIATIONS, [], {}, monthly=False) == []  # a budget for the whole project
    assert check(config(PriorityDecayHalfLife="0", PriorityUsageResetPeriod="MONTHLY"), ASSOCIATIONS, [], {}) == []


def test_a_qos_budget_without_nodecay_decays():
    decaying = [q for q in QOS if q.name == "budget"]
    decaying[0].flags = []
    assert codes(check(config(), [], decaying, {})) == [("qos_budget_decays", "budget")]
    assert check(config(), [], decaying, {})[0].fix == "sacctmgr modify qos budget set Flags+=NoDecay"


@pytest.mark.parametrize("text, seconds", [
    ("7-00:00:00", 7 * 86400), ("00:00:00", 0), ("NONE", 0), ("1-12:30:00", 131400), ("14:00", 14 * 60),
    ("10", 600),  # a bare number in slurm.conf is minutes
])
def test_durations(text, seconds):
    assert duration_seconds(text) == seconds


def test_billing_weights_per_partition():
    assert billing_weights(PARTITIONS) == {"gpu": {}}  # the test cluster sets none: Slurm bills CPUs
    line = saved("partitions.txt").strip() + " TRESBillingWeights=CPU=1.0,Mem=0.25G,GRES/gpu=2.0\n"
    line += "PartitionName=a100 Nodes=vm TRESBillingWeights=GRES/gpu:a100=4,Mem=256\n"
    assert billing_weights(sacctmgr.parse_partitions(line)) == {
        "gpu": {"cpu": 1.0, "mem": 0.25, "gres/gpu": 2.0},
        "a100": {"gres/gpu:a100": 4.0, "mem": 256 * 1024.0},  # no unit: per MB
    }
    with pytest.raises(ValueError):
        slurm_checks.parse_billing_weights("CPU=lots")


def test_pending_reasons_in_words():
    assert explain_reason("AssocGrpGRESMinutes") == "the team's GPU-hour budget in Slurm is used up"
    assert explain_reason("QOSGrpGRES").startswith("the team already uses all the GPUs its partition allocation")
    assert explain_reason("SomethingNew") == "Slurm says: SomethingNew"
    assert explain_reason("None") == explain_reason(None) == ""
