"""The tokens app's retention rules: tokens long past use, and the mail runs' rows (``jobs``)."""

from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from platform_events.audit import audit_context
from platform_events.retention import RetentionRule

# Tokens expire 15 minutes after issue: one that expired this long ago is used, replaced or dead.
# Deleting it is audited (token.deleted) with the reason.
OLD_TOKENS = "SELECT id FROM tokens WHERE expires_at < %(before)s"
OLD_MAIL_RUNS = "SELECT id FROM jobs WHERE finished_at < %(before)s"


def old_tokens() -> RetentionRule:
    days = settings.RETENTION_TOKEN_DAYS
    before = timezone.now() - timedelta(days=days)
    reason = f"retention: expired more than {days} days ago"
    return RetentionRule(
        name="tokens",
        keeps=f"tokens: {days} days after they expired",
        count=lambda: _count(OLD_TOKENS, before),
        delete_batch=lambda size: _delete("tokens", OLD_TOKENS, before, size, reason=reason),
    )


def old_mail_runs() -> RetentionRule:
    days = settings.RETENTION_MAIL_RUN_DAYS
    before = timezone.now() - timedelta(days=days)
    return RetentionRule(
        name="mail-runs",
        keeps=f"mail runs (jobs): {days} days after they finished",
        count=lambda: _count(OLD_MAIL_RUNS, before),
        delete_batch=lambda size: _delete("jobs", OLD_MAIL_RUNS, before, size),
    )


def _count(selection: str, before) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM ({selection}) old", {"before": before})
        return cursor.fetchone()[0]


def _delete(table: str, selection: str, before, size: int, *, reason: str | None = None) -> int:
    with transaction.atomic(), audit_context(reason=reason), connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {table} WHERE id IN ({selection} ORDER BY id LIMIT %(batch)s FOR UPDATE SKIP LOCKED)",
            {"before": before, "batch": size},
        )
        return cursor.rowcount
