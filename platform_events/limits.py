"""Limits on how often anyone may do something (the public pages' sign-ups, codes and e-mails), kept
in PostgreSQL so that every process and host shares them: no Redis in this product, and
django-ratelimit needs a cache with atomic increments, which Django's database cache is not.

Fixed windows aligned on the epoch: a limit of 3 per hour allows 3 hits from 10:00 to 11:00, and up
to 6 around 11:00 at worst. Hits go on counting once a limit is over (a client that hammers stays
limited until its window ends). A key is hashed with the SECRET_KEY before it is stored.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

from django.db import connection
from django.utils import timezone
from django.utils.crypto import salted_hmac

from platform_events.models import RateLimit
from platform_events.retention import RetentionRule, queryset_rule


@dataclass(frozen=True)
class Limit:
    name: str  # e.g. "mail-per-identifier"; the start of the bucket
    max_hits: int
    window: timedelta

    def __post_init__(self):
        if self.max_hits < 1:
            raise ValueError(f"limit {self.name}: max_hits must be at least 1, not {self.max_hits}")
        seconds = self.window.total_seconds()
        if seconds < 1 or seconds != int(seconds):
            raise ValueError(f"limit {self.name}: the window must be a whole number of seconds, at least 1")

    def bucket(self, key: str) -> str:
        # Keyed, so that the table cannot be read back into addresses by hashing guesses.
        return f"{self.name}:{salted_hmac('lifecycle.limits', key.strip().lower()).hexdigest()}"


class LimitExceeded(Exception):
    def __init__(self, limit: Limit, retry_after: int):
        super().__init__(f"limit {limit.name} ({limit.max_hits} per {limit.window}) is over; retry in {retry_after} s")
        self.limit = limit
        self.retry_after = retry_after  # whole seconds until every limit over has a new window


def limits_hit(hits: Iterable[tuple[Limit, str]]) -> None:
    """Count one hit against each (limit, key) in one statement; LimitExceeded when any is over.

    Call it outside transaction.atomic (a view runs in autocommit): the hit is then committed at once
    and counts even when the request fails afterwards.
    """
    buckets = {limit.bucket(key): limit for limit, key in hits}  # one hit per bucket, even if asked twice
    if not buckets:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT bucket, hits, window_end FROM rate_limits_hit(%s, %s)",
            [list(buckets), [int(limit.window.total_seconds()) for limit in buckets.values()]],
        )
        counted = cursor.fetchall()
    now = timezone.now()
    over = [(buckets[bucket], window_end) for bucket, count, window_end in counted if count > buckets[bucket].max_hits]
    if over:
        limit, ends = max(over, key=lambda pair: pair[1])
        raise LimitExceeded(limit, max(1, int((ends - now).total_seconds() + 0.999)))


def old_limit_windows() -> RetentionRule:
    """Windows that ended a day ago count for nothing; the day is kept to look back at an attack."""
    return queryset_rule(
        "limits",
        "limit counters: a day after their window ended",
        RateLimit.objects.filter(window_end__lt=timezone.now() - timedelta(days=1)),
    )
