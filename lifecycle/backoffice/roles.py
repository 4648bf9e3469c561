"""The staff roles, kept in step after every migrate (and by manage.py ensure_roles).

Superusers can do everything; each role is an auth group of its own name with what its job needs and
no more. None can add, change or delete accounts, tokens or audit rows: state changes go through the
actions. Only Auditors may export the audit trail (CSV); only Integrators (and superusers) see
webhooks, API clients and storage nodes; only Privacy (and superusers) may reprovision or erase an account.
"""

from dataclasses import dataclass

from django.apps import apps
from django.contrib.auth.management import create_permissions
from django.contrib.auth.models import Group, Permission
from django.db import DEFAULT_DB_ALIAS


@dataclass(frozen=True)
class Role:
    """A staff role: the auth group named ``name``, holding exactly ``permissions``."""

    name: str
    # What it may do, in one sentence: the admin's user pages and manage.py add_staff say it.
    may: str
    permissions: tuple[str, ...]


SUPPORT = Role(
    name="Support",
    may="find accounts, suspend and unsuspend them, deprovision them (not reprovision), resend activation, send"
    " password recovery, retry mail and read the audit trail in the admin (not export it)",
    permissions=(
        "accounts.view_account",
        "accounts.suspend_account",
        "accounts.deprovision_account",
        "accounts.resend_activation",
        "accounts.send_password_recovery",
        "tokens.view_token",
        "tokens.retry_mail",
        "tokens.view_job",
        "platform_events.view_auditevent",
    ),
)
# Support reads the trail in the admin, page by page; only Auditors take it away in bulk
# (every login, address, IP and user agent in it is personal data), each export audited.
AUDITOR = Role(
    name="Auditor",
    may="read the audit trail and export it as CSV",
    permissions=("platform_events.view_auditevent", "platform_events.export_auditevent"),
)
# Those who connect partners' systems: webhook endpoints (add, change, rotate, pause...), their
# deliveries (send again) and the events, their account data hidden (platform_events/outbox/admin.py);
# API clients (see them, narrow their scopes, revoke them). Support has none of it: an endpoint's URL
# decides where every account's changes go. Nobody gives a key powers they lack (SCOPE_POWERS in
# platform_events/api/clients.py): every scope acts on accounts, which this role may not, so a
# superuser makes the clients.
INTEGRATOR = Role(
    name="Integrator",
    may="manage webhook endpoints and their deliveries, narrow and revoke API clients (a superuser makes them),"
    " and manage storage services and nodes",
    permissions=(
        "platform_events.view_webhooksubscription",
        "platform_events.add_webhooksubscription",
        "platform_events.change_webhooksubscription",
        "platform_events.view_webhookdelivery",
        "platform_events.redeliver_webhookdelivery",
        "platform_events.view_outboxevent",
        "platform_events.view_apiclient",
        "platform_events.change_apiclient",  # narrowing the scopes, and revoking
        # Storage nodes of the services they connect: add services and nodes, change a node's
        # capacity, take it down or into backoff and unassign it (manage_node), read the assignments.
        # Support has none of it: a downed or unassigned node moves every account on it at once.
        "accounts.view_service",
        "accounts.add_service",
        "accounts.view_node",
        "accounts.add_node",
        "accounts.change_node",
        "accounts.manage_node",
        "accounts.view_nodeassignment",
    ),
)
# Those who handle people's requests to delete their account: find it, deprovision it, and bring it
# back (reprovision) when the person withdraws the request; its tokens and trail show what happened.
# Support may end an account but not bring one back: undoing a deletion is this role's call, apart
# from the help desk's, where a caller's word would be enough.
PRIVACY = Role(
    name="Privacy",
    may="find accounts, deprovision and reprovision them (reprovisioning mails a fresh activation e-mail),"
    " erase deprovisioned ones at once, and read the audit trail in the admin (not export it)",
    permissions=(
        "accounts.view_account",
        "accounts.deprovision_account",
        "accounts.reprovision_account",
        "accounts.erase_account",
        "tokens.view_token",
        "platform_events.view_auditevent",
    ),
)
ROLES = {role.name: role for role in (SUPPORT, AUDITOR, INTEGRATOR, PRIVACY)}


def ensure_roles(*, using: str = DEFAULT_DB_ALIAS, **kwargs) -> None:
    """Make the groups and give them exactly their permissions (idempotent), on the database ``using``
    (migrate's post_migrate sends the owner's)."""
    for app_config in apps.get_app_configs():  # the permissions of apps migrated after this one
        create_permissions(app_config, verbosity=0, using=using)
    for role in ROLES.values():
        group, _ = Group.objects.using(using).get_or_create(name=role.name)
        wanted = [name.split(".") for name in role.permissions]
        group.permissions.set(
            [
                Permission.objects.using(using).get(content_type__app_label=app, codename=codename)
                for app, codename in wanted
            ]
        )
