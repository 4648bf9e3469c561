"""Who acts, why and from where: the context the audit trail's triggers read.

Triggers write the audit rows (platform_events/sql/); Python only says who is acting and why, with
``SET LOCAL lifecycle.*`` inside the transaction of the change (django-pghistory's technique).
Without it, a change is audited as the database role (actor type SYSTEM), as a psql change is.

One way to say it: ``audit_context``, nestable. The admin (or a command) opens it once around a
whole action with the reason and the request; each service opens it again inside its own
transaction with the acting party it was given (a required argument), and the two merge::

    with audit_context(reason="chargeback", request=request):
        for account in accounts:
            account_suspend(account=account, actor=request.user)

The acting party is a staff user or an end user's account; its id says which (``staff:3``,
``account:3``). Work done after the response (a django-q2 task) cannot hold the request: the view
passes ``request_origin(request)``, plain strings, and the task opens ``audit_context(origin=...)``.
The request id is the request's own (platform_events/request_id.py): its log lines, its audit rows and
the log lines of the work it queued all carry it.
"""

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.db import connection

from platform_events.client_ip import client_ip
from platform_events.request_id import request_id_context

# The lifecycle.* settings the triggers read (audit_actor() in platform_events/sql/0001_audit.sql).
FIELDS = ["actor_id", "actor_display", "actor_ip", "actor_user_agent", "reason", "request_id", "correlation_id"]
# The part of them a request gives: what request_origin() returns and audit_context(origin=...) takes.
ORIGIN_FIELDS = frozenset({"actor_ip", "actor_user_agent", "request_id"})

_current: ContextVar[dict[str, str] | None] = ContextVar("audit_context", default=None)


@contextmanager
def audit_context(
    *,
    actor=None,
    reason: str | None = None,
    request=None,
    origin: dict[str, str] | None = None,
    correlation_id: uuid.UUID | None = None,
) -> Iterator[None]:
    """Name the acting party (``actor``: a staff user, or an end user's account), the ``reason`` and
    where the action came from: the ``request`` (its IP, user agent and a request id) or, in work
    done after the response, the ``origin`` that ``request_origin()`` took from it.

    Nested, the inner values add to the outer ones and win over them; a value not given (None)
    leaves the outer one in place. Inside a transaction the context applies at once; outside one,
    it applies to each transaction a service opens within it (services open it themselves). An
    ``origin``'s request id also marks the log lines written meanwhile (a task's, in the worker).
    """
    outer = _current.get() or {}
    values = {
        **outer,
        **_given(actor=actor, reason=reason, request=request, origin=origin, correlation_id=correlation_id),
    }
    token = _current.set(values)
    try:
        with request_id_context((origin or {}).get("request_id")):
            if values and connection.in_atomic_block:
                _apply(values)
            yield
    finally:
        _current.reset(token)
    # The rest of the transaction speaks for the outer context again (after an error, the
    # transaction or its savepoint is rolled back, and SET LOCAL with it).
    if values != outer and connection.in_atomic_block:
        _apply(outer)


def request_origin(request) -> dict[str, str]:
    """Where ``request`` came from, as ``audit_context(request=request)`` records it: ``actor_ip``,
    ``actor_user_agent`` and the ``request_id`` its log lines carry, each only when known. Plain
    strings, so a task's arguments can carry them: the rows and log lines the task writes later
    share the request's id."""
    origin = {
        "actor_ip": client_ip(request),
        "actor_user_agent": _printable(request.META.get("HTTP_USER_AGENT"), limit=512),
        # A request that did not pass the middleware (a test's RequestFactory): one id for this action.
        "request_id": getattr(request, "request_id", None) or str(uuid.uuid4()),
    }
    return {name: value for name, value in origin.items() if value}


def _given(*, actor, reason, request, origin, correlation_id) -> dict[str, str]:
    if request is not None and origin is not None:
        raise ValueError("audit_context: give request or origin, not both")
    if origin is not None and not origin.keys() <= ORIGIN_FIELDS:
        raise ValueError(f"audit_context: unknown origin fields {sorted(origin.keys() - ORIGIN_FIELDS)}")
    given = {
        "actor_id": _actor_id(actor) if actor else None,
        "actor_display": actor.get_username() if actor else None,
        "reason": reason,
        "correlation_id": str(correlation_id) if correlation_id else None,
    }
    given |= request_origin(request) if request is not None else origin or {}
    return {name: value for name, value in given.items() if value}


def _actor_id(actor) -> str:
    # Staff user 3 and account 3 are two people; asked, not imported (accounts is a layer above).
    return f"{getattr(actor, 'audit_kind', 'staff')}:{actor.pk}"


def _printable(value: str | None, *, limit: int) -> str | None:
    """A header as the trail keeps it: each NUL a space (PostgreSQL text cannot hold one; RFC 9110, section 5.5),
    at most ``limit`` characters (any client writes its own)."""
    return value.replace("\x00", " ")[:limit] if value else value


def _apply(values: dict[str, str]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT " + ", ".join(f"set_config('lifecycle.{name}', %s, true)" for name in FIELDS),
            [values.get(name, "") for name in FIELDS],
        )
