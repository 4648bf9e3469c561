"""Growing delays (platform_events/limits/delays.py): free failures, then holds doubling up to the
longest, kept in rate_limits under keyed digests, never a lock longer than the longest delay."""

from datetime import timedelta

import pytest

from platform_events.limits.counters import LimitExceeded
from platform_events.limits.delays import Delay, delay_failed, delay_pending

pytestmark = pytest.mark.django_db

DELAY = Delay(name="sign-in-per-name", free=2, window=timedelta(days=1), longest=timedelta(seconds=10))


def pending_seconds(key: str) -> int:
    try:
        delay_pending(DELAY, key)
    except LimitExceeded as refusal:
        assert refusal.limit == DELAY
        return refusal.retry_after
    return 0


def test_the_free_failures_hold_nothing_and_each_after_them_doubles_up_to_the_longest():
    assert [DELAY.seconds_after(n) for n in range(1, 9)] == [0, 0, 1, 2, 4, 8, 10, 10]
    assert DELAY.seconds_after(10**9) == 10  # never computed as 2 ** a billion


def test_a_failure_past_the_free_ones_holds_the_key_for_its_delay(sql):
    """A test's transaction has one now(): a hold's Retry-After is its whole delay."""
    assert [delay_failed(DELAY, "ada") for _ in range(3)] == [0, 0, 1]
    assert pending_seconds("ada") == 1
    assert pending_seconds("ADA ") == 1  # case and surrounding spaces ignored, as the limits ignore them
    assert pending_seconds("grace") == 0

    sql("DELETE FROM rate_limits WHERE bucket LIKE 'sign-in-per-name.held:%'")  # the hold ran out
    assert pending_seconds("ada") == 0
    assert delay_failed(DELAY, "ada") == 2
    assert pending_seconds("ada") == 2


def test_a_hold_that_ended_holds_nothing(sql):
    for _ in range(3):
        delay_failed(DELAY, "ada")
    sql(
        "UPDATE rate_limits SET window_start = now() - interval '1 minute', window_end = now()"
        " WHERE bucket LIKE 'sign-in-per-name.held:%'"
    )

    assert pending_seconds("ada") == 0


def test_no_row_holds_the_key_itself(sql):
    for _ in range(3):
        delay_failed(DELAY, "ada@example.com")

    buckets = [bucket for (bucket,) in sql("SELECT bucket FROM rate_limits")]
    assert len(buckets) == 2 and not any("ada" in bucket for bucket in buckets)
    assert {bucket.split(":")[0] for bucket in buckets} == {"sign-in-per-name", "sign-in-per-name.held"}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"free": -1}, "fewer than 0 free failures"),
        ({"longest": timedelta(milliseconds=1500)}, "longest delay must be a whole number of seconds"),
        ({"name": "Sign In"}, "a limit's name is"),
    ],
)
def test_a_delay_that_cannot_be_counted_is_refused_when_declared(changes, message):
    with pytest.raises(ValueError, match=message):
        Delay(**{"name": "x", "free": 1, "window": timedelta(hours=1), "longest": timedelta(seconds=5), **changes})
