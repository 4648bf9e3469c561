"""Reads of node assignment (tokenserver's get_user_records, get_old_user_records, count_users)."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection
from django.utils import timezone

from accounts.nodes.errors import UnknownName
from accounts.nodes.models import MAX_GENERATION, NODE_URL, NODE_URL_MAX, SERVICE_NAME, Node, Service

# tokenserver's default grace period for purge_old_records' rows: one week.
DEFAULT_GRACE = timedelta(days=7)


def service_id(service: str) -> int:
    """The service's id; UnknownName when no service has that name."""
    # A name no service can have is not looked up (a command line's stray NUL would be a DataError).
    valid = SERVICE_NAME.fullmatch(service)
    found = Service.objects.filter(service=service).values_list("id", flat=True).first() if valid else None
    if found is None:
        raise UnknownName(f"nodes: unknown service {service!r}")
    return found


def node_id(*, service: str, node: str) -> int:
    """The id of the service's node of that URL; UnknownName when the service has none."""
    sid = service_id(service)
    valid = len(node) <= NODE_URL_MAX and NODE_URL.fullmatch(node)
    found = Node.objects.filter(service_id=sid, node=node).values_list("id", flat=True).first() if valid else None
    if found is None:
        raise UnknownName(f"nodes: unknown node {node!r} for service {service!r}")
    return found


@dataclass(frozen=True)
class Record:
    """One assignment row, as purge_old_records and the tests read it."""

    uid: int
    account_id: int
    node: str | None
    downed: bool | None
    generation: int
    keys_changed_at: int | None
    client_state: str
    created_at: datetime
    replaced_at: datetime | None


COLUMNS = """
a.uid, a.account, n.node, n.downed, a.generation, a.keys_changed_at, a.client_state, a.created_at, a.replaced_at
"""


def assignment_records(*, service: str, account_id: int) -> list[Record]:
    """Every row of the account for the service, old ones too, oldest first."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {COLUMNS} FROM node_assignments a LEFT JOIN nodes n ON n.id = a.node"
            " WHERE a.service = %s AND a.account = %s ORDER BY a.created_at, a.uid",
            [service_id(service), account_id],
        )
        return [Record(*row) for row in cursor.fetchall()]


def current_record(*, service: str, account_id: int) -> Record | None:
    """The account's current row for the service, as assignment_current() picks it (the newest by
    generation, then creation), replaced or not, and without giving the account a node."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {COLUMNS} FROM node_assignments a LEFT JOIN nodes n ON n.id = a.node"
            " WHERE a.service = %s AND a.account = %s ORDER BY a.generation DESC, a.created_at DESC, a.uid DESC LIMIT 1",
            [service_id(service), account_id],
        )
        row = cursor.fetchone()
    return Record(*row) if row else None


def key_changes_since(*, service: str, account_id: int, since: datetime) -> list[datetime]:
    """When the account's client states for the service first appeared, oldest first, for those that
    appeared after ``since``: its key changes (a client state is never reused; the fresh node a
    replaced row gets copies the current one). The account's first state is no change."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT first_seen FROM (
                SELECT client_state, min(created_at) AS first_seen, min(min(created_at)) OVER () AS account_first
                FROM node_assignments WHERE service = %s AND account = %s GROUP BY client_state
            ) states
            WHERE first_seen > %s AND first_seen > account_first
            ORDER BY first_seen
            """,
            [service_id(service), account_id, since],
        )
        return [row[0] for row in cursor.fetchall()]


def old_assignment_records(
    *,
    service: str,
    grace_period: timedelta = DEFAULT_GRACE,
    limit: int = 100,
    after_uid: int = 0,
    before_uid: int | None = None,
) -> list[Record]:
    """Rows replaced longer than ``grace_period`` ago, by uid from ``after_uid`` (a keyset: the purge
    pages through them without tokenserver's OFFSET, which re-reads and can loop), below
    ``before_uid`` if given (a purger's share of the uids)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {COLUMNS} FROM node_assignments a LEFT JOIN nodes n ON n.id = a.node"
            " WHERE a.service = %s AND a.replaced_at < %s AND a.uid > %s AND (%s::bigint IS NULL OR a.uid < %s::bigint)"
            " ORDER BY a.uid LIMIT %s",
            [service_id(service), timezone.now() - grace_period, after_uid, before_uid, before_uid, limit],
        )
        return [Record(*row) for row in cursor.fetchall()]


def old_assignments_count(
    *, service: str, grace_period: timedelta = DEFAULT_GRACE, from_uid: int = 0, before_uid: int | None = None
) -> int:
    """How many rows old_assignment_records() would page through, uids from ``from_uid`` and below
    ``before_uid``."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM node_assignments WHERE service = %s AND replaced_at < %s"
            " AND uid >= %s AND (%s::bigint IS NULL OR uid < %s::bigint)",
            [service_id(service), timezone.now() - grace_period, from_uid, before_uid, before_uid],
        )
        return cursor.fetchone()[0]


def node_live_assignments_count(*, service: str, node: str) -> int:
    """The live assignments on a node: what unassigning or removing it would replace."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM node_assignments WHERE node = %s AND replaced_at IS NULL",
            [node_id(service=service, node=node)],
        )
        return cursor.fetchone()[0]


def assignments_count(*, service: str | None = None, as_of: datetime | None = None) -> int:
    """tokenserver's count_users: live assignments made by ``as_of`` (now), in one service or all."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM node_assignments WHERE replaced_at IS NULL AND created_at <= %s"
            " AND (%s::int IS NULL OR service = %s::int)",
            [as_of or timezone.now(), *(2 * [service_id(service) if service else None])],
        )
        return cursor.fetchone()[0]


@dataclass(frozen=True)
class AssignmentState:
    """What the account's history for a service says now, read without changing anything: the current
    row's numbers and keys, and its uid and node only while it is live on a node (otherwise the next
    sync gets a fresh node, keeping the keys)."""

    service: str
    account_id: int
    uid: int | None
    node: str | None
    generation: int
    keys_changed_at: int | None
    client_state: str
    first_seen_at: datetime

    @property
    def retired(self) -> bool:
        return self.generation >= MAX_GENERATION


def assignment_state(*, service: str, account_id: int) -> AssignmentState | None:
    """The account's current assignment for ``service`` as assignment_current() picks it (the newest
    by generation, then creation), or None if it never had one. A read only: where
    assignment_current() would give a replaced or node-less account a fresh node, this says node None."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT a.uid, n.node, a.generation, a.keys_changed_at, a.client_state, a.replaced_at,
                   min(a.created_at) OVER ()
            FROM node_assignments a LEFT JOIN nodes n ON n.id = a.node
            WHERE a.service = %s AND a.account = %s
            ORDER BY a.generation DESC, a.created_at DESC, a.uid DESC
            LIMIT 1
            """,
            [service_id(service), account_id],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    uid, node, generation, keys_changed_at, client_state, replaced_at, first_seen_at = row
    live = replaced_at is None and node is not None
    return AssignmentState(
        service,
        account_id,
        uid if live else None,
        node if live else None,
        generation,
        keys_changed_at,
        client_state,
        first_seen_at,
    )
