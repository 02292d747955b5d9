"""A throwaway OpenLDAP server (``slapd``, Debian's ``slapd`` and ``ldap-utils`` packages) with a small directory:
five people and three groups, for the LDAP login tests.

- ``ada`` in ``gpu-admins`` and ``vision-team`` (one user in two groups), ``bob`` in ``vision-team``, ``fay`` in
  ``gpu-admins`` (a group keeps a member when ada leaves it), ``dan`` in no group, ``cyd`` in ``disabled`` (the
  deny group: a disabled account); each one's password is their name + "-pw".

It listens on a free loopback port with its database in a temporary folder, and is stopped and removed at the end.
Tests skip when the programs are missing (``missing``)."""

import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.pgserver import free_port, wait_for_port

SLAPD, LDAPADD, LDAPMODIFY = "/usr/sbin/slapd", "ldapadd", "ldapmodify"
SUFFIX = "dc=lab,dc=example"
ROOT_DN, ROOT_PASSWORD = f"cn=admin,{SUFFIX}", "root-secret"
PEOPLE, GROUPS = f"ou=people,{SUFFIX}", f"ou=groups,{SUFFIX}"
MEMBERS = {"gpu-admins": ["ada", "fay"], "vision-team": ["ada", "bob"], "disabled": ["cyd"]}
NAMES = {"ada": ("Ada", "Lovelace"), "bob": ("Bob", "Kahn"), "cyd": ("Cyd", "Charisse"), "dan": ("Dan", "Bricklin"),
         "fay": ("Fay", "Ajzenberg")}


def missing():
    """The programs this needs that are not installed, in words; empty when all are."""
    lacking = [] if Path(SLAPD).exists() else ["slapd"]
    lacking += [] if shutil.which(LDAPADD) and shutil.which(LDAPMODIFY) else ["ldap-utils"]
    try:
        import django_auth_ldap  # noqa: F401
        import ldap  # noqa: F401
    except ImportError:
        lacking.append("python-ldap and django-auth-ldap (make install-test builds them where libldap2-dev and "
                       "libsasl2-dev are installed)")
    return lacking


def person_dn(uid):
    return f"uid={uid},{PEOPLE}"


def group_dn(name):
    return f"cn={name},{GROUPS}"


def directory_ldif():
    entries = [f"dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\no: Lab\ndc: lab",
               f"dn: {PEOPLE}\nobjectClass: organizationalUnit\nou: people",
               f"dn: {GROUPS}\nobjectClass: organizationalUnit\nou: groups"]
    for uid, (given, family) in NAMES.items():
        entries.append(f"dn: {person_dn(uid)}\nobjectClass: inetOrgPerson\nuid: {uid}\ncn: {given} {family}\n"
                       f"givenName: {given}\nsn: {family}\nmail: {uid}@lab.example\nuserPassword: {uid}-pw")
    for name, uids in MEMBERS.items():
        entries.append(f"dn: {group_dn(name)}\nobjectClass: groupOfNames\ncn: {name}\n"
                       + "\n".join(f"member: {person_dn(uid)}" for uid in uids))
    return "\n\n".join(entries) + "\n"


@dataclass
class Directory:
    uri: str

    def env(self, **extra):
        """The portal's environment variables for this directory (docs/authentication.md)."""
        return {"LDAP_SERVER_URI": self.uri, "LDAP_BIND_DN": ROOT_DN, "LDAP_BIND_PASSWORD": ROOT_PASSWORD,
                "LDAP_USER_BASE": PEOPLE, "LDAP_GROUP_BASE": GROUPS, "LDAP_DENY_GROUP": group_dn("disabled"),
                "LDAP_TIMEOUT": "2", **extra}

    def modify(self, ldif):
        subprocess.run([LDAPMODIFY, "-x", "-H", self.uri, "-D", ROOT_DN, "-w", ROOT_PASSWORD], input=ldif,
                       text=True, check=True, capture_output=True, timeout=30)

    def remove_member(self, group, uid):
        self.modify(f"dn: {group_dn(group)}\nchangetype: modify\ndelete: member\nmember: {person_dn(uid)}\n")

    def add_member(self, group, uid):
        self.modify(f"dn: {group_dn(group)}\nchangetype: modify\nadd: member\nmember: {person_dn(uid)}\n")


@contextmanager
def throwaway_directory():
    folder, port = Path(tempfile.mkdtemp(prefix="cluster-portal-ldap-")), free_port()
    (folder / "db").mkdir()
    schemas = "\n".join(f"include /etc/ldap/schema/{name}.schema" for name in ("core", "cosine", "inetorgperson",
                                                                                "nis"))
    (folder / "slapd.conf").write_text(
        f"{schemas}\nmodulepath /usr/lib/ldap\nmoduleload back_mdb\npidfile {folder}/slapd.pid\n"
        f'database mdb\nsuffix "{SUFFIX}"\nrootdn "{ROOT_DN}"\nrootpw {ROOT_PASSWORD}\n'
        f"directory {folder}/db\nmaxsize 10485760\n")
    uri = f"ldap://127.0.0.1:{port}/"
    server = subprocess.Popen([SLAPD, "-f", str(folder / "slapd.conf"), "-h", uri, "-d", "0"],
                              stdout=subprocess.DEVNULL, stderr=open(folder / "slapd.log", "w"))  # noqa: SIM115
    try:
        wait_for_port(server, port, 20, (folder / "slapd.log").read_text)
        subprocess.run([LDAPADD, "-x", "-H", uri, "-D", ROOT_DN, "-w", ROOT_PASSWORD], input=directory_ldif(),
                       text=True, check=True, capture_output=True, timeout=30)
        yield Directory(uri)
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)
