"""The demo's teams (``inventory.demo.seed_fleet``, before the nodes they own): the simulator's Slurm accounts
(``telemetry.simulator.USERS``), each with a description, a list address, a PI and members among the demo
accounts, under the Slurm user names the simulator's jobs run as. Support's demo adds the researcher."""

from .models import Team, TeamMember

M = TeamMember.Role
TEAMS = [
    {"name": "llm-pretrain", "email": "llm-pretrain@demo.example.org", "pi": "manager",
     "description": "Pre-training of the lab's language models (8B to 70B parameters) on the H100 and H200 pods."},
    {"name": "vision", "email": "vision@demo.example.org", "pi": "manager",
     "description": "Image and video models: detection, segmentation and multimodal encoders."},
    {"name": "speech", "email": "speech@demo.example.org", "pi": "manager",
     "description": "Speech recognition and synthesis; fine-tunes on the A100s in Lyon."},
    {"name": "platform", "email": "platform@demo.example.org", "pi": "admin",
     "description": "The inference platform: model serving for the whole lab (vLLM, Triton)."},
]
# (team, username, Slurm user, role)
MEMBERS = [
    ("llm-pretrain", "manager", "jkowalski", M.MANAGER),
    ("vision", "viewer", "lchen", M.MEMBER),
    ("platform", "admin", "svc-inference", M.MANAGER),
]


def sync_teams(seeder, users):
    """The teams and their members, matched by name (and team and user); returns {name: team}."""
    teams = seeder.sync(Team, ("name",), [{**row, "pi": users[row["pi"]]} for row in TEAMS])
    team = {name: obj for (name,), obj in teams.items()}
    seeder.sync(TeamMember, ("team", "user"), [
        {"team": team[name], "user": users[username], "slurm_user": slurm_user, "role": role}
        for name, username, slurm_user, role in MEMBERS
    ])
    return team
