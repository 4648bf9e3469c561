"""Sign-ups and activations per day, as the dashboard's chart shows them: each day that is over is
counted once and kept (account_daily_counts, accounts/sql/0028_daily_counts.sql), today is counted
live. A page then counts today's accounts and any day not kept yet, not 30 days of them.

A kept day says how many accounts were created and activated that day when it was counted: an
account deleted since (an abandoned sign-up swept, an erasure) still counts in its day.
"""

from datetime import date, datetime, time, timedelta

from django.db import connection
from django.utils import timezone

from accounts.models import AccountDailyCount

DAYS_SHOWN = 30  # the chart's days, today included; the cleanup keeps no older day
# A day is kept only once it has been over this long. An account's times are its transaction's start
# (now() in the triggers), so a transaction begun before midnight and committed after it still adds to
# the day that is over; until then that day is counted live with today.
KEEP_AFTER = timedelta(hours=1)

COUNT_DAYS = """
    SELECT day, sum(signups)::integer, sum(activations)::integer
    FROM (
        SELECT (created_at AT TIME ZONE %(zone)s)::date AS day, 1 AS signups, 0 AS activations
        FROM accounts WHERE created_at >= %(start)s AND created_at < %(end)s
        UNION ALL
        SELECT (activated_at AT TIME ZONE %(zone)s)::date, 0, 1
        FROM accounts WHERE activated_at >= %(start)s AND activated_at < %(end)s
    ) moments
    GROUP BY day
"""


def sign_ups_and_activations(*, today: date | None = None, now: datetime | None = None) -> dict[date, tuple[int, int]]:
    """(sign-ups, activations) of each of the DAYS_SHOWN days ending ``today`` (the current time zone's
    today by default), every day named. Days that are over and not kept yet are counted, and kept once
    they have been over for KEEP_AFTER at ``now`` (the current time by default)."""
    now = now or timezone.now()
    today = today or timezone.localdate(now)
    zone = timezone.get_current_timezone_name()
    days = [today - timedelta(days=n) for n in range(DAYS_SHOWN - 1, -1, -1)]
    kept = {
        row.day: (row.signups, row.activations)
        for row in AccountDailyCount.objects.filter(zone=zone, day__gte=days[0], day__lt=today)
    }
    uncounted = [day for day in days if day not in kept]  # today at least
    counted = _count(zone, uncounted[0], today)
    settled = [day for day in uncounted if _start_of(day + timedelta(days=1)) + KEEP_AFTER <= now]
    over = [AccountDailyCount(zone=zone, day=day, **_named(counted.get(day))) for day in settled if day < today]
    AccountDailyCount.objects.bulk_create(over, ignore_conflicts=True)  # a page beside this one kept them first
    return {day: kept.get(day) or counted.get(day, (0, 0)) for day in days}


def _count(zone: str, first: date, last: date) -> dict[date, tuple[int, int]]:
    """Sign-ups and activations from the start of ``first`` to the end of ``last`` in ``zone``, per day
    (days without either left out); the BRIN indexes on both times narrow the read to those days."""
    start, end = _start_of(first), _start_of(last + timedelta(days=1))
    with connection.cursor() as cursor:
        cursor.execute(COUNT_DAYS, {"zone": zone, "start": start, "end": end})
        return {day: (signups, activations) for day, signups, activations in cursor.fetchall()}


def _named(counts: tuple[int, int] | None) -> dict[str, int]:
    signups, activations = counts or (0, 0)
    return {"signups": signups, "activations": activations}


def _start_of(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))
