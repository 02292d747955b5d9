"""Demo support data for ``manage.py seed_demo`` (called after the fleet and planning's contracts exist): a support
engineer and a researcher account, their teams, and a handful of tickets in different states and priorities,
one breaching its SLA, one waiting on the requester (clock paused), one opened from a telemetry fault (the ECC
errors of zrh-h100-012's GPU 6, degraded by the fleet's demo incidents); and two notification rules (the manager's
own, at once, for hardware faults; llm-pretrain's daily digest of its allocation and tickets), mail going to files
under ``var/mail/`` in the demo.

Idempotent: accounts and teams are matched by name and only written where they differ; a ticket is matched by
its title and created (with its story: assignment, comments, status changes at realistic times, through
``support.workflow``, without mail) only when missing, so a second run writes nothing."""

from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.utils import timezone

from inventory.models import GPU, Node, StorageSystem, Team, TeamMember
from inventory.telemetry import xid
from portal.roles import RESEARCHER, SUPPORT

from . import faults, workflow
from .eventrules.models import EventKind, NotificationRule
from .models import Ticket

ACCOUNTS = [("support", "demo-support", SUPPORT), ("researcher", "demo-researcher", RESEARCHER)]
SEEDS = "accounts, teams, tickets and notification rules"  # the progress line of ``seed_demo``
# The inventory's demo made the research teams; support adds its own team and its people, with their Slurm user
# names and roles: the researcher manages llm-pretrain (edits it, requests its allocations). (team, user, Slurm
# user, role)
SUPPORT_TEAM = {"name": "support-l1", "email": "support-l1@demo.example.org",
                "description": "First-line support: triage, RMA swaps, the telemetry faults' tickets."}
MEMBERS = [("llm-pretrain", "researcher", "amueller", TeamMember.Role.MANAGER),
           ("support-l1", "support", "", TeamMember.Role.MEMBER)]
S = Ticket.Status
H = timedelta(hours=1)


def sync_accounts(seeder):
    users = {}
    for username, password, role in ACCOUNTS:
        seeder.login(username, password, role)
        user, created = User.objects.get_or_create(username=username,
                                                   defaults={"email": f"{username}@demo.example.org"})
        if created or not user.check_password(password) or not user.is_active:
            user.set_password(password)
            user.is_active = True
            user.save()
        group, _ = Group.objects.get_or_create(name=role)
        if list(user.groups.all()) != [group]:
            user.groups.set([group])
        users[username] = user
    return users


def sync_teams(seeder, users):
    seeder.sync(Team, ("name",), [SUPPORT_TEAM])
    teams = {team.name: team for team in Team.objects.filter(name__in={name for name, *_ in MEMBERS})}
    seeder.sync(TeamMember, ("team", "user"), [
        {"team": teams[name], "user": users[username], "slurm_user": slurm_user, "role": role}
        for name, username, slurm_user, role in MEMBERS
    ])
    return teams


def gpu(hostname, slot):
    return GPU.objects.filter(node__hostname=hostname, slot=slot).first()


def stories(users, teams, now):
    """(ticket fields, [steps]); a step is (hours after opening, action, argument)."""
    support, researcher = users["support"], users["researcher"]
    node = {n.hostname: n for n in Node.objects.filter(hostname__in=[
        "zrh-h100-003", "zrh-h100-007", "lys-a100-004", "lys-h100-005"])}
    return [
        ({"title": "Training job stalls at step 12k on zrh-h100-003", "category": Ticket.Category.PERFORMANCE,
          "priority": "P2", "requester": researcher, "team": teams["llm-pretrain"], "node": node.get("zrh-h100-003"),
          "opened": now - 5 * H,
          "description": "Job **4242117** (64 GPUs) stalls at step ~12,000 every run; `NCCL_DEBUG=INFO` shows "
                         "the all-reduce waiting on rank 17, which runs on zrh-h100-003.\n\n- started Monday\n"
                         "- other nodes fine"},
         [(0.5, "assign", support), (0.5, "status", S.IN_PROGRESS),
          (0.6, "comment", "Looking at the NCCL logs and the node's InfiniBand counters."),
          (1, "internal", "mlx5_2 shows symbol errors since Monday: likely the cable. Drain before swapping.")]),
        ({"title": "GPU 3 fell off the bus (XID 79) on zrh-h100-007", "category": Ticket.Category.HARDWARE,
          "priority": "P2", "requester": support, "node": node.get("zrh-h100-007"), "gpu": gpu("zrh-h100-007", 3),
          "rma_number": "NV-RMA-2026-1187", "opened": now - 20 * H,
          "description": "XID 79 on GPU 3, node drained. DCGM level 3 fails on the GPU: RMA opened with NVIDIA."},
         [(0.2, "assign", support), (0.3, "status", S.IN_PROGRESS), (3, "status", S.WAITING_VENDOR),
          (3.1, "comment", "RMA NV-RMA-2026-1187 opened; replacement GPU ships within 2 business days.")]),
        ({"title": "Cannot reach lys-lustre-scratch from the inference pool", "category": Ticket.Category.STORAGE,
          "priority": "P1", "requester": researcher, "team": teams["llm-pretrain"],
          "storage_system": StorageSystem.objects.filter(name="lys-lustre-scratch").first(),
          "opened": now - 30 * H,
          "description": "`ls /scratch` hangs on lys-h100-001..004 since last night; checkpoints cannot be written."},
         [(1.5, "status", S.TRIAGED), (1.6, "comment", "Reproduced; the Lustre MDS is overloaded. Escalating.")]),
        ({"title": "Request: 16 more H200 GPUs for the Q1 pre-training run", "category": Ticket.Category.CAPACITY,
          "priority": "P4", "requester": researcher, "team": teams["llm-pretrain"], "opened": now - 72 * H,
          "description": "The Q1 run needs 16 more H200s from January for 6 weeks."},
         [(4, "assign", support), (4, "status", S.WAITING_REQUESTER),
          (4.1, "comment", "Which weeks exactly, and can the run start on H100s? The clock waits for your answer.")]),
        ({"title": "CUDA 12.8 driver mismatch on lys-a100-004", "category": Ticket.Category.SOFTWARE,
          "priority": "P3", "requester": researcher, "node": node.get("lys-a100-004"), "opened": now - 60 * H,
          "description": "`CUDA driver version is insufficient for CUDA runtime version` on lys-a100-004 only."},
         [(2, "assign", support), (2, "status", S.IN_PROGRESS),
          (20, "status", S.RESOLVED), (20.1, "comment", "Driver 570 reinstalled from the golden image.")]),
        ({"title": "Access to the vision partition", "category": Ticket.Category.ACCESS, "priority": "P4",
          "requester": researcher, "opened": now - 240 * H,
          "description": "Please add me to the `vision` Slurm account for the joint project."},
         [(3, "status", S.RESOLVED), (3.1, "comment", "Added to the vision account."), (30, "status", S.CLOSED)]),
    ]


def play(ticket, steps, users):
    support = users["support"]
    for hours, action, argument in steps:
        moment = ticket.opened + timedelta(hours=hours)
        if action == "assign":
            workflow.assign(ticket, argument, support, notify=False, now=moment)
        elif action == "status":
            workflow.change_status(ticket, argument, support, now=moment, notify=False)
        else:
            workflow.add_comment(ticket, support, argument, internal=action == "internal", notify=False, now=moment)


def seed(seeder, users):
    """Create the support demo; returns the tickets by title."""
    users = {**users, **sync_accounts(seeder)}
    teams = sync_teams(seeder, users)
    now = timezone.now()
    existing = set(Ticket.objects.values_list("title", flat=True))
    created = 0
    for fields, steps in stories(users, teams, now):
        if fields["title"] in existing:
            continue
        ticket = workflow.open_ticket(Ticket(**fields), fields["requester"], notify=False)
        play(ticket, steps, users)
        created += 1
    created += telemetry_ticket(existing)
    if created:
        seeder.created[Ticket._meta.verbose_name_plural] += created
    seeder.sync(NotificationRule, ("name",), notification_rules(users, teams), update=False)
    return {t.title: t for t in Ticket.objects.all()}


def telemetry_ticket(existing):
    """A ticket as the fault task opens it: repeated ECC errors on zrh-h100-012's GPU 6 (already degraded; the
    simulator gives it XID 63/94 episodes). The demo keeps hourly rollups, not the per-sample XID codes the ECC check
    reads, so the fault is written here with the detail text the check writes."""
    faulty = gpu("zrh-h100-012", 6)
    if faulty is None:
        return 0
    detail = f"14 samples reported an ECC XID in the last {settings.SUPPORT_FAULT_WINDOW_HOURS} h."
    fault = faults.Fault(Ticket.Fault.ECC, detail, node=faulty.node, gpu=faulty)
    if fault.title in existing:
        return 0
    return 1 if faults.open_ticket(fault, notify=False) else 0


def notification_rules(users, teams):
    """A manager's own rule and a team's digest: what a new manager sees under Notifications, and what the home
    page's faults would have sent (left alone once they exist: the demo users may change them)."""
    return [
        {"name": "Hardware faults, at once", "owner": users["manager"], "team": None,
         "events": [EventKind.XID.value, EventKind.DEGRADED.value], "xid_classes": [xid.HARDWARE],
         "channel": NotificationRule.Channel.EMAIL, "digest": NotificationRule.Digest.NONE},
        {"name": "llm-pretrain: allocation and tickets, daily", "owner": None, "team": teams["llm-pretrain"],
         "events": [EventKind.ALLOCATION.value, EventKind.SLA_BREACHED.value], "xid_classes": [],
         "channel": NotificationRule.Channel.EMAIL, "digest": NotificationRule.Digest.DAILY},
    ]
