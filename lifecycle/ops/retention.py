"""Every retention rule of the product, in the order ``manage.py cleanup`` applies them: the apps'
own (accounts/retention.py, tokens/retention.py) and those of the libraries' tables. The audit
trail has none: it is kept (docs/audit-trail.md, "Partitions")."""

from datetime import timedelta

from axes.models import AccessLog
from django.conf import settings
from django.contrib.sessions.models import Session
from django.utils import timezone
from django_q.models import Task

from accounts.retention import (
    abandoned_sign_ups,
    deprovisioned_accounts,
    old_daily_counts,
    old_sign_ins,
    replaced_node_assignments,
)
from platform_events.quantities import quantity
from platform_events.retention import (
    RetentionRule,
    expired_idempotency_keys,
    old_events,
    old_processed_events,
    old_rate_limits,
    queryset_rule,
)
from tokens.retention import old_mail_runs, old_tokens


def retention_rules() -> list[RetentionRule]:
    now = timezone.now()
    log_days, task_days = settings.RETENTION_ACCESS_LOG_DAYS, settings.RETENTION_TASK_DAYS
    return [
        deprovisioned_accounts(),
        abandoned_sign_ups(),
        old_sign_ins(),
        old_daily_counts(),
        old_tokens(),
        old_mail_runs(),
        old_rate_limits(),
        old_events(),
        old_processed_events(),
        expired_idempotency_keys(),
        replaced_node_assignments(),
        queryset_rule("sessions", "staff sessions: until they expire", Session.objects.filter(expire_date__lt=now)),
        queryset_rule(
            "access-log",
            f"staff log-ins and log-outs (django-axes): {quantity(log_days, 'day')}",
            AccessLog.objects.filter(attempt_time__lt=now - timedelta(days=log_days)),
        ),
        queryset_rule(
            "tasks",
            f"django-q2 task results: {quantity(task_days, 'day')}",
            Task.objects.filter(stopped__lt=now - timedelta(days=task_days)),
        ),
    ]


def apply_retention(rules: list[RetentionRule], *, batch_size: int, say=lambda line: None) -> str:
    """Apply each rule batch after batch until it has nothing left; returns the summary line."""
    done = []
    for rule in rules:
        deleted = 0
        while batch := rule.delete_batch(batch_size):
            deleted += batch
            say(f"  {rule.name}: {deleted} deleted so far")
        done.append(f"{rule.name} {deleted}")
    return "Deleted: " + ", ".join(done) + "."
