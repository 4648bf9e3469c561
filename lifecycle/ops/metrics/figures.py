"""The product's own figures, read from PostgreSQL at each scrape by a prometheus_client collector.

Each read costs what a queue holds, never a large table: the queues' partial indexes
(tokens_due_mail_idx, tokens_dead_mail_idx, webhook_deliveries_due), the mail runs' index on
(job_type, started_at), an outbox consumer's events after its newest handled one, small tables
(webhook endpoints; django-axes' attempts, which axes prunes once their cool-off is over), and the
planner's statistics for a large accounts table. Queue sizes are counted up to COUNT_LIMIT.

A scrape reads in one transaction with a statement timeout; each group of figures in a savepoint of
its own, so that one slow or failing query leaves out its group only, and
``lifecycle_metrics_figures_up`` says which.
"""

import logging
import time
from collections.abc import Callable, Iterable
from datetime import timedelta

from axes.models import AccessAttempt
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily, Metric

from accounts.nodes.consumer import ASSIGNMENTS
from lifecycle.backoffice.dashboard import accounts_by_status
from platform_events.webhooks.models import DeliveryStatus, EndpointStatus, WebhookDelivery, WebhookSubscription
from tokens.models import MailState, Token
from tokens.selectors import due_mail, mail_runs

logger = logging.getLogger(__name__)

# Per statement: the scrape must answer within Prometheus's scrape_timeout (10 s by default) even
# when every group's query is slow.
STATEMENT_TIMEOUT = "1500ms"
# Queues are counted up to this many rows (a backlog past it costs no more to report; the oldest
# due e-mail's age and the consumers' lag in seconds keep growing).
COUNT_LIMIT = 100_000
# Mail runs counted over this window: the rows are there, since RETENTION_MAIL_RUN_DAYS is at least a day.
MAIL_RUNS_WINDOW = timedelta(hours=24)
# The outbox's internal consumers (platform_events/outbox/consumers.py).
CONSUMERS = [ASSIGNMENTS]

CONSUMER_LAG = """
SELECT count(*), coalesce(extract(epoch FROM now() - min(behind.created_at)), 0)
FROM (
    SELECT e.created_at
    FROM outbox_events e
    WHERE e.event_type = ANY(%(types)s)
      AND e.seq > coalesce((
          -- The consumer's position: its newest handled event (processed_events_processed, newest first).
          SELECT handled.seq
          FROM processed_events p JOIN outbox_events handled ON handled.id = p.event_id
          WHERE p.consumer_group = %(group)s
          ORDER BY p.processed_at DESC
          LIMIT 1
      ), 0)
    ORDER BY e.seq
    LIMIT %(limit)s
) AS behind
"""


def gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def capped_count(queryset) -> int:
    return queryset.order_by()[:COUNT_LIMIT].count()


def mail_figures() -> Iterable[Metric]:
    """The mail queue (README, "Mailroom"), as the dashboard shows it."""
    oldest = due_mail().order_by("expires_at").values_list("created_at", flat=True).first()
    yield gauge(
        "lifecycle_mail_due_emails",
        "E-mails due now: what a drain run would claim (counted up to 100,000).",
        capped_count(due_mail()),
    )
    yield gauge(
        "lifecycle_mail_oldest_due_age_seconds",
        "How long the oldest e-mail due now has waited since its token was issued; 0 when none is due.",
        (timezone.now() - oldest).total_seconds() if oldest else 0,
    )
    yield gauge(
        "lifecycle_mail_retrying_emails",
        "E-mails waiting out a backoff after a transient SMTP failure (counted up to 100,000).",
        capped_count(Token.objects.filter(mail_state=MailState.RETRYING)),  # tokens_due_mail_idx
    )
    yield gauge(
        "lifecycle_mail_dead_emails",
        "E-mails given up (a permanent failure or MAILROOM_MAX_ATTEMPTS), kept until retention (counted up to 100,000).",
        capped_count(Token.objects.filter(mail_state=MailState.DEAD)),  # tokens_dead_mail_idx
    )


def mail_run_figures() -> Iterable[Metric]:
    """The drain runs of the last 24 hours by outcome, from their rows in ``jobs`` (an idle run leaves none)."""
    finished = Q(finished_at__isnull=False)
    runs = (
        mail_runs()
        .filter(started_at__gte=timezone.now() - MAIL_RUNS_WINDOW)
        .aggregate(
            ok=Count("id", filter=finished & Q(error__isnull=True, failed=0)),
            failed_mail=Count("id", filter=finished & Q(error__isnull=True, failed__gt=0)),
            error=Count("id", filter=finished & Q(error__isnull=False)),
            running=Count("id", filter=Q(finished_at__isnull=True)),
            sent=Sum("sent", default=0),
        )
    )
    family = GaugeMetricFamily(
        "lifecycle_mail_runs_24h",
        "Drain runs started in the last 24 hours, by outcome: ok; failed_mail (some mail retrying or dead);"
        " error (stopped early: SMTP server unreachable, connection lost, killed); running.",
        labels=["outcome"],
    )
    for outcome in ("ok", "failed_mail", "error", "running"):
        family.add_metric([outcome], runs[outcome])
    yield family
    yield gauge("lifecycle_mail_sent_emails_24h", "E-mails the drain runs of the last 24 hours sent.", runs["sent"])


def webhook_figures() -> Iterable[Metric]:
    """Deliveries waiting (webhook_deliveries_due), and the endpoints (a small table) by status."""
    deliveries = GaugeMetricFamily(
        "lifecycle_webhook_deliveries",
        "Webhook deliveries not yet delivered nor given up: pending (no failed attempt yet) and retrying"
        " (failed, tried again after a delay); counted up to 100,000.",
        labels=["status"],
    )
    for status, label in ((DeliveryStatus.PENDING, "pending"), (DeliveryStatus.FAILED, "retrying")):
        deliveries.add_metric([label], capped_count(WebhookDelivery.objects.filter(status=status)))
    yield deliveries
    counted = dict(WebhookSubscription.objects.order_by().values_list("status").annotate(Count("id")))
    endpoints = GaugeMetricFamily(
        "lifecycle_webhook_endpoints",
        "Webhook endpoints by status: active, paused, disabled (every attempt failed for WEBHOOKS_DISABLE_AFTER_DAYS, or 410 Gone).",
        labels=["status"],
    )
    for status in EndpointStatus:
        endpoints.add_metric([status.label], counted.get(status.value, 0))
    yield endpoints
    yield gauge(
        "lifecycle_webhook_endpoints_failing",
        "Enabled webhook endpoints whose every attempt has failed since their last success.",
        WebhookSubscription.objects.exclude(status=EndpointStatus.DISABLED_DEAD)
        .filter(failing_since__isnull=False)
        .count(),
    )


def outbox_figures() -> Iterable[Metric]:
    """Each internal consumer's lag: the events of its types after its newest handled one."""
    events = GaugeMetricFamily(
        "lifecycle_outbox_consumer_lag_events",
        "Events of a consumer's types published after the newest it handled (counted up to 100,000).",
        labels=["consumer"],
    )
    seconds = GaugeMetricFamily(
        "lifecycle_outbox_consumer_lag_seconds",
        "How long the oldest of those events has waited; 0 when the consumer is up to date.",
        labels=["consumer"],
    )
    for consumer in CONSUMERS:
        with connection.cursor() as cursor:
            cursor.execute(
                CONSUMER_LAG, {"types": sorted(consumer.event_types), "group": consumer.group, "limit": COUNT_LIMIT}
            )
            behind, waited = cursor.fetchone()
        events.add_metric([consumer.group], behind)
        seconds.add_metric([consumer.group], float(waited))
    yield events
    yield seconds


def account_figures() -> Iterable[Metric]:
    """Accounts by status: counted below 10,000 rows, estimated from the planner's statistics above (as the dashboard)."""
    by_status, estimated = accounts_by_status()
    family = GaugeMetricFamily(
        "lifecycle_accounts",
        "Accounts by status; estimated from PostgreSQL's statistics when lifecycle_accounts_estimated is 1.",
        labels=["status"],
    )
    for status, count in by_status.items():
        family.add_metric([status], count)
    yield family
    yield gauge(
        "lifecycle_accounts_estimated",
        "1 when lifecycle_accounts comes from PostgreSQL's statistics (10,000 accounts or more), 0 when counted.",
        int(estimated),
    )


def lockout_figures() -> Iterable[Metric]:
    """Staff logins django-axes refuses now: per login and address (AXES_LOCKOUT_PARAMETERS), failures
    within the cool-off summed over user agents, as axes sums them."""
    recent = AccessAttempt.objects.filter(attempt_time__gte=timezone.now() - settings.AXES_COOLOFF_TIME)
    locked = (
        recent.order_by()
        .values("username", "ip_address")
        .annotate(failures=Sum("failures_since_start"))
        .filter(failures__gte=settings.AXES_FAILURE_LIMIT)
    )
    yield gauge(
        "lifecycle_staff_lockouts",
        "Back-office logins locked out now, one per login and address (django-axes).",
        locked.count(),
    )


FIGURES: dict[str, Callable[[], Iterable[Metric]]] = {
    "mail": mail_figures,
    "mail_runs": mail_run_figures,
    "webhooks": webhook_figures,
    "outbox": outbox_figures,
    "accounts": account_figures,
    "lockouts": lockout_figures,
}


class ProductFigures:
    """A prometheus_client collector: every group of FIGURES read afresh at each scrape."""

    def collect(self) -> Iterable[Metric]:
        started = time.monotonic()
        read = read_figures()
        up = GaugeMetricFamily(
            "lifecycle_metrics_figures_up",
            "1 when a group of figures was read at this scrape, 0 when its query failed (a timeout, the database down).",
            labels=["figures"],
        )
        for name, families in read.items():
            up.add_metric([name], 0 if families is None else 1)
            yield from families or []
        yield up
        yield gauge(
            "lifecycle_metrics_figures_seconds",
            "How long this scrape took to read the figures from PostgreSQL.",
            time.monotonic() - started,
        )


def read_figures() -> dict[str, list[Metric] | None]:
    """Each group's metric families, or None for a group whose query failed."""
    read: dict[str, list[Metric] | None] = dict.fromkeys(FIGURES)
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SELECT set_config('statement_timeout', %s, true)", [STATEMENT_TIMEOUT])
            for name, figures in FIGURES.items():
                try:
                    with transaction.atomic():  # a savepoint: a failed query leaves the other groups readable
                        read[name] = list(figures())
                except DatabaseError as error:
                    logger.warning("metrics: the %s figures were not read: %s", name, error)
    except DatabaseError as error:  # the database unreachable: every group is left out
        logger.warning("metrics: no figures read: %s", error)
    return read
