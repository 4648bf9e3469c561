"""Reads of django-axes' failed staff sign-ins (platform_events/lockouts/selectors.py): the lock-outs
/metrics counts."""

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.utils import timezone

from platform_events.lockouts.selectors import locked_out_logins_count

pytestmark = pytest.mark.django_db


def failed(username: str, address: str, failures: int, *, user_agent: str = "browser", ago=timedelta(0)) -> None:
    """axes' record of ``failures`` failed sign-ins of ``username`` from ``address`` with one user agent."""
    attempt = AccessAttempt.objects.create(
        username=username,
        ip_address=address,
        user_agent=user_agent,
        http_accept="*/*",
        path_info="/admin/login/",
        get_data="",
        post_data="",
        failures_since_start=failures,
    )
    AccessAttempt.objects.filter(pk=attempt.pk).update(attempt_time=timezone.now() - ago)


def test_a_login_is_locked_out_per_address_at_the_failure_limit(settings):
    failed("support9", "192.0.2.7", settings.AXES_FAILURE_LIMIT)
    failed("support9", "192.0.2.8", settings.AXES_FAILURE_LIMIT)
    failed("support8", "192.0.2.9", settings.AXES_FAILURE_LIMIT - 1)
    assert locked_out_logins_count() == 2


def test_failures_are_summed_over_user_agents_as_axes_sums_them(settings):
    failed("support9", "192.0.2.7", settings.AXES_FAILURE_LIMIT - 1, user_agent="firefox")
    failed("support9", "192.0.2.7", 1, user_agent="curl")
    assert locked_out_logins_count() == 1


def test_failures_past_the_cool_off_lock_nobody_out(settings):
    failed("support9", "192.0.2.7", settings.AXES_FAILURE_LIMIT, ago=settings.AXES_COOLOFF_TIME + timedelta(seconds=1))
    assert locked_out_logins_count() == 0
