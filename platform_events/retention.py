"""Retention rules: what ``manage.py cleanup`` deletes, one rule per table that grows.

Each app declares its own rules (accounts/retention.py, tokens/retention.py, and below the rate
limits'); lifecycle/ops/retention.py lists them all with those of the libraries' tables. A rule counts
what it would delete (for ``--dry-run``) and deletes one batch at a time, each batch a transaction of
its own, so a long cleanup holds no lock for long and stops cleanly between batches.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from platform_events.api.models import IdempotencyKey
from platform_events.audit.context import audit_context
from platform_events.limits.models import RateLimit
from platform_events.outbox.models import OutboxEvent, ProcessedEvent
from platform_events.quantities import quantity

# Long enough for the admin or an operator to look at yesterday's hits; the limits need only the current window.
RATE_LIMITS_KEPT = timedelta(days=1)


@dataclass(frozen=True)
class RetentionRule:
    name: str  # as --only takes it: "sign-ups", "tokens", ...
    keeps: str  # what is kept, in a sentence fragment: "sign-ups never activated: 7 days"
    count: Callable[[], int]
    delete_batch: Callable[[int], int]  # deletes up to n rows; returns how many it deleted


def queryset_rule(name: str, keeps: str, old: QuerySet, *, reason: str | None = None) -> RetentionRule:
    """A rule deleting the rows of ``old``, oldest key first, skipping rows another session holds;
    ``reason`` goes to the audit rows the deletion's triggers write."""

    def delete_batch(size: int) -> int:
        with transaction.atomic(), audit_context(reason=reason):
            batch = list(old.order_by("pk").select_for_update(skip_locked=True).values_list("pk", flat=True)[:size])
            return old.model.objects.filter(pk__in=batch).delete()[0]

    return RetentionRule(name=name, keeps=keeps, count=old.count, delete_batch=delete_batch)


def old_rate_limits() -> RetentionRule:
    return queryset_rule(
        "limits",
        "rate-limit counts: 1 day after their window ended",
        RateLimit.objects.filter(window_end__lt=timezone.now() - RATE_LIMITS_KEPT),
    )


def old_events() -> RetentionRule:
    """Outbox events this old, with their deliveries, once nothing has them due: every endpoint had
    them, every consumer group recorded them (RETENTION_EVENT_DAYS, 30 by default). Deleted through
    outbox_events_delete_old(), the runtime role's one way to delete events, which checks that and
    audits each batch."""
    days = settings.RETENTION_EVENT_DAYS

    def count() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT outbox_events_old_count(%s)", [days])
            return cursor.fetchone()[0]

    def delete_batch(size: int) -> int:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT outbox_events_delete_old(%s, %s)", [days, size])
            return cursor.fetchone()[0]

    return RetentionRule(
        name="events",
        keeps=f"outbox events and their webhook deliveries: {quantity(days, 'day')}, once nothing has them due",
        count=count,
        delete_batch=delete_batch,
    )


def old_processed_events() -> RetentionRule:
    """The consumers' records, as long as the events they record: a record is kept while its event is
    (an event an endpoint is still due outlives the retention period; without its record, the consumer
    would handle it again)."""
    days = settings.RETENTION_EVENT_DAYS
    return queryset_rule(
        "processed-events",
        f"internal consumers' processed events: {quantity(days, 'day')}, once their event is gone",
        ProcessedEvent.objects.filter(processed_at__lt=timezone.now() - timedelta(days=days)).exclude(
            Exists(OutboxEvent.objects.filter(id=OuterRef("event_id")))
        ),
    )


def expired_idempotency_keys() -> RetentionRule:
    """The client API's Idempotency-Keys past their time (API_IDEMPOTENCY_HOURS, 24 by default):
    a retry after that runs as a new request."""
    return queryset_rule(
        "idempotency-keys",
        f"the client API's idempotency keys: {quantity(settings.API_IDEMPOTENCY_HOURS, 'hour')}",
        IdempotencyKey.objects.filter(expires_at__lt=timezone.now()),
    )
