"""Growing delays: a key may fail ``free`` times in a window at once; after that, each failure holds
the key for twice as long as the one before (1 s, 2 s, 4 s ...), never longer than ``longest``. Where
a limit's lock lasts until its window ends, a delay lasts at most ``longest`` after the last failure:
whoever fails on purpose can keep a key waiting only by failing again, once per delay.

Kept in ``rate_limits`` (platform_events/sql/0008_limits.sql) beside the limits' counts, under the
delay's name: the failures in the current fixed window (``<name>:<digest>``, as a ``Limit`` counts
them), and each hold as a row of its own whose window is the hold (``<name>.held:<digest>``, from the
failure to the end of its delay). The retention rule "limits" deletes both a day after they end.

    PER_NAME = Delay(name="sign-in-per-name", free=10, window=timedelta(days=1), longest=timedelta(minutes=5))

    try:
        delay_pending(PER_NAME, login)  # before the password is hashed: a held try costs nothing
    except LimitExceeded as refusal:
        ...  # 429, Retry-After: refusal.retry_after
    if not right:
        delay_failed(PER_NAME, login)
"""

from dataclasses import dataclass
from datetime import timedelta

from django.db import connection

from platform_events.limits.counters import COUNT_HITS, REFUSALS, SECOND, Limit, LimitExceeded, bucket_for

# The first delay after the free failures; each one after it is twice the one before.
FIRST_DELAY_SECONDS = 1


@dataclass(frozen=True)
class Delay:
    """``free`` failures per fixed ``window`` with no wait, then doubling holds up to ``longest``."""

    name: str  # e.g. "api-session-name"; part of the buckets
    free: int
    window: timedelta
    longest: timedelta

    def __post_init__(self):
        if self.free < 0:
            raise ValueError(f"limits: {self.name} cannot allow fewer than 0 free failures ({self.free})")
        Limit(name=self.name, max_hits=self.free + 1, window=self.window)  # a limit's rules for the name and window
        if self.longest < SECOND or self.longest % SECOND:
            raise ValueError(f"limits: {self.name}'s longest delay must be a whole number of seconds, at least 1")

    @property
    def failures(self) -> Limit:
        """The failures, counted as a limit counts hits (the count decides the delay, never a refusal)."""
        return Limit(name=self.name, max_hits=self.free + 1, window=self.window)

    @property
    def rule(self) -> str:
        return f"{self.free} failures per {self.window}, then delays up to {self.longest}"

    def seconds_after(self, failures: int) -> int:
        """How long the key is held after its ``failures``-th failure in a window: 0 for the free ones."""
        past = failures - self.free
        if past < 1:
            return 0
        # min() before the power: 2 ** a huge count is not computed.
        return min(FIRST_DELAY_SECONDS * 2 ** min(past - 1, 62), self.longest // SECOND)


def _held_bucket(delay: Delay, key: str) -> str:
    return bucket_for(limit=Limit(name=f"{delay.name}.held", max_hits=1, window=SECOND), key=key)


# The end of the latest hold on the key, if one is still running.
HELD_UNTIL = """
SELECT greatest(1, ceil(extract(epoch FROM window_end - now())))::integer
FROM rate_limits WHERE bucket = %s AND window_end > now()
ORDER BY window_end DESC LIMIT 1
"""

# A hold from now for the delay's seconds; two failures at the same instant keep the longer.
HOLD = """
INSERT INTO rate_limits (bucket, window_start, window_end, hits)
VALUES (%s, now(), now() + %s * interval '1 second', 1)
ON CONFLICT (bucket, window_start) DO UPDATE SET window_end = greatest(rate_limits.window_end, EXCLUDED.window_end)
"""


def delay_remaining(delay: Delay, key: str) -> int:
    """Whole seconds until the hold on ``key`` ends; 0 when none runs. Counts nothing."""
    with connection.cursor() as cursor:
        cursor.execute(HELD_UNTIL, [_held_bucket(delay, key)])
        held = cursor.fetchone()
    return 0 if held is None else held[0]


def delay_refusal(delay: Delay, retry_after: int) -> LimitExceeded:
    """The refusal of a try while a hold runs (counted in the refusals' metric), to raise."""
    REFUSALS.labels(limit=delay.name).inc()
    return LimitExceeded(limit=delay, retry_after=retry_after)


def delay_pending(delay: Delay, key: str) -> None:
    """Raise ``LimitExceeded`` (``retry_after``: the seconds left) while a hold on ``key`` runs; count
    nothing. Ask it before the attempt, so that a held try costs no work."""
    if retry_after := delay_remaining(delay, key):
        raise delay_refusal(delay, retry_after)


def delay_failed(delay: Delay, key: str) -> int:
    """Count a failure of ``key``; past the free ones, hold it for the failure's delay. Returns the
    delay in seconds (0: none). Called outside ``transaction.atomic``, as ``limits_hit`` is."""
    failures = delay.failures
    with connection.cursor() as cursor:
        cursor.execute(COUNT_HITS, [[bucket_for(limit=failures, key=key)], [failures.seconds]])
        (_, count, _) = cursor.fetchone()
        seconds = delay.seconds_after(count)
        if seconds:
            cursor.execute(HOLD, [_held_bucket(delay, key), seconds])
    return seconds
