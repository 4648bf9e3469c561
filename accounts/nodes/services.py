"""Node assignment's operations, tokenserver's database.py over our accounts (docs/nodes.md).

An ``Assignment`` is tokenserver's user record: the account's current row for a service plus what its
history says (earlier client states, when it was first seen). The rules (one live row, numbers that
only go forwards, no reused client state, the node's load) are the database's
(accounts/sql/0014_nodes.sql); these functions make tokenserver's moves with them. Routine moves, the
ones a client's sync, the consumer and the purge make, go through the database's node_routine_*
functions (accounts/sql/0017_node_trail.sql), which only audit the client's own state or place
changing (new keys, a generation raised, a retirement, a live row replaced or deleted); an operator's
(nodes, placements, unassigning) are written directly and audited in full, with the actor and reason
given.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from math import ceil

from django.conf import settings
from django.db import connection, transaction

from accounts.models import Account, AccountStatus
from accounts.nodes.addresses import node_host_problem
from accounts.nodes.errors import (
    AlreadyAssigned,
    InvalidClientState,
    InvalidValue,
    NoAssignment,
    NoCapacity,
    Retired,
)
from accounts.nodes.models import (
    INT_MAX,
    MAX_GENERATION,
    NODE_URL,
    NODE_URL_MAX,
    PATTERN_MAX,
    SERVICE_NAME,
    SERVICE_NAME_MAX,
    Node,
    NodeAssignment,
    Service,
)
from accounts.nodes.selectors import current_record, node_id, node_live_assignments_count, service_id
from platform_events.audit.context import audit_context
from platform_events.db.refusals import lifecycle_rules
from platform_events.db.text import is_utf8

NODE_FIELDS = ("capacity", "available", "current_load", "downed", "backoff")
# Each number of a node, lowest and highest: a node of capacity 0 takes no one, a count starts at 0,
# and all are PostgreSQL integers.
NODE_NUMBER_RANGES = {"capacity": (1, INT_MAX), "available": (0, INT_MAX), "current_load": (0, INT_MAX)}

ROWS = """
SELECT a.uid, n.node, a.generation, a.keys_changed_at, a.client_state, a.created_at, a.replaced_at
FROM node_assignments a LEFT JOIN nodes n ON n.id = a.node
WHERE a.service = %s AND a.account = %s
ORDER BY a.created_at DESC, a.uid DESC
"""
ALLOCATE = """
SELECT a.uid, n.node, a.generation, a.keys_changed_at, a.client_state, a.created_at
FROM node_allocate(%s, %s, %s, %s, %s, %s, %s, %s) a LEFT JOIN nodes n ON n.id = a.node
"""
# A client's allocation: the least-loaded node, through the routine function (not audited).
ROUTINE_ALLOCATE = """
SELECT a.uid, n.node, a.generation, a.keys_changed_at, a.client_state, a.created_at
FROM node_routine_allocate(%s, %s, %s, %s, %s, %s, %s) a LEFT JOIN nodes n ON n.id = a.node
"""
ROUTINE_REKEY = """
SELECT a.uid, n.node
FROM node_routine_rekey(%s, %s, %s, %s, %s, %s, %s) a LEFT JOIN nodes n ON n.id = a.node
"""


@dataclass
class Assignment:
    """An account's current assignment for a service (tokenserver's user dict)."""

    service: str
    account_id: int
    uid: int
    node: str | None
    generation: int
    keys_changed_at: int
    client_state: str
    first_seen_at: datetime
    old_client_states: set[str] = field(default_factory=set)

    @property
    def retired(self) -> bool:
        return self.generation >= MAX_GENERATION


def _is_routine(routine: bool | None, actor) -> bool:
    """A change is a client's routine unless said otherwise; by default, one with an actor is not."""
    return actor is None if routine is None else routine


def assignment_current(*, service: str, account_id: int) -> Assignment | None:
    """tokenserver's get_user: the account's current assignment, or None if it never had one.

    The current row is the newest by (generation, created_at). When it was replaced or lost its node
    and the account is not retired, the account gets a fresh node that keeps its keys (tokenserver).
    Rows left live beside it (only psql could leave one) are marked replaced.
    """
    sid = service_id(service)
    with lifecycle_rules(), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(ROWS, [sid, account_id])
            rows = cursor.fetchall()
        if not rows:
            return None
        rows.sort(key=lambda r: (r[2], r[5]), reverse=True)
        uid, node, generation, keys_changed_at, client_state, created_at, replaced_at = rows[0]
        current = Assignment(service, account_id, uid, node, generation, keys_changed_at or 0, client_state, created_at)
        if (replaced_at is not None or node is None) and not current.retired:
            try:
                current = _allocate(
                    sid,
                    service,
                    account_id,
                    generation=generation,
                    client_state=client_state,
                    keys_changed_at=keys_changed_at,
                )
            except AlreadyAssigned:
                # Another request gave the account its node first (it waited on the live-row index).
                return assignment_current(service=service, account_id=account_id)
            current.first_seen_at = created_at
        for old_uid, _, _, _, old_state, old_created_at, old_replaced_at in rows[1:]:
            if old_state != current.client_state:
                current.old_client_states.add(old_state)
            if old_replaced_at is None:
                _call("node_routine_replace_row", [old_uid, created_at, True])
            current.first_seen_at = old_created_at
        return current


def _allocate(
    sid: int,
    service: str,
    account_id: int,
    *,
    generation: int = 0,
    client_state: str = "",
    keys_changed_at: int | None = None,
    node_id_: int | None = None,
    created_at: datetime | None = None,
    routine: bool = True,
) -> Assignment:
    """node_allocate() in a savepoint, so that a lost race leaves the caller's transaction usable: a
    client's (``routine``, on the least-loaded node) through node_routine_allocate(), an operator's
    directly (audited)."""
    rate = settings.NODE_CAPACITY_RELEASE_RATE
    if routine and node_id_ is None:
        query, params = ROUTINE_ALLOCATE, [sid, account_id, generation, client_state, keys_changed_at, rate, created_at]
    else:
        query = ALLOCATE
        params = [sid, account_id, generation, client_state, keys_changed_at, node_id_, rate, created_at]
    with lifecycle_rules(), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(query, params)
        uid, node, generation, keys_changed_at, client_state, created_at = cursor.fetchone()
    return Assignment(service, account_id, uid, node, generation, keys_changed_at or 0, client_state, created_at)


def assignment_allocate(
    *,
    service: str,
    account_id: int,
    generation: int = 0,
    client_state: str = "",
    keys_changed_at: int | None = None,
    node: str | None = None,
    created_at: datetime | None = None,
    actor=None,
    reason: str | None = None,
    routine: bool | None = None,
) -> Assignment:
    """tokenserver's allocate_user: a new live assignment, on ``node`` or the least-loaded node.

    Refused (AlreadyAssigned) when the account has a live one; NoCapacity when no node can take it.
    An operator's placement is audited (node_assignment.created); a client's first sync is routine
    and is not. ``routine`` says which; by default a placement with an ``actor`` is an operator's, and
    a placement on a given ``node`` always is.
    """
    _check(reason_problem(reason))
    sid = service_id(service)
    target = node_id(service=service, node=node) if node is not None else None
    with lifecycle_rules(), transaction.atomic(), audit_context(actor=actor, reason=reason):
        return _allocate(
            sid,
            service,
            account_id,
            generation=generation,
            client_state=client_state,
            keys_changed_at=keys_changed_at,
            node_id_=target,
            created_at=created_at,
            routine=_is_routine(routine, actor),
        )


def assignment_update(
    assignment: Assignment,
    *,
    generation: int | None = None,
    client_state: str | None = None,
    keys_changed_at: int | None = None,
    node: str | None = None,
    actor=None,
    reason: str | None = None,
    routine: bool | None = None,
) -> Assignment:
    """tokenserver's update_user, on ``assignment`` (updated in place and returned).

    Numbers alone update the live row, never backwards (a lower one is ignored, as tokenserver does;
    the API refuses it first). A new client state, or a node, makes a new row on the same node (or
    the given one, or a fresh one if the node is gone) and marks the old one replaced. A client state
    seen before is refused (InvalidClientState). Audited in full unless routine, as
    ``assignment_allocate`` says; a routine one only when the keys or the numbers move.
    """
    _check(reason_problem(reason))
    sid = service_id(assignment.service)
    routine = _is_routine(routine, actor) and node is None
    with lifecycle_rules(), transaction.atomic(), audit_context(actor=actor, reason=reason):
        if routine:
            return _routine_update(
                assignment, sid, generation=generation, client_state=client_state, keys_changed_at=keys_changed_at
            )
        with connection.cursor() as cursor:
            # The account's rows for the service, locked: concurrent updates of one account take turns.
            cursor.execute(
                "SELECT uid FROM node_assignments WHERE service = %s AND account = %s ORDER BY uid FOR UPDATE",
                [sid, assignment.account_id],
            )
            if client_state is None and node is None:
                cursor.execute(
                    """
                    UPDATE node_assignments
                    SET generation = coalesce(%(generation)s, generation),
                        keys_changed_at = coalesce(%(keys_changed_at)s, keys_changed_at)
                    WHERE service = %(service)s AND account = %(account)s AND replaced_at IS NULL
                      AND generation <= coalesce(%(generation)s, generation)
                      AND coalesce(keys_changed_at, 0) <= coalesce(%(keys_changed_at)s, keys_changed_at, 0)
                    """,
                    {
                        "generation": generation,
                        "keys_changed_at": keys_changed_at,
                        "service": sid,
                        "account": assignment.account_id,
                    },
                )
                if generation is not None:
                    assignment.generation = max(assignment.generation, generation)
                assignment.keys_changed_at = max(assignment.keys_changed_at, keys_changed_at or 0)
                return assignment
        if client_state is None:
            client_state = assignment.client_state
        elif client_state == assignment.client_state or client_state in assignment.old_client_states:
            raise InvalidClientState("nodes: previously seen client-state string")
        generation = max(assignment.generation, generation or 0)
        keys_changed_at = max(assignment.keys_changed_at, keys_changed_at or 0) or None
        target = node_id(service=assignment.service, node=node) if node is not None else _live_node_id(assignment)
        now = _replace_rows("a.service = %s AND a.account = %s", [sid, assignment.account_id])
        if target is not None and node is None:
            # Same node, new keys: the node keeps the account (tokenserver), whatever its load.
            with connection.cursor() as cursor:
                cursor.execute(
                    """
                    INSERT INTO node_assignments (service, account, node, generation, client_state, keys_changed_at,
                                                  created_at)
                    VALUES (%s, %s, %s, %s, %s, %s, greatest(clock_timestamp(), %s)) RETURNING uid
                    """,
                    [sid, assignment.account_id, target, generation, client_state, keys_changed_at, now],
                )
                (uid,) = cursor.fetchone()
            fresh_node = assignment.node
        else:
            fresh = _allocate(
                sid,
                assignment.service,
                assignment.account_id,
                generation=generation,
                client_state=client_state,
                keys_changed_at=keys_changed_at,
                node_id_=target,
                routine=False,
            )
            uid, fresh_node = fresh.uid, fresh.node
    if client_state != assignment.client_state:
        assignment.old_client_states.add(assignment.client_state)
    assignment.uid, assignment.node, assignment.client_state = uid, fresh_node, client_state
    assignment.generation, assignment.keys_changed_at = generation, keys_changed_at or 0
    return assignment


def _routine_update(
    assignment: Assignment,
    sid: int,
    *,
    generation: int | None,
    client_state: str | None,
    keys_changed_at: int | None,
) -> Assignment:
    """assignment_update's moves for a client: numbers forwards (node_routine_advance()), or new keys on
    the assignment's node (node_routine_rekey()); ``assignment`` updated in place and returned."""
    if client_state is None:
        _call("node_routine_advance", [sid, assignment.account_id, generation, keys_changed_at])
        if generation is not None:
            assignment.generation = max(assignment.generation, generation)
        assignment.keys_changed_at = max(assignment.keys_changed_at, keys_changed_at or 0)
        return assignment
    if client_state == assignment.client_state or client_state in assignment.old_client_states:
        raise InvalidClientState("nodes: previously seen client-state string")
    generation = max(assignment.generation, generation or 0)
    keys_changed_at = max(assignment.keys_changed_at, keys_changed_at or 0) or None
    with connection.cursor() as cursor:
        cursor.execute(
            ROUTINE_REKEY,
            [
                sid,
                assignment.account_id,
                assignment.uid,
                generation,
                client_state,
                keys_changed_at,
                settings.NODE_CAPACITY_RELEASE_RATE,
            ],
        )
        uid, node = cursor.fetchone()
    assignment.old_client_states.add(assignment.client_state)
    assignment.uid, assignment.node, assignment.client_state = uid, node, client_state
    assignment.generation, assignment.keys_changed_at = generation, keys_changed_at or 0
    return assignment


def _call(function: str, params: list):
    """One of the database's node_routine_* functions (accounts/sql/0017_node_trail.sql); its result."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {function}({', '.join(['%s'] * len(params))})", params)
        return cursor.fetchone()[0]


def _live_node_id(assignment: Assignment) -> int | None:
    """The node the assignment is on, if it still exists."""
    if assignment.node is None:
        return None
    found = Node.objects.filter(service__service=assignment.service, node=assignment.node).values_list("id", flat=True)
    return found.first()


def _replace_rows(where: str, params: list, *, at: datetime | None = None) -> datetime:
    """Mark the live rows matching ``where`` replaced (at ``at``, or now); returns the time used."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE node_assignments a SET replaced_at = greatest(coalesce(%s, clock_timestamp()), a.created_at)
            WHERE {where} AND a.replaced_at IS NULL
            RETURNING a.replaced_at
            """,
            [at, *params],
        )
        times = [row[0] for row in cursor.fetchall()]
    return max(times, default=at) or datetime.now().astimezone()


def assignments_replace(*, service: str, account_id: int, at: datetime | None = None) -> None:
    """tokenserver's replace_user_records: the account's next read gets a fresh node."""
    sid = service_id(service)
    with transaction.atomic():
        _call("node_routine_replace", [sid, account_id, at])


def assignment_replace(*, uid: int, at: datetime | None = None) -> None:
    """tokenserver's replace_user_record (purge_old_records bumps a failed row's time with it)."""
    with transaction.atomic():
        _call("node_routine_replace_row", [uid, at, False])


@dataclass(frozen=True)
class Reset:
    """What assignment_reset did (or, in a dry run, would do): the live row it replaced (None when the
    account had none), the rows whose numbers from the future it lowered, the fresh assignment
    (None in a dry run, or when no node had room: the account's next sync gets one), and the rows
    whose retirement by deprovisioning it lifted."""

    replaced_uid: int | None
    replaced_node: str | None
    lowered: int
    fresh: Assignment | None
    unretired: int = 0


# The account's rows holding a number more than a day ahead of the clock (node_clock_limit(),
# accounts/sql/0018_node_bounds.sql), the tombstone aside: numbers no real credentials carry.
FROM_THE_FUTURE = """
    a.service = %(service)s AND a.account = %(account)s
    AND ((a.generation > node_clock_limit() AND a.generation <> %(tombstone)s) OR a.keys_changed_at > node_clock_limit())
"""
# Such numbers lowered to the highest real ones the account's rows hold (0 if none): the database lets
# a number from the future go back to the present, and no further than its history.
LOWER_FROM_THE_FUTURE = f"""
WITH reached AS (
    SELECT coalesce(max(generation) FILTER (WHERE generation <= node_clock_limit()), 0) AS generation,
           coalesce(max(keys_changed_at) FILTER (WHERE keys_changed_at <= node_clock_limit()), 0) AS keys_changed_at
    FROM node_assignments WHERE service = %(service)s AND account = %(account)s
)
UPDATE node_assignments a
SET generation = CASE WHEN a.generation > node_clock_limit() AND a.generation <> %(tombstone)s
                      THEN r.generation ELSE a.generation END,
    keys_changed_at = CASE WHEN a.keys_changed_at > node_clock_limit() THEN r.keys_changed_at ELSE a.keys_changed_at END
FROM reached r
WHERE {FROM_THE_FUTURE}
"""


# The account's rows whose tombstone deprovisioning gave and a reprovisioning since lifts
# (node_retirement_lifted(), accounts/sql/0022_node_unretire.sql), and the update giving each back the
# generation it had.
UNRETIRE_ROWS = """
SELECT a.uid FROM node_assignments a
WHERE a.service = %(service)s AND a.account = %(account)s AND a.generation = %(tombstone)s AND node_retirement_lifted(a)
"""
UNRETIRE = f"""
UPDATE node_assignments SET generation = retired_generation WHERE uid IN ({UNRETIRE_ROWS})
"""


def assignment_reset(*, service: str, account_id: int, actor, reason: str, dry_run: bool = False) -> Reset:
    """An operator's reset of the account's assignment for ``service``: its live row replaced and a
    fresh one (a new uid, on the least-loaded node) made with the same keys and numbers, so that its
    client starts on fresh storage at its next sync; the old row's data is purged after the grace
    period. A generation or keys_changed_at more than a day ahead of the clock, which no real
    credentials carry and which would refuse the real client for good, is lowered first to the
    highest real one of the account's history. Audited with ``actor`` and ``reason``
    (node_assignment.changed for numbers lowered, node.unassigned for the old row's node,
    node_assignment.created naming the account). With no node free, the row is replaced all the
    same and the next sync gets the fresh one.

    An account reprovisioned after deprovisioning retired its assignments gets them back here: the
    tombstone of each row deprovisioning retired goes back to the generation the row had
    (accounts/sql/0022_node_unretire.sql; node_assignment.changed), and the fresh row continues from
    there (``Reset.unretired`` counts those rows).

    Refused: UnknownName (the service), NoAssignment (the account never had one), Retired (its
    assignments carry the tombstone, and no reprovisioning since lifts it), InvalidValue (a reason
    that is not text). ``dry_run``: the same refusals, then what would be replaced; nothing changes."""
    _check(reason_problem(reason))
    sid = service_id(service)
    # Direct writes, not the node_routine_* functions: every row of the reset is audited in full.
    with lifecycle_rules(), transaction.atomic(), audit_context(actor=actor, reason=reason):
        with connection.cursor() as cursor:
            # The account's rows, locked: a client's report made meanwhile is read, or waits for the reset.
            cursor.execute(
                "SELECT uid FROM node_assignments WHERE service = %s AND account = %s ORDER BY uid FOR UPDATE",
                [sid, account_id],
            )
        record = current_record(service=service, account_id=account_id)
        if record is None:
            raise NoAssignment(
                f"nodes: account {account_id} has no assignment for {service}; there is nothing to reset"
            )
        unretired = 0
        if record.generation >= MAX_GENERATION and not dry_run:
            with connection.cursor() as cursor:
                cursor.execute(UNRETIRE, {"service": sid, "account": account_id, "tombstone": MAX_GENERATION})
                unretired = cursor.rowcount
            record = current_record(service=service, account_id=account_id)
        elif record.generation >= MAX_GENERATION:
            with connection.cursor() as cursor:
                cursor.execute(
                    f"SELECT count(*) FROM ({UNRETIRE_ROWS}) r",
                    {"service": sid, "account": account_id, "tombstone": MAX_GENERATION},
                )
                (unretired,) = cursor.fetchone()
        if record.generation >= MAX_GENERATION and not unretired:
            if Account.objects.filter(pk=account_id, status=AccountStatus.DEPROVISIONED).exists():
                raise Retired(
                    f"nodes: account {account_id} is deprovisioned, which retired its assignments for {service};"
                    " reprovision it first",
                    account_id=account_id,
                )
            raise Retired(
                f"nodes: account {account_id}'s assignments for {service} were retired", account_id=account_id
            )
        live = record if record.replaced_at is None else None
        where = {"service": sid, "account": account_id, "tombstone": MAX_GENERATION}
        with connection.cursor() as cursor:
            if dry_run:
                cursor.execute(f"SELECT count(*) FROM node_assignments a WHERE {FROM_THE_FUTURE}", where)
                (lowered,) = cursor.fetchone()
            else:
                cursor.execute(LOWER_FROM_THE_FUTURE, where)
                lowered = cursor.rowcount
        done = Reset(live.uid if live else None, live.node if live else None, lowered, None, unretired)
        if dry_run:
            return done
        record = current_record(service=service, account_id=account_id)
        _replace_rows("a.service = %s AND a.account = %s", [sid, account_id])
        try:
            fresh = _allocate(
                sid,
                service,
                account_id,
                generation=record.generation,
                client_state=record.client_state,
                keys_changed_at=record.keys_changed_at,
                routine=False,
            )
        except NoCapacity:
            return done
    return Reset(done.replaced_uid, done.replaced_node, lowered, fresh, unretired)


def assignments_retire(*, account_id: int) -> int:
    """tokenserver's retire_user: every live row of the account, in every service, replaced and given
    the tombstone generation, so no client of the account is served again. Returns the rows retired
    (each audited: node_assignment.retired)."""
    with transaction.atomic():
        return _call("node_routine_retire", [account_id])


def assignment_delete(*, uid: int) -> None:
    """tokenserver's delete_user_record: the row goes, and its node's slot is freed (by the trigger)."""
    with transaction.atomic():
        _call("node_routine_delete", [uid])


def generation_raise(*, account_id: int, generation: int) -> int:
    """Raise the account's generation to ``generation`` in every service it has an assignment in, never
    lower (tokenserver's update_generation_number). As tokenserver does, the current assignment is read
    first, so a replaced one gets its fresh node before the update and the old row keeps the numbers its
    data was stored under. Returns the services whose generation rose."""
    raised = 0
    names = Service.objects.filter(
        id__in=NodeAssignment.objects.filter(account_id=account_id).values("service")
    ).values_list("service", flat=True)
    for name in names:
        current = assignment_current(service=name, account_id=account_id)
        if current is None or current.retired or current.generation >= generation:
            continue
        assignment_update(current, generation=generation)
        raised += 1
    return raised


# The rules of accounts/sql/0014_nodes.sql's CHECKs, one check each: the services apply them, and the
# admin's forms and the commands show their sentences. Each says what is wrong, or None.


def service_name_problem(service: str) -> str | None:
    if SERVICE_NAME.fullmatch(service):
        return None
    return (
        f"nodes: service name {service!r} is not valid: a service's name starts with a lower-case letter or"
        f" digit, then up to {SERVICE_NAME_MAX - 1} more of a-z, 0-9, '.', '_' and '-'"
    )


def node_url_problem(url: str, *, what: str = "node") -> str | None:
    """``what`` names the URL in the sentence (a node, or the purge's override node). Its host must be
    where storage nodes may be (accounts/nodes/addresses.py, NODE_ALLOWED_NETWORKS)."""
    if len(url) <= NODE_URL_MAX and NODE_URL.fullmatch(url) and not url.endswith("/"):
        return node_host_problem(url, what=what)
    return (
        f"nodes: a node is a URL of at most {NODE_URL_MAX} characters: http:// or https://, a host and an"
        f" optional path, no spaces, and without a query, a fragment or a final '/'; {what} {url!r} is not valid"
    )


def pattern_problem(pattern: str | None) -> str | None:
    """A service's endpoint pattern; None (no pattern) is allowed. The node is its origin: the pattern
    starts with {node} and goes on with a path or a query, so that no pattern sends the purge's
    requests (and their bearer tokens) anywhere but to the node's own host and port."""
    if pattern is None:
        return None
    if "{node}" not in pattern or len(pattern) > PATTERN_MAX:
        return (
            f"nodes: pattern {pattern!r} is not valid: the pattern must hold {{node}}, where the node's URL goes,"
            f" in at most {PATTERN_MAX} characters"
        )
    if not pattern.startswith("{node}") or pattern[len("{node}") :][:1] not in ("", "/", "?"):
        return (
            f"nodes: pattern {pattern!r} is not valid: it must start with {{node}} and go on with a path ('/')"
            " or a query ('?'), so that its requests go to the node's own host and port"
        )
    return None


def node_number_problem(name: str, value: int | None) -> str | None:
    """A node's number (NODE_NUMBER_RANGES names them) outside its range; None (left out) is allowed."""
    lowest, highest = NODE_NUMBER_RANGES[name]
    if value is None or lowest <= value <= highest:
        return None
    return f"nodes: {name} must be between {lowest} and {highest}, not {value}"


def reason_problem(reason: str | None) -> str | None:
    """The audit trail's reason is PostgreSQL text: UTF-8 without NUL (a command line's stray bytes are
    neither); None (no reason) is allowed."""
    if reason is None or ("\x00" not in reason and is_utf8(reason)):
        return None
    return "nodes: the reason is not valid text (UTF-8, no NUL)"


def _check(*problems: str | None) -> None:
    for problem in problems:
        if problem:
            raise InvalidValue(problem)


def service_add(*, service: str, pattern: str | None = None, actor=None) -> Service:
    """A new service (tokenserver fills its table by migration; here an operator adds it)."""
    _check(service_name_problem(service), pattern_problem(pattern))
    with lifecycle_rules(), transaction.atomic(), audit_context(actor=actor):
        return Service.objects.create(service=service, pattern=pattern)


def node_add(
    *,
    service: str,
    node: str,
    capacity: int,
    available: int | None = None,
    current_load: int = 0,
    downed: bool = False,
    backoff: bool = False,
    actor,
    reason: str | None = None,
) -> Node:
    """tokenserver's add_node: only a share of the capacity is released at first (ceil(capacity x rate))."""
    _check(
        node_url_problem(node),
        node_number_problem("capacity", capacity),
        node_number_problem("available", available),
        node_number_problem("current_load", current_load),
        reason_problem(reason),
    )
    sid = service_id(service)
    if available is None:
        available = ceil(capacity * settings.NODE_CAPACITY_RELEASE_RATE)
    with lifecycle_rules(), transaction.atomic(), audit_context(actor=actor, reason=reason):
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO nodes (service, node, capacity, available, current_load, downed, backoff)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id",
                [sid, node, capacity, available, current_load, downed, backoff],
            )
            (new_id,) = cursor.fetchone()
    return Node.objects.get(pk=new_id)


def node_update(*, service: str, node: str, actor, reason: str | None = None, **fields) -> Node:
    """tokenserver's update_node: set any of capacity, available, current_load, downed, backoff."""
    unknown = set(fields) - set(NODE_FIELDS)
    if unknown:
        raise ValueError(f"unknown node fields: {', '.join(sorted(unknown))}")
    _check(
        *(node_number_problem(name, value) for name, value in fields.items() if name in NODE_NUMBER_RANGES),
        reason_problem(reason),
    )
    nid = node_id(service=service, node=node)
    with lifecycle_rules(), transaction.atomic(), audit_context(actor=actor, reason=reason):
        if fields:
            Node.objects.filter(pk=nid).update(**fields)
    return Node.objects.get(pk=nid)


def node_unassign(*, service: str, node: str, actor, reason: str | None = None, dry_run: bool = False) -> int:
    """tokenserver's unassign_node: every live assignment on the node replaced, so that its accounts
    get a new node when next read. Audited once per node (node.unassigned, with the count).
    ``dry_run``: refused as the real run would be, then the count it would replace; nothing changes."""
    _check(reason_problem(reason))
    nid = node_id(service=service, node=node)
    if dry_run:
        return node_live_assignments_count(service=service, node=node)
    with lifecycle_rules(), transaction.atomic(), audit_context(actor=actor, reason=reason):
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE node_assignments SET replaced_at = greatest(clock_timestamp(), created_at)"
                " WHERE node = %s AND replaced_at IS NULL",
                [nid],
            )
            return cursor.rowcount


def node_remove(*, service: str, node: str, actor, reason: str | None = None, dry_run: bool = False) -> int:
    """tokenserver's remove_node: the node's assignments replaced, then the node deleted (its rows keep
    their history with no node). Returns the assignments replaced; ``dry_run`` as node_unassign's."""
    if dry_run:
        return node_unassign(service=service, node=node, actor=actor, reason=reason, dry_run=True)
    with transaction.atomic():
        replaced = node_unassign(service=service, node=node, actor=actor, reason=reason)
        nid = node_id(service=service, node=node)
        with lifecycle_rules(), audit_context(actor=actor, reason=reason):
            Node.objects.filter(pk=nid).delete()
    return replaced
