"""A client's sync check-in: tokenserver's token request (syncserver/src/tokenserver: extractors.rs's
get_or_create_user and validate, handlers.rs's update_user) as one service over accounts/nodes/services.py.

The client reports what its credentials say (generation, keys_changed_at, client_state); the account
gets a node if it has none, the report is checked against the account's history by tokenserver's
rules, and the history moves forwards. A report the rules refuse changes nothing, not even the node
it would have been given. tokenserver answers its refusals 401; the API says 409 (the caller's own
key was good: it is the reported credentials that are stale).

Two bounds tokenserver does not have keep one client from harming the others or its own account: a
number more than NODE_CLOCK_MARGIN_SECONDS ahead of the clock is refused (the numbers only go
forwards: kept, it would refuse the real client until an operator's reset_node_assignment), and so
are new keys past NODE_KEY_CHANGES_PER_HOUR in an hour.
"""

import time
from datetime import timedelta
from math import ceil

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from accounts.nodes.errors import (
    AlreadyAssigned,
    GenerationInFuture,
    InvalidClientState,
    InvalidGeneration,
    InvalidKeysChangedAt,
    KeysChangedAtInFuture,
    Retired,
    TooManyKeyChanges,
)
from accounts.nodes.selectors import AssignmentState, assignment_state, key_changes_since, service_id
from accounts.nodes.services import Assignment, assignment_allocate, assignment_current, assignment_update
from platform_events.db.refusals import lifecycle_rules


def assignment_sync(
    *,
    service: str,
    account_id: int,
    generation: int | None = None,
    keys_changed_at: int | None = None,
    client_state: str | None = None,
) -> tuple[AssignmentState, bool]:
    """The account's assignment for ``service`` after the client's report; and whether it was made
    now (the account had none).

    As tokenserver: 0 for a number means "not reported"; a missing ``client_state`` means "the
    current one". An account seen for the first time is allocated a node with the report's values; a
    replaced or node-less one gets a fresh node with its keys first. Then the report is checked
    (an InvalidUpdate of tokenserver's kind) and applied: a new client state makes a new row on the
    same node, numbers alone move the live row forwards. Reports for one account and service take
    turns, each checked against what the one before it left. Retired (the account's tombstone) when
    the account was retired; UnknownName if it does not exist; NoCapacity if no node can take it;
    GenerationInFuture or KeysChangedAtInFuture for a number too far ahead of the clock, before
    anything else; TooManyKeyChanges for new keys past the hour's bound.
    """
    sid = service_id(service)
    generation = generation or None
    keys_changed_at = keys_changed_at or None
    _check_clock(generation=generation, keys_changed_at=keys_changed_at)
    with lifecycle_rules(), transaction.atomic():
        _take_turns(sid, account_id)
        current = assignment_current(service=service, account_id=account_id)
        ended = _ended(account_id) if current is None else None
        if ended:
            # The database makes no row for it either (accounts/sql/0022_node_unretire.sql, and
            # 0024_erasure.sql): answered as a retired account, as one that had a node is.
            raise Retired(f"nodes: account {account_id} is {ended}", account_id=account_id)
        if current is None:
            made = _first_sight(service, account_id, generation, keys_changed_at, client_state)
            if made:
                return assignment_state(service=service, account_id=account_id), True
            current = assignment_current(service=service, account_id=account_id)
        if current.retired:
            raise Retired(
                f"nodes: account {account_id}'s assignments for {service} were retired", account_id=account_id
            )
        if client_state is None:
            client_state = current.client_state
        _check(current, generation=generation, keys_changed_at=keys_changed_at, client_state=client_state)
        if client_state != current.client_state:
            _check_key_change_pace(service, account_id)
        _apply(current, generation=generation, keys_changed_at=keys_changed_at, client_state=client_state)
        return assignment_state(service=service, account_id=account_id), False


def _ended(account_id: int) -> str | None:
    """The account's status when it is deprovisioned or erased, else None."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT status::text FROM accounts WHERE id = %s AND status IN ('deprovisioned', 'erased')", [account_id]
        )
        row = cursor.fetchone()
    return row[0] if row else None


def _check_clock(*, generation: int | None, keys_changed_at: int | None) -> None:
    """Refuse a number (milliseconds) more than NODE_CLOCK_MARGIN_SECONDS ahead of this server's clock."""
    margin = settings.NODE_CLOCK_MARGIN_SECONDS
    latest = int(time.time() * 1000) + margin * 1000
    ahead = f"in the future: more than {margin} seconds ahead of this server's clock (NODE_CLOCK_MARGIN_SECONDS)"
    if generation is not None and generation > latest:
        raise GenerationInFuture(f"nodes: generation {generation} is {ahead}", field="generation")
    if keys_changed_at is not None and keys_changed_at > latest:
        raise KeysChangedAtInFuture(f"nodes: keys_changed_at {keys_changed_at} is {ahead}", field="keys_changed_at")


def _check_key_change_pace(service: str, account_id: int) -> None:
    """Refuse new keys when the account had NODE_KEY_CHANGES_PER_HOUR of them for the service in the
    last hour; Retry-After is when the oldest of those leaves the hour."""
    bound = settings.NODE_KEY_CHANGES_PER_HOUR
    now = timezone.now()
    changes = key_changes_since(service=service, account_id=account_id, since=now - timedelta(hours=1))
    if len(changes) < bound:
        return
    wait = ceil((changes[-bound] + timedelta(hours=1) - now).total_seconds())
    raise TooManyKeyChanges(
        f"nodes: account {account_id}'s keys changed {bound} times for {service} in the last hour, the most"
        f" NODE_KEY_CHANGES_PER_HOUR allows; new keys are taken again in {wait} seconds",
        account_id=account_id,
        retry_after=max(wait, 1),
    )


def _take_turns(sid: int, account_id: int) -> None:
    """Serialise reports for one account and service: a transaction-level advisory lock (it holds
    even when the account has no row yet to lock), then the account's rows, so that a change made
    meanwhile by another writer (a retirement, a generation raised) is read before the check."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"lifecycle:nodes:{sid}:{account_id}"])
        cursor.execute(
            "SELECT uid FROM node_assignments WHERE service = %s AND account = %s ORDER BY uid FOR UPDATE",
            [sid, account_id],
        )


def _first_sight(service, account_id, generation, keys_changed_at, client_state) -> bool:
    """tokenserver's allocate_user with the report's values (nothing to check them against). False if
    another writer (not an API client: they take turns) gave the account its row first."""
    try:
        assignment_allocate(
            service=service,
            account_id=account_id,
            generation=generation or 0,
            client_state=client_state or "",
            keys_changed_at=keys_changed_at,
        )
    except AlreadyAssigned:
        return False
    return True


def _check(current: Assignment, *, generation: int | None, keys_changed_at: int | None, client_state: str) -> None:
    """tokenserver's validate(), rule for rule and in its order; a comparison with a number not
    reported holds (its opt_cmp). The stored keys_changed_at 0 is tokenserver's "none"."""
    stored_keys_at = current.keys_changed_at or None

    def above(left, right) -> bool:
        return left is not None and right is not None and left > right

    # Keys changing is an authentication change, so keys_changed_at <= generation.
    if above(keys_changed_at, stored_keys_at) and above(keys_changed_at, generation):
        raise InvalidKeysChangedAt("nodes: keys_changed_at is greater than generation")
    if current.client_state and not client_state:
        raise InvalidClientState("nodes: client_state cannot go back to empty")
    if client_state in current.old_client_states:
        raise InvalidClientState("nodes: client_state was used before by this account")
    changed = client_state != current.client_state
    # A new client state comes with new keys: a later generation and keys_changed_at, where reported.
    if changed and generation is not None and generation <= current.generation:
        raise InvalidClientState("nodes: a new client_state needs a generation above the account's")
    if changed and keys_changed_at is not None and stored_keys_at is not None and keys_changed_at <= stored_keys_at:
        raise InvalidClientState("nodes: a new client_state needs a keys_changed_at above the account's")
    if above(current.generation, generation):
        raise InvalidGeneration(f"nodes: generation is below the account's {current.generation}")
    if above(stored_keys_at, keys_changed_at):
        raise InvalidKeysChangedAt(f"nodes: keys_changed_at is below the account's {stored_keys_at}")
    # Once a keys_changed_at was seen, every report must carry one (tokenserver: OAuth always does).
    if keys_changed_at is None and stored_keys_at is not None:
        raise InvalidKeysChangedAt("nodes: keys_changed_at is required once the account has one")


def _apply(current: Assignment, *, generation: int | None, keys_changed_at: int | None, client_state: str) -> None:
    """tokenserver's update_user: the numbers the report moves to, then a new row for new keys or the
    live row updated in place (nothing written when nothing moves)."""
    stored_keys_at = current.keys_changed_at or None
    new_keys_at = keys_changed_at if keys_changed_at is not None else stored_keys_at
    if generation is not None:
        new_generation = generation
    elif keys_changed_at is not None and _above_all(keys_changed_at, stored_keys_at, current.generation):
        # No generation reported: a key change is an authentication change, so it moves generation too.
        new_generation = keys_changed_at
    else:
        new_generation = current.generation
    if client_state != current.client_state:
        assignment_update(current, generation=new_generation, keys_changed_at=new_keys_at, client_state=client_state)
    elif (new_generation, new_keys_at) != (current.generation, stored_keys_at):
        assignment_update(current, generation=new_generation, keys_changed_at=new_keys_at)


def _above_all(value: int, *others: int | None) -> bool:
    return all(other is None or value > other for other in others)
