"""The webhook dispatcher: claim due deliveries, sign and POST each, record the attempt.

Any number of dispatchers may run at once (the cron command, the django-q2 schedule, the listener):

* A claim leases due rows with FOR UPDATE SKIP LOCKED, so no two runs hold one delivery, and nothing
  reads by a cursor, so a delivery whose transaction committed late is claimed when it is visible.
* An account's events reach one endpoint in order: a delivery is not due while an earlier event of the
  same account (its ordering key) to the same endpoint is still pending or retrying, whoever holds it.
  Head-of-line blocking is the price: an account's later events wait out its earlier one's retries,
  until that one is delivered or given up (PERMANENTLY_FAILED).
* Only the run holding a delivery's claim may record its attempt; a run renews its lease while it
  still has deliveries to send, so a slow endpoint never lets two runs hold one delivery. A run killed
  mid-way leaves its claims to lapse: those deliveries are sent again (at least once, never lost).
* While a batch's last POSTs go out, the run claims its next batch (NextClaim), so that PostgreSQL
  claims while the receivers answer rather than between batches.
"""

import json
import logging
import time
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection

from platform_events.db.unawaited import UnawaitedStatement
from platform_events.webhooks import http
from platform_events.webhooks.endpoints import endpoint_secrets
from platform_events.webhooks.models import DeliveryStatus, EndpointStatus, WebhookSubscription
from platform_events.webhooks.secrets import SecretKeyError
from platform_events.webhooks.selectors import DUE, in_due_order
from platform_events.webhooks.signing import Signer

logger = logging.getLogger(__name__)

# Successful attempts are recorded this many at a time: a statement's own cost (its plan, its commit,
# the statement trigger) spread over fifty, where PostgreSQL's time per delivery competes with the
# receiver's for the same cores. A run killed between a POST and its record sends those again (the same
# webhook-id, so a receiver that keeps ids sees each once): at most this many, and only after a kill. A
# record the database refuses (a lock timeout, a lost session) fails the run with one POST more to send
# again.
RECORD_EVERY = 50

_CLAIM = """
WITH due AS (
    SELECT d.id {due}
    ORDER BY d.next_retry_at, d.event_seq
    LIMIT {size}
    FOR UPDATE OF d SKIP LOCKED
)
UPDATE webhook_deliveries d SET claim = {claim}, lease_until = now() + {lease}
FROM due, outbox_events e
WHERE d.id = due.id AND e.id = d.event_id
RETURNING d.id, d.subscription_id, d.event_id, d.attempts, e.payload::text
"""
CLAIM = _CLAIM.format(due=DUE, size="%(size)s", claim="%(claim)s", lease="%(lease)s")
# The same claim sent without waiting for its answer (NextClaim): numbered parameters, sent as text.
CLAIM_UNAWAITED = _CLAIM.format(due=DUE, size="$1::int", claim="$2::uuid", lease="$3::interval")


@dataclass
class Delivery:
    id: uuid.UUID
    subscription_id: uuid.UUID
    event_id: uuid.UUID
    attempts: int  # made before this one
    body: str  # the event's payload: {"type", "timestamp", "data"}


@dataclass
class Claim:
    id: uuid.UUID = field(default_factory=uuid.uuid4)
    # time.monotonic() by which the lease ends at the latest: read before the database starts it.
    lease_ends: float = 0.0

    def running_out(self) -> bool:
        """Whether one more attempt could outlast the lease."""
        return time.monotonic() + http.attempt_seconds() >= self.lease_ends


@dataclass
class RunResult:
    claimed: int = 0
    delivered: int = 0
    retrying: int = 0
    failed: int = 0
    lost_claims: int = 0  # deliveries another run took over after this run's lease ran out
    disabled: list[str] = field(default_factory=list)  # endpoints disabled by this run

    def summary(self) -> str:
        parts = [
            f"{self.claimed} claimed",
            f"{self.delivered} delivered",
            f"{self.retrying} to retry",
            f"{self.failed} failed for good",
        ]
        if self.lost_claims:
            parts.append(f"{self.lost_claims} taken over by another run")
        if self.disabled:
            parts.append(f"endpoints disabled: {', '.join(self.disabled)}")
        return "; ".join(parts)


def claim_batch(size: int, *, sorting_off: bool = False) -> tuple[Claim, list[Delivery]]:
    """Lease up to ``size`` due deliveries to this run; rows another run is claiming are skipped.
    ``sorting_off``: the session already runs with enable_sort off (a run's own settings), so the
    claim needs no transaction of its own to turn it off: one round trip instead of five."""
    claim = Claim(lease_ends=time.monotonic() + settings.WEBHOOKS_LEASE_SECONDS)
    params = {"size": size, "claim": claim.id, "lease": timedelta(seconds=settings.WEBHOOKS_LEASE_SECONDS)}
    with connection.cursor() if sorting_off else in_due_order() as cursor:
        cursor.execute(CLAIM, params)
        rows = cursor.fetchall()
    # At most one delivery per (endpoint, account) is due at a time, so the batch's own order is free.
    return claim, [Delivery(*row) for row in rows]


class NextClaim:
    """The next batch's claim, sent without waiting for its answer while this batch's last POSTs go out
    (platform_events/db/unawaited.py): PostgreSQL claims while the receivers answer, instead of between
    batches. It takes nothing this batch holds (leased), nor an account's later event while this batch
    sends its earlier one: that one is PENDING or FAILED until its attempt is recorded, so the later one
    is not due. Its lease starts when it is sent; the batch that takes it up renews it as its own."""

    def __init__(self, size: int):
        self.size = size
        self.claim: Claim | None = None  # once sent
        self.deliveries: list[Delivery] = []
        self._statement = UnawaitedStatement()

    def send(self) -> None:
        self.claim = Claim(lease_ends=time.monotonic() + settings.WEBHOOKS_LEASE_SECONDS)
        lease = f"{settings.WEBHOOKS_LEASE_SECONDS} seconds"
        self._statement.send(CLAIM_UNAWAITED, [str(self.size), str(self.claim.id), lease])

    def collect(self) -> None:
        rows = self._statement.collect_rows()
        if rows is not None:
            self.deliveries = [Delivery(*row) for row in rows]

    def settle(self) -> None:
        self._statement.settle()


def renew_lease(claim: Claim, deliveries: list[Delivery]) -> set[uuid.UUID]:
    """Lease ``deliveries`` for another WEBHOOKS_LEASE_SECONDS, those this run still holds; returns their ids."""
    lease_ends = time.monotonic() + settings.WEBHOOKS_LEASE_SECONDS
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE webhook_deliveries SET lease_until = now() + %s WHERE id = ANY(%s) AND claim = %s RETURNING id",
            [timedelta(seconds=settings.WEBHOOKS_LEASE_SECONDS), [d.id for d in deliveries], claim.id],
        )
        held = {row[0] for row in cursor.fetchall()}
    claim.lease_ends = lease_ends
    return held


def release(claim: Claim, deliveries: list[Delivery]) -> None:
    """Give deliveries back unattempted (their endpoint was disabled by this run)."""
    if not deliveries:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE webhook_deliveries SET lease_until = NULL, claim = NULL WHERE id = ANY(%s) AND claim = %s",
            [[d.id for d in deliveries], claim.id],
        )


def record_attempt(
    delivery: Delivery, attempt: http.Attempt, *, claim: Claim, status: DeliveryStatus, retry_in: float | None
) -> bool:
    """Record an attempt and the delivery's new state; False when this run no longer holds its claim."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE webhook_deliveries SET status = %(status)s, attempts = attempts + 1,"
            " next_retry_at = CASE WHEN %(retry_in)s::float8 IS NULL THEN next_retry_at"
            "   ELSE now() + make_interval(secs => %(retry_in)s::float8) END,"
            " http_status = %(http_status)s, http_response_body_excerpt = %(excerpt)s, latency_ms = %(latency)s,"
            " first_attempt_at = coalesce(first_attempt_at, now()), last_attempt_at = now(),"
            " lease_until = NULL, claim = NULL"
            " WHERE id = %(id)s AND claim = %(claim)s",
            {
                "status": status,
                "retry_in": retry_in,
                "http_status": attempt.status,
                "excerpt": attempt.excerpt[:2048],
                "latency": attempt.latency_ms,
                "id": delivery.id,
                "claim": claim.id,
            },
        )
        return cursor.rowcount == 1


class DeliveredRecords:
    """Successful attempts, kept until RECORD_EVERY are in, then recorded by one statement sent without
    waiting for its answer (platform_events/db/unawaited.py): the next POSTs go out while PostgreSQL
    records them. ``collect()`` reads the answer into the run's counts, and the answer to the next
    batch's claim if that is the statement on its way; anything else using the connection calls it
    first. A record on its way is applied even if the run is killed next.

    The ids go twice, in the rows and as an array: from the array the planner sees RECORD_EVERY keys and
    reads them through the primary key; from the rows alone it guesses the claim matches one delivery
    and reads the whole table for it (2.0 → 0.9 ms a record of fifty, EXPLAIN ANALYZE on the bench's
    queue of 2,000).

    The same statement marks their endpoints as answering: failures forgotten, the last success noted
    (at most once a minute, so that a busy endpoint's row is not rewritten by every record); one disabled
    meanwhile (a 410 later in the batch) keeps its count. No round trip of its own that the next batch
    would wait for. The endpoints' rows are locked in the order of their ids, so two runs recording
    successes of the same endpoints never wait for each other in a circle."""

    STATEMENT = (
        "WITH recorded AS ("
        "  UPDATE webhook_deliveries d SET status = 'DELIVERED', attempts = d.attempts + 1,"
        "   http_status = a.http_status, http_response_body_excerpt = a.excerpt, latency_ms = a.latency,"
        "   first_attempt_at = coalesce(d.first_attempt_at, now()), last_attempt_at = now(),"
        "   lease_until = NULL, claim = NULL"
        "  FROM jsonb_to_recordset($1::jsonb) AS a(id uuid, http_status int, excerpt text, latency int)"
        "  WHERE d.id = a.id AND d.claim = $2::uuid AND d.id = ANY($3::uuid[])"
        "  RETURNING d.subscription_id"
        "), endpoint_answered AS ("
        "  UPDATE webhook_subscriptions SET last_success_at = now(), failure_count = 0, failing_since = NULL"
        "  WHERE id IN ("
        "   SELECT id FROM webhook_subscriptions WHERE id IN (SELECT subscription_id FROM recorded)"
        "    AND status <> 'DISABLED_DEAD' AND (failure_count <> 0 OR failing_since IS NOT NULL"
        "     OR last_success_at IS NULL OR last_success_at < now() - interval '1 minute')"
        "   ORDER BY id FOR NO KEY UPDATE"
        "  )"
        ") SELECT count(*) FROM recorded"
    )

    def __init__(self, claim: Claim, result: "RunResult", next_claim: NextClaim | None = None):
        self.claim = claim
        self.result = result
        self.next_claim = next_claim  # sent on the same connection, between two records
        self._statement = UnawaitedStatement()
        self._pending: list[tuple[Delivery, http.Attempt]] = []  # not sent yet
        self._sent = 0  # deliveries in the statement whose answer is due
        self._posts_since = 0  # POSTs that went out since that statement

    @property
    def answer_due(self) -> bool:
        return self._sent > 0

    def settle(self) -> None:
        self._statement.settle()
        self._sent = 0
        if self.next_claim is not None:
            self.next_claim.settle()

    def before_post(self) -> None:
        """Let one POST go out while PostgreSQL records, then read the answer: a record refused (a lock
        timeout, a terminated session) leaves at most RECORD_EVERY + 1 deliveries to be sent again."""
        if self._sent and self._posts_since >= 1:
            self.collect()
        self._posts_since += 1

    def add(self, delivery: Delivery, attempt: http.Attempt) -> None:
        self._pending.append((delivery, attempt))
        if len(self._pending) >= RECORD_EVERY:
            self.send()

    def send(self) -> None:
        """Send what is pending, after reading the answer to the last statement."""
        self.collect()
        if not self._pending:
            return
        rows = [
            {"id": str(d.id), "http_status": a.status, "excerpt": a.excerpt[:2048], "latency": a.latency_ms}
            for d, a in self._pending
        ]
        ids = "{" + ",".join(row["id"] for row in rows) + "}"
        self._statement.send(self.STATEMENT, [json.dumps(rows), str(self.claim.id), ids])
        self._sent = len(self._pending)
        self._pending.clear()
        self._posts_since = 0

    def collect(self) -> None:
        if self.next_claim is not None:
            self.next_claim.collect()
        rows = self._statement.collect_rows()
        if rows is None:
            return
        ((recorded,),) = rows
        self.result.delivered += recorded
        # The rest matched nothing: another run took them over after this run's lease ran out.
        self.result.lost_claims += self._sent - recorded
        self._sent = 0


def _endpoint_failed(endpoint_id: uuid.UUID, *, gone: bool) -> str | None:
    """Count a failure; disable the endpoint on 410 Gone or when it has failed for WEBHOOKS_DISABLE_AFTER_DAYS.
    Returns the reason when this call disabled it."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE webhook_subscriptions SET failure_count = failure_count + 1, last_failure_at = now(),"
            " failing_since = coalesce(failing_since, now()),"
            " status = CASE WHEN %(gone)s OR coalesce(failing_since, now()) < now() - %(after)s"
            "   THEN 'DISABLED_DEAD' ELSE status END,"
            " disabled_reason = CASE"
            "   WHEN %(gone)s THEN 'the endpoint answered 410 Gone on ' || to_char(now(), 'YYYY-MM-DD HH24:MI:SS TZ')"
            "   WHEN coalesce(failing_since, now()) < now() - %(after)s"
            "     THEN 'every attempt failed since ' || to_char(failing_since, 'YYYY-MM-DD HH24:MI:SS TZ')"
            "   ELSE disabled_reason END"
            " WHERE id = %(id)s RETURNING status, disabled_reason",
            {"gone": gone, "after": timedelta(days=settings.WEBHOOKS_DISABLE_AFTER_DAYS), "id": endpoint_id},
        )
        row = cursor.fetchone()
    return row[1] if row and row[0] == EndpointStatus.DISABLED_DEAD else None


def deliver_batch(
    transport, claim: Claim, deliveries: list[Delivery], *, next_claim: NextClaim | None = None
) -> RunResult:
    """Attempt each claimed delivery once; what fails is scheduled again or given up. ``next_claim``
    is sent while the batch's last RECORD_EVERY POSTs go out."""
    result = RunResult(claimed=len(deliveries))
    if not deliveries:
        return result
    endpoints = {
        e.id: e
        for e in WebhookSubscription.objects.filter(
            id__in={d.subscription_id for d in deliveries}, status=EndpointStatus.ACTIVE
        )
    }
    signers = {endpoint_id: _signer_or_none(endpoint) for endpoint_id, endpoint in endpoints.items()}
    # An endpoint disabled since the claim (by the batch before, which claimed this one before its 410
    # came, or by staff) gets nothing more: its deliveries are given back unattempted.
    disabled = {d.subscription_id for d in deliveries} - endpoints.keys()
    failures: dict[uuid.UUID, list[http.Attempt]] = {}  # said on the console once per endpoint, with why
    held = {d.id for d in deliveries}
    records = DeliveredRecords(claim, result, next_claim)
    try:
        for index, delivery in enumerate(deliveries):
            if delivery.subscription_id in disabled:
                continue
            # Before the lease check: reading the last record's answer may wait (a row lock), and no
            # POST may go out after a wait without the lease looked at again.
            records.before_post()
            if claim.running_out():
                records.send()
                records.collect()
                held = renew_lease(claim, deliveries[index:])
            if delivery.id not in held:  # another run took it over after this run's lease ran out
                result.lost_claims += 1
                continue
            # Late in the batch, and not earlier: a claim made long before its batch starts would hold
            # deliveries idle that another run could be sending.
            if (
                next_claim
                and not next_claim.claim
                and not records.answer_due
                and len(deliveries) - index <= RECORD_EVERY
            ):
                next_claim.send()
            endpoint = endpoints[delivery.subscription_id]
            signer = signers[endpoint.id]
            if signer is None:  # nothing to sign with: a failed attempt, of this endpoint's only
                attempt = http.Attempt("retry", None, UNREADABLE_SECRET, 0)
            else:
                attempt = _attempt(transport, endpoint, delivery, signer)
            status, retry_in = _next_state(delivery, attempt)
            if status == DeliveryStatus.DELIVERED:
                records.add(delivery, attempt)
                continue
            records.collect()
            if not record_attempt(delivery, attempt, claim=claim, status=status, retry_in=retry_in):
                result.lost_claims += 1
                continue
            failures.setdefault(endpoint.id, []).append(attempt)
            if status == DeliveryStatus.FAILED:
                result.retrying += 1
            else:
                result.failed += 1
            reason = _endpoint_failed(endpoint.id, gone=attempt.outcome == "gone")
            if reason:
                disabled.add(endpoint.id)
                result.disabled.append(endpoint.url)
                logger.warning("webhook endpoint %s disabled: %s", endpoint.id, reason)
        records.send()
        records.collect()
    except BaseException:
        records.settle()  # Ctrl-C or an error mid-POST: the connection in step again for what runs next
        raise
    for endpoint_id, attempts in failures.items():
        _log_failures(endpoints[endpoint_id], attempts)
    release(claim, [d for d in deliveries if d.subscription_id in disabled])
    return result


def _log_failures(endpoint: WebhookSubscription, attempts: list[http.Attempt]) -> None:
    """One line per endpoint and batch: how many were not delivered, and why the first was not (a
    refused address, a timeout, the receiver's answer), so that a console says more than "to retry"."""
    first = attempts[0]
    why = first.excerpt if first.status is None else f"it answered {first.status}: {first.excerpt[:200]}".rstrip(": ")
    logger.warning(
        "webhook endpoint %s (%s): %s not delivered: %s",
        endpoint.id,
        endpoint.url,
        f"{len(attempts)} deliver{'y' if len(attempts) == 1 else 'ies'}",
        why,
    )


UNREADABLE_SECRET = (
    "not sent: the endpoint's signing secret cannot be decrypted with WEBHOOK_SECRET_KEYS (a key removed before"
    " reencrypt_webhook_secrets ran, or the column changed); rotate the secret or restore the key"
)


def _signer_or_none(endpoint: WebhookSubscription) -> Signer | None:
    try:
        return Signer(endpoint_secrets(endpoint))
    except SecretKeyError as error:
        logger.error("webhook endpoint %s: %s", endpoint.id, error)
        return None


@contextmanager
def _run_settings():
    """The session's settings while a run lasts; yields whether they were set (not in a caller's
    transaction, which keeps its own rules).

    * synchronous_commit off: the run's commits do not wait for the WAL to reach disk. A record lost
      to a crash of PostgreSQL itself (not of this process: a commit it saw stays) only sends that
      delivery again, with the same webhook-id, which is at least once as promised; waiting for the
      flush would make the records cost 0.8 ms each, most of a delivery.
    * enable_sort off, as in_due_order() sets it for one transaction: the claim walks the due index.
      None of the run's other statements sorts.

    After the run the session has what it had before, its own SET included (RESET would put back the
    server's defaults instead)."""
    if connection.in_atomic_block:
        yield False
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('synchronous_commit'), current_setting('enable_sort'),"
            " set_config('synchronous_commit', 'off', false), set_config('enable_sort', 'off', false)"
        )
        before = cursor.fetchone()[:2]
    try:
        yield True
    finally:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT set_config('synchronous_commit', %s, false), set_config('enable_sort', %s, false)", before
            )


def _attempt(transport, endpoint: WebhookSubscription, delivery: Delivery, signer: Signer) -> http.Attempt:
    headers = signer.headers(msg_id=str(delivery.event_id), timestamp=datetime.now(UTC), body=delivery.body)
    headers["content-type"] = "application/json"
    return http.post(transport, endpoint.url, body=delivery.body.encode(), headers=headers)


def _next_state(delivery: Delivery, attempt: http.Attempt) -> tuple[DeliveryStatus, float | None]:
    if attempt.outcome == "delivered":
        return DeliveryStatus.DELIVERED, None
    if attempt.outcome == "gone":
        return DeliveryStatus.PERMANENTLY_FAILED, None
    delay = http.next_attempt_delay(delivery.attempts + 1, attempt.retry_after)
    if delay is None:
        return DeliveryStatus.PERMANENTLY_FAILED, None
    return DeliveryStatus.FAILED, delay


def deliver(
    *,
    batch_size: int | None = None,
    max_batches: int | None = None,
    on_batch: Callable[[RunResult], None] | None = None,
) -> RunResult:
    """Deliver until nothing is due (or ``max_batches``): one pass of the cron command, the schedule or
    the listener. ``on_batch`` hears each batch's result (the command's progress lines)."""
    size = batch_size or settings.WEBHOOKS_BATCH_SIZE
    total = RunResult()
    with http.new_transport() as transport, _run_settings() as sorting_off:
        batches = 0
        next_claim = None
        while max_batches is None or batches < max_batches:
            if next_claim and next_claim.deliveries:
                claim, deliveries = next_claim.claim, next_claim.deliveries
            else:  # none sent, or it found nothing due then: what the last batch delivered may have made some due
                claim, deliveries = claim_batch(size, sorting_off=sorting_off)
            batches += 1
            # Only with the run's own session settings (a claim needs sorting off), and not past the last batch.
            next_claim = NextClaim(size) if sorting_off and batches != max_batches else None
            result = deliver_batch(transport, claim, deliveries, next_claim=next_claim)
            if on_batch and result.claimed:
                on_batch(result)
            for name in ("claimed", "delivered", "retrying", "failed", "lost_claims"):
                setattr(total, name, getattr(total, name) + getattr(result, name))
            total.disabled += result.disabled
            # Not "fewer than a batch": delivering an account's event makes its next one due.
            if result.claimed == 0:
                break
    return total
