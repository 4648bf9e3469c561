"""Demo data for `make run`: accounts in every state, made by the factories the tests use, spread over
the last 30 days, storage nodes of a sync-1.5 service holding some of them, and the local staff logins
(admin, and one per role: support, auditor, integrator, privacy)."""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection, transaction
from django.utils.crypto import get_random_string

from accounts.models import Account, AccountStatus
from accounts.nodes import services as nodes
from lifecycle.backoffice.roles import ensure_roles
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.context import audit_context
from platform_events.db.history import history_rewrite

DEMO_DOMAIN = "demo.example.com"

# (label, factory traits, how many)
PLAN = [
    ("provisioned", {}, 30),
    ("active", {"active": True}, 100),
    ("suspended", {"suspended": True}, 15),
    ("never-active", {"suspended": True, "was_activated": False}, 5),
    ("deprovisioned", {"deprovisioned": True}, 5),
    # Erased: rows with no address or login left, their trail readable (and their sign-up dates not spread).
    ("erased", {"erased": True}, 2),
]

# The node service and its nodes (URL, capacity): the active accounts are spread over the ones up, by
# the allocator, so the node list shows several loads; the last is downed.
DEMO_SERVICE = "sync-1.5"
DEMO_NODES = [
    ("https://sync-1.us-west.demo.example.com", 200),
    ("https://sync-2.us-west.demo.example.com", 60),
    ("https://sync-3.us-east.demo.example.com", 35),
    ("https://sync-4.us-east.demo.example.com", 100),
]
DEMO_ASSIGNED = 80

# (role, username, group, the variable its password may come from: make run writes each to .env)
STAFF = [
    ("Admin", "admin", None, "DEMO_ADMIN_PASSWORD"),
    ("Support", "support", "Support", "DEMO_SUPPORT_PASSWORD"),
    ("Auditor", "auditor", "Auditor", "DEMO_AUDITOR_PASSWORD"),
    ("Integrator", "integrator", "Integrator", "DEMO_INTEGRATOR_PASSWORD"),
    ("Privacy", "privacy", "Privacy", "DEMO_PRIVACY_PASSWORD"),
]


def demo_accounts_loaded() -> bool:
    return Account.objects.filter(email__endswith=f"@{DEMO_DOMAIN}").exists()


def load_demo_accounts() -> int:
    """Make the demo accounts through the real lifecycle; return how many."""
    made = 0
    for label, traits, count in PLAN:
        for n in range(1, count + 1):
            AccountFactory(email=f"{label}{n}@{DEMO_DOMAIN}", login=f"{label}{n}", **traits)
            made += 1
    # Spread the sign-ups over the last 30 days, so the dashboard's chart has something to draw: history
    # the triggers keep, so it takes the owner's key, and the trail says why.
    with (
        transaction.atomic(),
        history_rewrite(),
        audit_context(reason="demo data: sign-ups spread over the last 30 days"),
        connection.cursor() as cursor,
    ):
        cursor.execute(
            """
            UPDATE accounts SET created_at = created_at - shift, status_changed_at = status_changed_at - shift,
                                activated_at = activated_at - shift
            FROM (SELECT id, make_interval(days => ((id * 7919) %% 30)::int, mins => ((id * 104729) %% 600)::int) AS shift
                  FROM accounts WHERE email LIKE %s) spread
            WHERE accounts.id = spread.id
            """,
            [f"%@{DEMO_DOMAIN}"],
        )
    load_demo_nodes()
    return made


def load_demo_nodes() -> None:
    """The sync-1.5 service, its nodes, and DEMO_ASSIGNED active accounts given a node each (the first
    ten with a key change, so their pages show a replaced row too); then the last node downed."""
    nodes.service_add(service=DEMO_SERVICE, pattern="{node}/1.5/{uid}", actor=None)
    for url, capacity in DEMO_NODES:
        nodes.node_add(service=DEMO_SERVICE, node=url, capacity=capacity, available=capacity, actor=None)
    active = Account.objects.filter(email__endswith=f"@{DEMO_DOMAIN}", status=AccountStatus.ACTIVE).order_by("id")
    for n, account_id in enumerate(active.values_list("id", flat=True)[:DEMO_ASSIGNED]):
        assignment = nodes.assignment_allocate(
            service=DEMO_SERVICE, account_id=account_id, client_state=f"{n:04x}" * 8, keys_changed_at=1_700_000_000_000
        )
        if n < 10:
            nodes.assignment_update(assignment, client_state=f"{n:04x}ff" * 5 + "ff", keys_changed_at=1_750_000_000_000)
    nodes.node_update(service=DEMO_SERVICE, node=DEMO_NODES[-1][0], downed=True, actor=None, reason="demo: a node down")


def ensure_staff_logins(passwords: dict[str, str]) -> dict[str, tuple[str, str | None]]:
    """The local staff logins, each in its role and with a password of its own (``passwords`` by role,
    else a random one). A login that exists keeps its password: seed_demo never resets anyone's.
    Returns {role: (username, the password given, or None when the login already existed)}."""
    ensure_roles()
    logins = {}
    for role, username, group, _ in STAFF:
        user, created = get_user_model().objects.get_or_create(
            username=username, defaults={"email": f"{username}@localhost", "is_staff": True}
        )
        if not created:
            logins[role] = (username, None)
            continue
        password = passwords.get(role) or get_random_string(16)
        user.is_superuser = group is None
        user.set_password(password)
        user.save()
        if group:
            user.groups.set([Group.objects.get(name=group)])
        logins[role] = (username, password)
    return logins
