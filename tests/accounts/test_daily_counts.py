"""Sign-ups and activations per day (accounts/daily_counts.py): days that are over counted once and
kept, today counted live."""

from datetime import datetime, time, timedelta

import pytest
from django.utils import timezone

from accounts.daily_counts import DAYS_SHOWN, KEEP_AFTER, sign_ups_and_activations
from accounts.models import AccountDailyCount
from lifecycle.demo.factories import AccountFactory
from platform_events.db.history import history_rewrite

pytestmark = pytest.mark.django_db


def created_days_ago(account, days: int, sql) -> None:
    """Make ``account`` created (and activated, if it is) ``days`` days ago, at the same time of day."""
    with history_rewrite():
        sql(
            "UPDATE accounts SET created_at = created_at - make_interval(days => %s),"
            " activated_at = activated_at - make_interval(days => %s) WHERE id = %s",
            [days, days, account.pk],
        )


def test_every_day_is_named_with_todays_counted_live():
    AccountFactory.create_batch(3)
    AccountFactory(active=True)
    today = timezone.localdate()
    per_day = sign_ups_and_activations()
    assert list(per_day) == [today - timedelta(days=n) for n in range(DAYS_SHOWN - 1, -1, -1)]
    assert per_day[today] == (4, 1)
    assert set(list(per_day.values())[:-1]) == {(0, 0)}


def test_a_day_that_is_over_is_counted_once_and_kept(sql):
    """Kept with the day's counts as they were; today is never kept, its accounts still come."""
    yesterday = timezone.localdate() - timedelta(days=1)
    for account in AccountFactory.create_batch(2, active=True):
        created_days_ago(account, 1, sql)
    assert sign_ups_and_activations()[yesterday] == (2, 2)
    kept = AccountDailyCount.objects.get(zone=timezone.get_current_timezone_name(), day=yesterday)
    assert (kept.signups, kept.activations) == (2, 2)
    assert AccountDailyCount.objects.count() == DAYS_SHOWN - 1  # the empty days too, not today
    sql("DELETE FROM accounts WHERE created_at < %s", [timezone.now() - timedelta(hours=12)])
    AccountFactory()
    per_day = sign_ups_and_activations()
    assert (per_day[yesterday], per_day[timezone.localdate()]) == ((2, 2), (1, 0))


def test_days_are_the_sites_time_zones_and_each_zone_is_kept_apart(settings, sql):
    """An account made at 23:00 UTC the day before yesterday is yesterday's in Kolkata (UTC+05:30)."""
    two_days_ago = timezone.localdate() - timedelta(days=2)
    account = AccountFactory()
    with history_rewrite():
        sql(
            "UPDATE accounts SET created_at = (%s::date + time '23:00') AT TIME ZONE 'UTC' WHERE id = %s",
            [two_days_ago, account.pk],
        )
    assert sign_ups_and_activations()[two_days_ago] == (1, 0)
    settings.TIME_ZONE = "Asia/Kolkata"
    timezone.deactivate()
    per_day = sign_ups_and_activations(today=two_days_ago + timedelta(days=2))
    assert (per_day[two_days_ago], per_day[two_days_ago + timedelta(days=1)]) == ((0, 0), (1, 0))
    assert set(AccountDailyCount.objects.values_list("zone", flat=True)) == {"UTC", "Asia/Kolkata"}


def test_a_day_just_over_is_counted_live_until_a_transaction_begun_before_midnight_can_no_longer_add_to_it(sql):
    """An account's times are its transaction's start: one begun at 23:59 and committed after midnight
    still belongs to the day that is over. That day is kept only once it has been over for KEEP_AFTER."""
    yesterday = timezone.localdate() - timedelta(days=1)
    midnight = timezone.make_aware(datetime.combine(yesterday + timedelta(days=1), time.min))

    def made_at(moment):
        account = AccountFactory()
        with history_rewrite():
            sql("UPDATE accounts SET created_at = %s WHERE id = %s", [moment, account.pk])

    made_at(midnight - timedelta(minutes=30))
    assert sign_ups_and_activations(now=midnight + timedelta(minutes=1))[yesterday] == (1, 0)
    assert not AccountDailyCount.objects.filter(day=yesterday).exists()
    made_at(midnight - timedelta(seconds=1))  # its transaction committed after the page above
    assert sign_ups_and_activations(now=midnight + KEEP_AFTER)[yesterday] == (2, 0)
    assert AccountDailyCount.objects.get(day=yesterday).signups == 2
