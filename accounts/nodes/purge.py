"""purge_old_records: replaced assignments deleted, after their storage node was told to drop the data
(tokenserver's tools/tokenserver/purge_old_records.py; docs/nodes.md).

A replaced row past the grace period is purged this way:

* no node (the node was removed): the row is deleted, there is no one to tell;
* on an up node: a DELETE of the row's endpoint (the service's pattern, ``{node}/1.5/{uid}`` by default)
  goes to the node first, then the row is deleted, which frees its slot (the load trigger);
* on a downed node: left for when the node comes back or is removed, unless ``force``; forced, the
  DELETE goes to ``override_node`` if given (the node the data was copied to), except when the row
  holds the same keys (fxa_kid) as the account's current row: that DELETE would erase the live data.

A DELETE that fails (an HTTP error other than 404, a timeout, a refused connection) does not stop the
run: the row's ``replaced_at`` moves to now, so it waits a grace period before the next try, and the
failure is counted by reason (http_5xx, http_4xx, http_other, timeout, connect, address, unknown).
tokenserver retried 4xx answers in the same run with a backoff; here the next run is the retry.

Every connection goes through the webhooks' SSRF guard (platform_events/webhooks/http.py's guarded
transport) with the nodes' policy (accounts/nodes/addresses.py): the node's name is resolved when
connecting, and an address outside public ones and NODE_ALLOWED_NETWORKS is not connected to (counted
as ``address``), whatever was checked when the node was saved. No proxy from the environment is used,
and no redirect followed.

The DELETE carries ``Authorization: Bearer <token>``, tokenserver's token claims (uid, node, fxa_uid,
fxa_kid) signed with Django's signing (HMAC-SHA256) under NODE_SECRET; tokenserver used Hawk and
tokenlib. A storage node checks it with::

    django.core.signing.loads(token, key=NODE_SECRET, salt="lifecycle.nodes.purge", max_age=300)

(or the same HMAC by hand), and compares the claims' uid and node with the request's. Without
NODE_SECRET the nodes cannot be told: rows on up nodes are kept (counted as ``skipped_no_secret``).

The run pages through the rows by uid (a keyset, not tokenserver's OFFSET, which re-read rows and
needed a loop detector), and holds the advisory lock ``purge_old_records``: the command, the daily
cleanup's rule (accounts/retention.py) and an operator never purge at once. A run given a range of
uids (tokenserver's ``--range-start``/``--range-end``) purges only those, so several purgers can
split a backlog: each holds that lock shared (they run side by side, never beside a whole run) and
one named after its range (the same range never twice at once). Ranges are meant not to overlap; if
they do, a row in both may be told twice (the second DELETE gets a 404, which counts as done). Each row's deletion is a
transaction of its own, after its DELETE was answered: a run that stops on an error leaves every
row either purged or as it was (its node may have dropped the data already; the next run's DELETE
then gets a 404, which counts as done).
"""

from __future__ import annotations

import logging
import time
from base64 import urlsafe_b64encode
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import timedelta

import httpx
from django.core import signing

from accounts.nodes import addresses
from accounts.nodes.errors import InvalidValue, NodeError
from accounts.nodes.models import Service
from accounts.nodes.selectors import Record, current_record, old_assignment_records, old_assignments_count, service_id
from accounts.nodes.services import assignment_delete, assignment_replace, node_url_problem, pattern_problem
from platform_events.db.locks import advisory_lock
from platform_events.quantities import quantity
from platform_events.webhooks.http import GuardedTransport

logger = logging.getLogger(__name__)

TOKEN_SALT = "lifecycle.nodes.purge"
# tokenserver's PATTERN, for a service whose pattern is not set.
DEFAULT_PATTERN = "{node}/1.5/{uid}"
LOCK = "purge_old_records"
USER_AGENT = "Lifecycle-Purge/1"


class PurgeRunning(NodeError):
    code = "purge-running"


class PurgeStopped(NodeError):
    """An error stopped the run; ``counts`` says what was done before it (each row purged whole)."""

    code = "purge-stopped"

    def __init__(self, message: str, *, counts: PurgeCounts):
        super().__init__(message)
        self.counts = counts


class DeleteFailed(Exception):
    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


@dataclass(frozen=True)
class UidRange:
    """The uids a purger takes: from ``start`` up to, not including, ``end`` (None: no end)."""

    start: int = 0
    end: int | None = None

    @property
    def whole(self) -> bool:
        return self.start == 0 and self.end is None

    def describe(self) -> str:
        return f"uids from {self.start}" + (f" below {self.end}" if self.end is not None else "")


EVERY_UID = UidRange()


@dataclass
class PurgeCounts:
    """What a run (or one batch of it) did; with ``dry_run``, what it would have done."""

    dry_run: bool = False
    backlog: int = 0  # rows past the grace period when the run started (tokenserver's purge.backlog.size)
    batches: int = 0
    fetched: int = 0
    deleted: int = 0  # rows deleted
    nodes_told: int = 0  # DELETEs the nodes answered (2xx, or 404: nothing there)
    kept_active_data: int = 0  # forced rows with the account's current keys: deleted without a DELETE
    skipped_downed: int = 0
    skipped_no_secret: int = 0
    failures: Counter[str] = field(default_factory=Counter)  # by reason: http_5xx, timeout, ...
    reached_max_records: bool = False
    seconds: float = 0.0

    @property
    def failed(self) -> int:
        return sum(self.failures.values())

    @property
    def purged_with_data(self) -> int:
        """tokenserver's counter for max_records: rows whose data was deleted or forced away."""
        return self.nodes_told + self.kept_active_data

    def add(self, other: PurgeCounts) -> None:
        for name in ("batches", "fetched", "deleted", "nodes_told", "kept_active_data"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.skipped_downed += other.skipped_downed
        self.skipped_no_secret += other.skipped_no_secret
        self.failures.update(other.failures)
        self.reached_max_records |= other.reached_max_records

    def describe(self) -> str:
        would = "would be " if self.dry_run else ""
        parts = [f"{self.deleted} {would}deleted ({quantity(self.nodes_told, 'node')} {would}told)"]
        if self.kept_active_data:
            parts.append(f"{self.kept_active_data} without a DELETE (the account's current keys)")
        if self.skipped_downed:
            parts.append(f"{self.skipped_downed} left on downed nodes")
        if self.skipped_no_secret:
            parts.append(f"{self.skipped_no_secret} kept (no NODE_SECRET to tell their nodes)")
        if self.failed:
            reasons = ", ".join(f"{reason} {count}" for reason, count in sorted(self.failures.items()))
            parts.append(f"{self.failed} failed ({reasons}), retried after the grace period")
        return "; ".join(parts)


def grace_text(grace_period: timedelta) -> str:
    """A grace period as an operator set it: whole days, or seconds."""
    seconds = int(grace_period.total_seconds())
    days, rest = divmod(seconds, 86400)
    return quantity(days, "day") if days and not rest else quantity(seconds, "second")


def fxa_kid(record: Record) -> str:
    """tokenserver's format_key_id: the key id a storage node files the account's data under."""
    key_hash = urlsafe_b64encode(bytes.fromhex(record.client_state)).rstrip(b"=").decode()
    return f"{record.keys_changed_at or record.generation:013d}-{key_hash}"


def delete_token(record: Record, *, node: str, secret: str) -> str:
    """The bearer token of a DELETE: tokenserver's claims, signed (see the module's docstring)."""
    claims = {"uid": record.uid, "node": node, "fxa_uid": str(record.account_id), "fxa_kid": fxa_kid(record)}
    return signing.dumps(claims, key=secret, salt=TOKEN_SALT)


def _points_to_active(record: Record, *, service: str, override_node: str | None) -> bool:
    """tokenserver's points_to_active: whether a forced DELETE at ``override_node`` would hit the data the
    account uses now (the migration copied it there under the same keys)."""
    if not override_node or record.node == override_node:
        return False
    current = current_record(service=service, account_id=record.account_id)
    return current is not None and fxa_kid(current) == fxa_kid(record)


def _delete_node_data(client: httpx.Client, url: str, token: str) -> None:
    """DELETE the account's data set on its node; raise DeleteFailed with the reason unless done."""
    try:
        response = client.delete(url, headers={"authorization": f"Bearer {token}"})
    except httpx.TimeoutException as error:
        raise DeleteFailed("timeout", str(error) or "no answer in time") from error
    except httpx.ConnectError as error:
        # The guard's refusal ("refused: ... resolves to a loopback address ...") is no network failure.
        reason = "address" if str(error).startswith("refused: ") else "connect"
        raise DeleteFailed(reason, str(error)) from error
    except httpx.HTTPError as error:
        raise DeleteFailed("unknown", str(error)) from error
    # 404: the node holds nothing for it, which is what we want. No redirect is followed: a 3xx is not a deletion.
    if response.status_code < 300 or response.status_code == 404:
        return
    reason = "http_5xx" if response.status_code >= 500 else "http_4xx" if response.status_code >= 400 else "http_other"
    raise DeleteFailed(reason, f"{url} answered {response.status_code}")


def _endpoint_pattern(service: str) -> str:
    """The service's endpoint pattern, refused (InvalidValue) before the run if a DELETE could not be made
    from it: it must start with {node} (the services' pattern_problem: one saved before that rule is
    refused too), name the account ({uid}) and use nothing but {node}, {uid} and {service}."""
    pattern = Service.objects.filter(service=service).values_list("pattern", flat=True).first() or DEFAULT_PATTERN
    if problem := pattern_problem(pattern):
        raise InvalidValue(f"{problem}; the purge did nothing")
    try:
        named = pattern.format(node="n", uid="\x00", service="s")
    except (KeyError, IndexError, ValueError):
        named = ""
    if "\x00" not in named:
        raise InvalidValue(
            f"nodes: service {service}'s pattern {pattern!r} cannot make a DELETE's URL: it must hold {{uid}}"
            " and may use only {node}, {uid} and {service}"
        )
    return pattern


def _service_batches(
    client: httpx.Client,
    *,
    service: str,
    pattern: str,
    node_secret: str,
    grace_period: timedelta,
    max_per_loop: int,
    max_records: int,
    dry_run: bool,
    force: bool,
    override_node: str | None,
    uids: UidRange,
) -> Iterator[PurgeCounts]:
    """One service's old rows in ``uids``, a batch at a time; stops after ``max_records`` rows with
    data (0: all)."""
    after_uid, purged = uids.start - 1, 0
    while rows := old_assignment_records(
        service=service, grace_period=grace_period, limit=max_per_loop, after_uid=after_uid, before_uid=uids.end
    ):
        batch = PurgeCounts(dry_run=dry_run, batches=1, fetched=len(rows))
        for row in rows:
            if row.node is None:
                # The node was removed: nobody holds data to tell.
                if not dry_run:
                    assignment_delete(uid=row.uid)
                batch.deleted += 1
                continue
            if row.downed and not force:
                # Wait for the node to come back up or be removed (tokenserver).
                batch.skipped_downed += 1
                continue
            tell = not (row.downed and _points_to_active(row, service=service, override_node=override_node))
            if tell and not node_secret:
                batch.skipped_no_secret += 1
                continue
            if tell and not dry_run:
                node = override_node if row.downed and override_node else row.node
                url = pattern.format(node=node, uid=row.uid, service=service)
                try:
                    _delete_node_data(client, url, delete_token(row, node=node, secret=node_secret))
                except DeleteFailed as failure:
                    logger.warning("purge_old_records: uid %s: %s; retried after the grace period", row.uid, failure)
                    batch.failures[failure.reason] += 1
                    assignment_replace(uid=row.uid)
                    continue
            if not dry_run:
                assignment_delete(uid=row.uid)
            batch.deleted += 1
            batch.nodes_told += tell
            batch.kept_active_data += not tell
            purged += 1
            if max_records and purged >= max_records:
                batch.reached_max_records = True
                yield batch
                return
        yield batch
        if len(rows) < max_per_loop:
            return
        after_uid = rows[-1].uid


def purge_batches(
    *,
    service: str | None = None,
    node_secret: str,
    grace_period: timedelta,
    max_per_loop: int = 10,
    max_records: int = 0,
    request_timeout: float = 60.0,
    dry_run: bool = False,
    force: bool = False,
    override_node: str | None = None,
    uids: UidRange = EVERY_UID,
) -> Iterator[PurgeCounts]:
    """The purge, one batch's counts at a time, for ``service`` or every service in turn, of the rows
    in ``uids``.

    Holds the lock while it runs (PurgeRunning if another run holds it; a dry run takes none): the
    whole lock for every uid, or the whole lock shared and the range's own for a range.
    """
    names = [service] if service else list(Service.objects.order_by("service").values_list("service", flat=True))
    # Refusals (an unknown service, a pattern no URL can be made from) before anything is done.
    patterns = {}
    for name in names:
        service_id(name)
        patterns[name] = _endpoint_pattern(name)
    if override_node is not None and (problem := node_url_problem(override_node, what="override node")):
        raise InvalidValue(problem)
    with ExitStack() as stack:
        if not dry_run and not _lock(stack, uids):
            raise PurgeRunning("nodes: another purge_old_records is running on these uids; this one did nothing")
        client = stack.enter_context(
            httpx.Client(
                transport=GuardedTransport(policy=addresses.policy()),
                timeout=httpx.Timeout(request_timeout),
                follow_redirects=False,
                trust_env=False,
                headers={"user-agent": USER_AGENT},
            )
        )
        remaining = max_records
        for name in names:
            for batch in _service_batches(
                client,
                service=name,
                pattern=patterns[name],
                node_secret=node_secret,
                grace_period=grace_period,
                max_per_loop=max_per_loop,
                max_records=remaining,
                dry_run=dry_run,
                force=force,
                override_node=override_node,
                uids=uids,
            ):
                yield batch
                if max_records:
                    remaining -= batch.purged_with_data
                if batch.reached_max_records:
                    return


def _lock(stack: ExitStack, uids: UidRange) -> bool:
    """Take the locks a run of ``uids`` holds (see the module's docstring); whether it got them."""
    if uids.whole:
        return stack.enter_context(advisory_lock(LOCK))
    return stack.enter_context(advisory_lock(LOCK, shared=True)) and stack.enter_context(
        advisory_lock(f"{LOCK}:{uids.start}:{uids.end}")
    )


def purge_old_records(
    *,
    service: str | None = None,
    node_secret: str,
    grace_period: timedelta,
    max_per_loop: int = 10,
    max_records: int = 0,
    request_timeout: float = 60.0,
    dry_run: bool = False,
    force: bool = False,
    override_node: str | None = None,
    uids: UidRange = EVERY_UID,
    progress: Callable[[str], object] | None = None,
) -> PurgeCounts:
    """tokenserver's purge_old_records: purge the replaced rows past ``grace_period`` (see the module's
    docstring), ``max_per_loop`` rows per batch, a ``progress`` line after each; returns the counts.

    Refused before anything is done: an unknown service (UnknownName), a bad override node
    (InvalidValue), another run going on (PurgeRunning). An error during the run raises PurgeStopped
    with the counts of what was done.
    """
    say = progress or (lambda line: None)
    started = time.monotonic()
    total = PurgeCounts(dry_run=dry_run)
    names = [service] if service else list(Service.objects.values_list("service", flat=True))
    total.backlog = sum(
        old_assignments_count(service=name, grace_period=grace_period, from_uid=uids.start, before_uid=uids.end)
        for name in names
    )
    among = "" if uids.whole else f" among {uids.describe()}"
    say(f"{quantity(total.backlog, 'old assignment')} past the grace period ({grace_text(grace_period)}){among}.")
    batches = purge_batches(
        service=service,
        node_secret=node_secret,
        grace_period=grace_period,
        max_per_loop=max_per_loop,
        max_records=max_records,
        request_timeout=request_timeout,
        dry_run=dry_run,
        force=force,
        override_node=override_node,
        uids=uids,
    )
    try:
        for batch in batches:
            total.add(batch)
            say(f"  batch {total.batches}: {quantity(batch.fetched, 'row')}: {batch.describe()}")
    except NodeError:
        raise  # a refusal before the run started: nothing was done
    except Exception as error:
        total.seconds = time.monotonic() - started
        raise PurgeStopped(f"nodes: purge_old_records stopped by an error: {error}", counts=total) from error
    total.seconds = time.monotonic() - started
    return total
