"""The accounts' retention rule: sign-ups never activated (seed 003), deleted with their tokens."""

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from accounts.selectors import abandoned_sign_ups_count
from accounts.services import accounts_delete_abandoned
from platform_events.retention import RetentionRule


def abandoned_sign_ups() -> RetentionRule:
    days = settings.RETENTION_SIGN_UP_DAYS
    before = timezone.now() - timedelta(days=days)
    return RetentionRule(
        name="sign-ups",
        keeps=f"sign-ups never activated: {days} days after their last token",
        count=lambda: abandoned_sign_ups_count(created_before=before),
        delete_batch=lambda size: accounts_delete_abandoned(created_before=before, batch_size=size),
    )
