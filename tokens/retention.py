"""The tokens app's retention rules: tokens long past use, and the mail runs' rows (``jobs``)."""

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from platform_events.quantities import quantity
from platform_events.retention import RetentionRule, queryset_rule
from tokens.models import Job, Token


def old_tokens() -> RetentionRule:
    """Tokens expire 15 minutes after issue: one that expired this long ago is used, replaced or dead.
    Deleting it is audited (token.deleted) with the reason."""
    days = settings.RETENTION_TOKEN_DAYS
    return queryset_rule(
        "tokens",
        f"tokens: {quantity(days, 'day')} after they expired",
        Token.objects.filter(expires_at__lt=timezone.now() - timedelta(days=days)),
        reason=f"retention: expired more than {quantity(days, 'day')} ago",
    )


def old_mail_runs() -> RetentionRule:
    """Mail runs this long after they finished. An unfinished run may still be sending: it stays until
    a drain closes it (tokens/mailroom/drain.py: close_stopped_runs), at its last progress."""
    days = settings.RETENTION_MAIL_RUN_DAYS
    return queryset_rule(
        "mail-runs",
        f"mail runs (jobs): {quantity(days, 'day')} after they finished",
        Job.objects.filter(finished_at__lt=timezone.now() - timedelta(days=days)),
    )
