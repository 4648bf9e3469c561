"""The audit trail's context.

Triggers write the audit rows (platform_events/sql/0001_audit.sql); Python only says who is acting
and why, with ``SET LOCAL lifecycle.*`` inside the transaction of the change (django-pghistory's
technique). Without it, a change is audited as the database role (actor type SYSTEM).
"""

import uuid

from django.db import connection

CONTEXT_FIELDS = ["actor_id", "actor_display", "actor_ip", "actor_user_agent", "reason", "request_id", "correlation_id"]


def set_audit_context(
    *,
    actor=None,
    reason: str | None = None,
    ip: str | None = None,
    user_agent: str | None = None,
    request_id: uuid.UUID | None = None,
    correlation_id: uuid.UUID | None = None,
) -> None:
    """Name the acting staff user (and why, from where) for the rest of the current transaction.

    Given nothing, it changes nothing: a service called without an actor keeps the context its
    caller set (the admin sets the IP, user agent and request id too).
    """
    if not connection.in_atomic_block:
        raise RuntimeError("set_audit_context() must run inside transaction.atomic(): SET LOCAL ends with it")
    values = {
        "actor_id": str(actor.pk) if actor else None,
        "actor_display": actor.get_username() if actor else None,
        "actor_ip": ip,
        "actor_user_agent": user_agent,
        "reason": reason,
        "request_id": str(request_id) if request_id else None,
        "correlation_id": str(correlation_id) if correlation_id else None,
    }
    if not any(values.values()):
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT " + ", ".join(f"set_config('lifecycle.{name}', %s, true)" for name in CONTEXT_FIELDS),
            [values[name] or "" for name in CONTEXT_FIELDS],
        )
