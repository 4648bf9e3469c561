"""The product's own figures, read from PostgreSQL at each scrape by a prometheus_client collector.

Each read costs what a queue holds, never a large table: the queues' partial indexes
(tokens_due_mail_idx, tokens_dead_mail_idx, webhook_deliveries_due), the mail runs' index on
(job_type, started_at), an outbox consumer's events after its newest handled one, the Kafka relay's unpublished and lately
published events (event_publications_due, event_publications_published_at), small tables
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

from django.db import DatabaseError, transaction
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily, Metric

from accounts.nodes.consumer import ASSIGNMENTS
from accounts.selectors import account_counts_by_status
from platform_events.db.timeouts import bounded_statements
from platform_events.kafka.selectors import stream_figures
from platform_events.lockouts.selectors import locked_out_logins_count
from platform_events.outbox.selectors import consumer_lag
from platform_events.webhooks.models import DeliveryStatus, EndpointStatus
from platform_events.webhooks.selectors import (
    endpoint_counts_by_status,
    failing_endpoints_count,
    waiting_deliveries_count,
)
from tokens.models import MailState
from tokens.selectors import due_mail_count, mail_count, mail_run_counts, oldest_due_mail_issued_at

logger = logging.getLogger(__name__)

# Per statement: the scrape must answer within Prometheus's scrape_timeout (10 s by default) even
# when every group's query is slow.
STATEMENT_TIMEOUT = "1500ms"
# Queues are counted up to this many rows (a backlog past it costs no more to report; the oldest
# due e-mail's age and the consumers' lag in seconds keep growing).
COUNT_LIMIT = 100_000
# Mail runs counted over this window: the rows are there, since RETENTION_MAIL_RUN_DAYS is at least a day.
MAIL_RUNS_WINDOW = timedelta(hours=24)
# The Kafka relay's publications counted over this window.
KAFKA_PUBLISHED_WINDOW = timedelta(minutes=5)
# The outbox's internal consumers (platform_events/outbox/consumers.py).
CONSUMERS = [ASSIGNMENTS]


def gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def mail_figures() -> Iterable[Metric]:
    """The mail queue (docs/mailroom.md, "Due mail"), as the dashboard shows it."""
    oldest = oldest_due_mail_issued_at()
    yield gauge(
        "lifecycle_mail_due_emails",
        "E-mails due now: what a drain run would claim (counted up to 100,000).",
        due_mail_count(up_to=COUNT_LIMIT),
    )
    yield gauge(
        "lifecycle_mail_oldest_due_age_seconds",
        "How long the oldest e-mail due now has waited since its token was issued; 0 when none is due.",
        (timezone.now() - oldest).total_seconds() if oldest else 0,
    )
    yield gauge(
        "lifecycle_mail_retrying_emails",
        "E-mails waiting out a backoff after a transient SMTP failure (counted up to 100,000).",
        mail_count(MailState.RETRYING, up_to=COUNT_LIMIT),
    )
    yield gauge(
        "lifecycle_mail_dead_emails",
        "E-mails given up (a permanent failure or MAILROOM_MAX_ATTEMPTS), kept until retention (counted up to 100,000).",
        mail_count(MailState.DEAD, up_to=COUNT_LIMIT),
    )


def mail_run_figures() -> Iterable[Metric]:
    """The drain runs of the last 24 hours by outcome, from their rows in ``jobs`` (an idle run leaves none)."""
    runs = mail_run_counts(since=timezone.now() - MAIL_RUNS_WINDOW)
    family = GaugeMetricFamily(
        "lifecycle_mail_runs_24h",
        "Drain runs started in the last 24 hours, by outcome: ok; failed_mail (some mail retrying or dead);"
        " error (stopped early: SMTP server unreachable, connection lost, killed); running.",
        labels=["outcome"],
    )
    for outcome in ("ok", "failed_mail", "error", "running"):
        family.add_metric([outcome], getattr(runs, outcome))
    yield family
    yield gauge("lifecycle_mail_sent_emails_24h", "E-mails the drain runs of the last 24 hours sent.", runs.sent)


def webhook_figures() -> Iterable[Metric]:
    """Deliveries waiting (webhook_deliveries_due), and the endpoints (a small table) by status."""
    deliveries = GaugeMetricFamily(
        "lifecycle_webhook_deliveries",
        "Webhook deliveries not yet delivered nor given up: pending (no failed attempt yet) and retrying"
        " (failed, tried again after a delay); counted up to 100,000.",
        labels=["status"],
    )
    for status, label in ((DeliveryStatus.PENDING, "pending"), (DeliveryStatus.FAILED, "retrying")):
        deliveries.add_metric([label], waiting_deliveries_count(status, up_to=COUNT_LIMIT))
    yield deliveries
    counted = endpoint_counts_by_status()
    endpoints = GaugeMetricFamily(
        "lifecycle_webhook_endpoints",
        "Webhook endpoints by status: active, paused, disabled (every attempt failed for WEBHOOKS_DISABLE_AFTER_DAYS, or 410 Gone).",
        labels=["status"],
    )
    for status in EndpointStatus:
        endpoints.add_metric([status.label], counted[status.value])
    yield endpoints
    yield gauge(
        "lifecycle_webhook_endpoints_failing",
        "Enabled webhook endpoints whose every attempt has failed since their last success.",
        failing_endpoints_count(),
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
        lag = consumer_lag(group=consumer.group, event_types=consumer.event_types, up_to=COUNT_LIMIT)
        events.add_metric([consumer.group], lag.events)
        seconds.add_metric([consumer.group], lag.seconds)
    yield events
    yield seconds


def kafka_figures() -> Iterable[Metric]:
    """The Kafka relay (docs/kafka.md): what waits, how long the oldest has, what went out lately, and
    whether publication is on. An alert, never a readiness check: a broker outage holds the events back
    and the web keeps answering."""
    stream = stream_figures(up_to=COUNT_LIMIT, window=KAFKA_PUBLISHED_WINDOW)
    yield gauge(
        "lifecycle_kafka_publication_on",
        "1 while events are published to Kafka (the relay started the stream and publish_events --off has not"
        " stopped it), 0 when off: then every lifecycle_kafka_ figure is 0.",
        int(stream.on),
    )
    yield gauge(
        "lifecycle_kafka_unpublished_events",
        "Events waiting for the Kafka relay, claimed or not (counted up to 100,000).",
        stream.unpublished,
    )
    oldest = stream.oldest_unpublished_at
    yield gauge(
        "lifecycle_kafka_oldest_unpublished_age_seconds",
        "How long ago the oldest event still waiting for the Kafka relay was written; 0 when none waits.",
        max(0.0, (timezone.now() - oldest).total_seconds()) if oldest else 0,
    )
    yield gauge(
        "lifecycle_kafka_published_events_5m",
        "Events the broker acknowledged in the last 5 minutes (counted up to 100,000); / 300 is the rate per second.",
        stream.published_recently,
    )


def account_figures() -> Iterable[Metric]:
    """Accounts by status: counted below 10,000 rows, estimated from the planner's statistics above (as the dashboard)."""
    by_status, estimated = account_counts_by_status()
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
    """Staff logins django-axes refuses now, per login and address."""
    yield gauge(
        "lifecycle_staff_lockouts",
        "Back-office logins locked out now, one per login and address (django-axes).",
        locked_out_logins_count(),
    )


FIGURES: dict[str, Callable[[], Iterable[Metric]]] = {
    "mail": mail_figures,
    "mail_runs": mail_run_figures,
    "webhooks": webhook_figures,
    "outbox": outbox_figures,
    "kafka": kafka_figures,
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
        with bounded_statements(STATEMENT_TIMEOUT):
            for name, figures in FIGURES.items():
                try:
                    with transaction.atomic():  # a savepoint: a failed query leaves the other groups readable
                        read[name] = list(figures())
                except DatabaseError as error:
                    logger.warning("metrics: the %s figures were not read: %s", name, error)
    except DatabaseError as error:  # the database unreachable: every group is left out
        logger.warning("metrics: no figures read: %s", error)
    return read
