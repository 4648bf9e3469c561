"""Reads of webhook endpoints and their deliveries: what is due, how long it has waited, how many wait
and how the endpoints stand. The dispatcher claims with the same definition of due (dispatch.py)."""

from contextlib import contextmanager
from datetime import timedelta

from django.db import connection, transaction
from django.db.models import Count

from platform_events.webhooks.models import DeliveryStatus, EndpointStatus, WebhookDelivery, WebhookSubscription

# The deliveries ``d`` a run may claim now: waiting and their time come, no run's lease on them, their
# endpoint active, and no earlier event of the same account still waiting for that endpoint.
DUE = """
    FROM webhook_deliveries d
    JOIN webhook_subscriptions s ON s.id = d.subscription_id AND s.status = 'ACTIVE'
    WHERE d.status IN ('PENDING', 'FAILED') AND d.next_retry_at <= now()
      AND (d.lease_until IS NULL OR d.lease_until < now())
      AND NOT EXISTS (
          SELECT FROM webhook_deliveries earlier
          WHERE earlier.subscription_id = d.subscription_id AND earlier.ordering_key = d.ordering_key
            AND earlier.event_seq < d.event_seq AND earlier.status IN ('PENDING', 'FAILED'))
"""


@contextmanager
def in_due_order():
    """A cursor in a transaction whose queries may not sort: for an ORDER BY over due deliveries the one
    plan left walks webhook_deliveries_due in order and stops at the LIMIT. The planner's own choice
    reads, checks and sorts the whole queue: it estimates the "no earlier event of the account"
    anti-join at a few rows whatever the queue holds (platform_events/sql/0014_due_order.sql)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('enable_sort'), set_config('enable_sort', 'off', true)")
        before = cursor.fetchone()[0]
        yield cursor
        # Put back what the caller's transaction had: a released savepoint would keep "off" for it.
        cursor.execute("SELECT set_config('enable_sort', %s, true)", [before])


def longest_due_wait() -> timedelta | None:
    """How long the delivery due longest has been due; None when none is. The dispatchers claim what
    is due within WEBHOOKS_POLL_SECONDS, so a long wait says none is running. Read in due order through
    webhook_deliveries_due (in_due_order): it costs the deliveries held up behind an account's earlier
    one, not the queue."""
    with in_due_order() as cursor:
        cursor.execute(f"SELECT now() - d.next_retry_at {DUE} ORDER BY d.next_retry_at, d.event_seq LIMIT 1")
        row = cursor.fetchone()
    return row[0] if row else None


def waiting_deliveries_count(status: DeliveryStatus, *, up_to: int) -> int:
    """How many deliveries wait in ``status``, PENDING (no failed attempt yet) or FAILED (to be tried
    again), counted up to ``up_to``: read through webhook_deliveries_due, whose rows they are, so a
    backlog past ``up_to`` costs no more."""
    return WebhookDelivery.objects.filter(status=status).order_by()[:up_to].count()


def endpoint_counts_by_status() -> dict[str, int]:
    """Endpoints per status (EndpointStatus's values, every one named)."""
    counted = dict(WebhookSubscription.objects.order_by().values_list("status").annotate(Count("id")))
    return {status: counted.get(status, 0) for status in EndpointStatus.values}


def failing_endpoints_count() -> int:
    """Endpoints not disabled whose every attempt has failed since their last success."""
    return (
        WebhookSubscription.objects.exclude(status=EndpointStatus.DISABLED_DEAD)
        .filter(failing_since__isnull=False)
        .count()
    )
