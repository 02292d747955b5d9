"""A team's jobs Slurm holds now, and why: read live from slurmctld's queue (``squeue``), because accounting
(``sacct``, slurmdbd) records a pending job's reason only when the job starts or ends; a job over its team's budget
pends with ``AssocGrpGRESMinutes`` long before that. Run through the sync's ``runner`` (Slurm's own ``squeue``,
``SLURM_SQUEUE`` for a prefix such as ``ssh slurm-head squeue``; the demo's simulator has an empty queue)."""

from dataclasses import dataclass

from ..teams import sacctmgr
from ..teams.slurm_checks import explain_reason

FIELDS = "%i|%P|%u|%b|%r|%V"  # job id, partition, user, GPUs asked (tres-per-node), reason, submit time
LIMIT = 50


@dataclass
class Held:
    job_id: str
    partition: str
    user: str
    gres: str
    reason: str
    submitted: str

    @property
    def words(self):
        return explain_reason(self.reason)


def held_jobs(account, runner):
    """(the team's pending jobs with a reason other than waiting their turn, an error text or '')."""
    try:
        text = sacctmgr.run("squeue", ["-h", "-A", sacctmgr.checked(sacctmgr.NAME, account), "-t", "PENDING",
                                       "-o", FIELDS], timeout=5, runner=runner)
    except (sacctmgr.SlurmCommandError, ValueError) as error:
        return [], str(error)
    rows = []
    for line in text.splitlines()[:LIMIT]:
        parts = line.split("|")
        if len(parts) == 6 and parts[4] not in ("Priority", "None", ""):
            rows.append(Held(*parts))
    return rows, ""
