"""Rate limits for the public pages, counted in PostgreSQL (this product has no Redis), so every
process and host shares one count.

A ``Limit`` allows ``max_hits`` per fixed window of ``window``, aligned on the epoch so every host
agrees where a window starts. ``limits_hit`` counts one hit against each (limit, key) pair in one
upsert on ``rate_limits`` (platform_events/sql/0008_limits.sql) and raises ``LimitExceeded`` when
any is over. A row's bucket is the limit's name and a keyed digest of the key, never the e-mail
address, login or IP address itself. The retention rule "limits" (platform_events/retention.py)
deletes windows a day after they end.

    SIGN_UP_PER_ADDRESS = Limit(name="sign-up-per-address", max_hits=10, window=timedelta(hours=1))

    try:
        limits_hit([(SIGN_UP_PER_ADDRESS, client_key(request)), (SIGN_UP_PER_EMAIL, email)])
    except LimitExceeded as refusal:
        ...  # 429, Retry-After: refusal.retry_after
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

from django.db import connection
from django.utils.crypto import salted_hmac
from prometheus_client import Counter

from platform_events.refusals import Refused

# What ck_rate_limits_bucket accepts before the ":": a name cannot be mistaken for a key.
NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")
SECOND = timedelta(seconds=1)

# Every refusal, by the limit that refused (a fixed set of names, so few series). Kept in the process;
# with PROMETHEUS_MULTIPROC_DIR set, in files there that /metrics adds up (lifecycle/ops/metrics/).
REFUSALS = Counter(
    "lifecycle_rate_limit_refusals",
    "Requests refused by a rate limit (429 on the public pages and the API, or nothing sent by a queued task), by limit.",
    ["limit"],
)

# One statement for all pairs: each row is inserted, or its count raised, atomically (concurrent
# hits from any number of sessions are all counted); now() is the window's clock, the same for every pair.
COUNT_HITS = """
INSERT INTO rate_limits (bucket, window_start, window_end, hits)
SELECT bucket, window_start, window_start + seconds * interval '1 second', 1
FROM (
    SELECT bucket, seconds, to_timestamp(floor(extract(epoch FROM now()) / seconds) * seconds) AS window_start
    FROM unnest(%s::text[], %s::bigint[]) AS hit (bucket, seconds)
) AS hit
ON CONFLICT (bucket, window_start) DO UPDATE SET hits = rate_limits.hits + 1
RETURNING bucket, hits, greatest(1, ceil(extract(epoch FROM window_end - now())))::integer
"""


@dataclass(frozen=True)
class Limit:
    """``max_hits`` hits per fixed ``window``. The name is the limit: two limits must not share one."""

    name: str  # e.g. "recovery-per-address"; part of the bucket
    max_hits: int
    window: timedelta

    def __post_init__(self):
        if not NAME.fullmatch(self.name):
            raise ValueError(
                f"limits: a limit's name is lower-case letters, digits, '.', '_' and '-' (not {self.name!r})"
            )
        if self.max_hits < 1:
            raise ValueError(f"limits: {self.name} must allow at least 1 hit (max_hits={self.max_hits})")
        if self.window < SECOND or self.window % SECOND:
            raise ValueError(
                f"limits: {self.name}'s window must be a whole number of seconds, at least 1 ({self.window})"
            )

    @property
    def seconds(self) -> int:
        return self.window // SECOND

    @property
    def rule(self) -> str:
        return f"{self.max_hits} per {self.window}"


class LimitExceeded(Refused):
    """A hit over a limit (it is counted all the same), or a try while a delay holds its key
    (platform_events/limits/delays.py). ``limit``: the first of the caller's pairs that is over;
    ``retry_after``: whole seconds until every limit over has a new window."""

    code = "rate-limited"
    status = 429

    def __init__(self, *, limit, retry_after: int):
        super().__init__(
            f"limits: over {limit.name} ({limit.rule}); retry after {retry_after} s", retry_after=retry_after
        )
        self.limit = limit


def bucket_for(*, limit: Limit, key: str) -> str:
    """The bucket of ``key`` under ``limit``: a keyed digest of the key, never the key itself (a row
    must not tell whose address, login or IP it counts), case and surrounding spaces ignored as the
    services ignore them."""
    if not isinstance(key, str):
        raise TypeError(f"limits: the key of {limit.name} must be a str, not {type(key).__name__}")
    return f"{limit.name}:{key_digest(key)}"


def key_digest(key: str) -> str:
    """What a bucket keeps of its key (after the limit's name and ":"): the same for a key under every limit."""
    return salted_hmac("lifecycle.limits", key.strip().lower(), algorithm="sha256").hexdigest()


def limits_hit(hits: Iterable[tuple[Limit, str]]) -> None:
    """Count one hit against each (limit, key) pair, all in one SQL statement, and raise
    ``LimitExceeded`` when any is over its ``max_hits`` in its current window.

    Call it outside ``transaction.atomic`` (views run in autocommit): the hits are committed with the
    caller's transaction, so inside one they would vanish when the request fails, and its row locks
    would be held until the end. A hit over the limit is counted too, so a client that keeps trying
    stays limited. A pair listed twice counts once; no pairs, no query.
    """
    _over(hits, COUNT_HITS, lambda count, limit: count > limit.max_hits)


# The hits counted so far in each bucket's current window (the window COUNT_HITS would count in).
READ_HITS = """
SELECT r.bucket, r.hits, greatest(1, ceil(extract(epoch FROM r.window_end - now())))::integer
FROM unnest(%s::text[], %s::bigint[]) AS hit (bucket, seconds)
JOIN rate_limits r ON r.bucket = hit.bucket
 AND r.window_start = to_timestamp(floor(extract(epoch FROM now()) / hit.seconds) * hit.seconds)
"""


def limits_reached(hits: Iterable[tuple[Limit, str]]) -> None:
    """Raise ``LimitExceeded`` when any (limit, key) pair has used up its ``max_hits`` in its current
    window; count nothing. For limits on failures: ask before the attempt, ``limits_hit`` after a
    failed one, so that successes cost nothing and a spent limit refuses even a right answer."""
    _over(hits, READ_HITS, lambda count, limit: count >= limit.max_hits)


def hits_counted(limit: Limit, key: str) -> int:
    """How many hits ``key`` has under ``limit`` in its current window; counts nothing."""
    bucket = bucket_for(limit=limit, key=key)
    with connection.cursor() as cursor:
        cursor.execute(READ_HITS, [[bucket], [limit.seconds]])
        row = cursor.fetchone()
    return row[1] if row else 0


def _over(hits: Iterable[tuple[Limit, str]], statement: str, over) -> None:
    """Run ``statement`` (COUNT_HITS or READ_HITS) over the pairs' buckets, and raise LimitExceeded
    when ``over(count, limit)`` for any of them: the first in the caller's order, with the longest wait."""
    limits: dict[str, Limit] = {}  # by bucket, in the caller's order
    for limit, key in hits:
        bucket = bucket_for(limit=limit, key=key)
        if limits.setdefault(bucket, limit) != limit:
            raise ValueError(f"limits: two different limits are named {limit.name}")
    if not limits:
        return
    # One lock order for every caller (rows are upserted in the arrays' order): no two can deadlock.
    buckets = sorted(limits)
    with connection.cursor() as cursor:
        cursor.execute(statement, [buckets, [limits[bucket].seconds for bucket in buckets]])
        counted = {bucket: (count, retry_after) for bucket, count, retry_after in cursor.fetchall()}
    past = [(limit, counted[b][1]) for b, limit in limits.items() if b in counted and over(counted[b][0], limit)]
    if past:
        REFUSALS.labels(limit=past[0][0].name).inc()
        raise LimitExceeded(limit=past[0][0], retry_after=max(retry_after for _, retry_after in past))
