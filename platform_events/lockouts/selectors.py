"""Reads of django-axes' records of failed staff sign-ins."""

from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Sum
from django.utils import timezone


def locked_out_logins_count() -> int:
    """Staff logins django-axes refuses now: per login and address (AXES_LOCKOUT_PARAMETERS), failures
    within the cool-off summed over user agents, as axes sums them. A small table: axes prunes the
    records once their cool-off is over."""
    recent = AccessAttempt.objects.filter(attempt_time__gte=timezone.now() - settings.AXES_COOLOFF_TIME)
    locked = (
        recent.order_by()
        .values("username", "ip_address")
        .annotate(failures=Sum("failures_since_start"))
        .filter(failures__gte=settings.AXES_FAILURE_LIMIT)
    )
    return locked.count()
