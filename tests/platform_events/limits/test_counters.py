"""The rate limiter of the public pages (platform_events/limits/counters.py): fixed windows counted in
PostgreSQL by one upsert, shared by every process, keeping no raw key."""

import threading
from datetime import timedelta

import pytest
from django.db import transaction

from platform_events.limits.counters import Limit, LimitExceeded, bucket_for, limits_hit
from tests.support import in_threads, wait_until_blocked

pytestmark = pytest.mark.django_db

HOUR = timedelta(hours=1)
# The tests of one transaction share one now(); those that commit use windows no test run can straddle.
LONG = timedelta(days=1000)


def hits_of(sql, limit, key):
    """The hits of ``key``'s current window under ``limit``, as the table holds them."""
    rows = sql(
        "SELECT hits FROM rate_limits WHERE bucket = %s ORDER BY window_start DESC LIMIT 1",
        [bucket_for(limit=limit, key=key)],
    )
    return rows[0][0] if rows else 0


# Counting


def test_hits_up_to_the_maximum_pass_and_the_next_one_is_refused_until_the_window_ends():
    """max_hits hits pass; the next raises LimitExceeded naming the limit, to retry within the window."""
    limit = Limit(name="sign-up-per-address", max_hits=3, window=HOUR)
    for _ in range(3):
        limits_hit([(limit, "203.0.113.7")])
    with pytest.raises(LimitExceeded, match="limits: over sign-up-per-address") as refusal:
        limits_hit([(limit, "203.0.113.7")])
    assert refusal.value.limit == limit
    assert 0 < refusal.value.retry_after <= 3600


def test_a_hit_over_the_limit_is_counted_too(sql):
    """A client that keeps trying stays limited: refused hits count."""
    limit = Limit(name="codes-per-identifier", max_hits=1, window=HOUR)
    for attempt in range(4):
        try:
            limits_hit([(limit, "someone@example.com")])
        except LimitExceeded:
            assert attempt > 0
    assert hits_of(sql, limit, "someone@example.com") == 4


def test_separate_keys_are_counted_apart():
    """One address over its limit does not limit another."""
    limit = Limit(name="recovery-per-address", max_hits=1, window=HOUR)
    limits_hit([(limit, "203.0.113.7")])
    limits_hit([(limit, "203.0.113.8")])
    with pytest.raises(LimitExceeded):
        limits_hit([(limit, "203.0.113.7")])


def test_limits_of_different_names_are_counted_apart(sql):
    """One key is counted separately under each limit."""
    per_hour = Limit(name="resend-per-identifier", max_hits=1, window=HOUR)
    other = Limit(name="recovery-per-identifier", max_hits=1, window=HOUR)
    limits_hit([(per_hour, "someone@example.com")])
    limits_hit([(other, "someone@example.com")])
    assert hits_of(sql, per_hour, "someone@example.com") == 1
    assert hits_of(sql, other, "someone@example.com") == 1


def test_one_call_counts_a_hit_against_every_pair(sql):
    """Every pair of a call is counted, and the call is refused when any one of them is over."""
    per_address = Limit(name="sign-up-per-address", max_hits=5, window=HOUR)
    per_email = Limit(name="sign-up-per-email", max_hits=1, window=HOUR)
    limits_hit([(per_address, "203.0.113.7"), (per_email, "a@example.com")])
    with pytest.raises(LimitExceeded) as refusal:
        limits_hit([(per_address, "203.0.113.7"), (per_email, "a@example.com")])
    assert refusal.value.limit == per_email
    assert hits_of(sql, per_address, "203.0.113.7") == 2
    assert hits_of(sql, per_email, "a@example.com") == 2


def test_the_refusal_names_the_first_limit_over_and_the_longest_wait():
    """With several limits over: the caller's first one, and the time until the last of them lets a hit through."""
    per_minute = Limit(name="codes-per-minute", max_hits=1, window=timedelta(minutes=1))
    per_day = Limit(name="codes-per-day", max_hits=1, window=timedelta(days=1))
    pairs = [(per_minute, "someone@example.com"), (per_day, "someone@example.com")]
    limits_hit(pairs)
    with pytest.raises(LimitExceeded) as refusal:
        limits_hit(pairs)
    assert refusal.value.limit == per_minute
    assert 60 < refusal.value.retry_after <= 86_400


def test_a_pair_listed_twice_in_one_call_counts_once(sql):
    """The upsert may not touch one row twice: the pair is counted once."""
    limit = Limit(name="sign-up-per-address", max_hits=5, window=HOUR)
    limits_hit([(limit, "203.0.113.7"), (limit, "203.0.113.7")])
    assert hits_of(sql, limit, "203.0.113.7") == 1


def test_hits_in_an_earlier_window_do_not_count(sql):
    """A new window starts from nothing, whatever the last one held."""
    limit = Limit(name="recovery-per-address", max_hits=1, window=HOUR)
    sql(
        "INSERT INTO rate_limits (bucket, window_start, window_end, hits)"
        " SELECT %s, start - interval '1 hour', start, 100"
        " FROM to_timestamp(floor(extract(epoch FROM now()) / 3600) * 3600) AS start",
        [bucket_for(limit=limit, key="203.0.113.7")],
    )
    limits_hit([(limit, "203.0.113.7")])
    assert sorted(hits for (hits,) in sql("SELECT hits FROM rate_limits")) == [1, 100]


def test_windows_start_on_the_epoch_so_every_host_agrees(sql):
    """A window starts at a multiple of its length since the epoch and lasts exactly that length."""
    limits_hit([(Limit(name="sign-up-per-address", max_hits=5, window=timedelta(minutes=7)), "203.0.113.7")])
    ((start, end, current),) = sql(
        "SELECT extract(epoch FROM window_start)::numeric, extract(epoch FROM window_end - window_start),"
        " window_start <= now() AND now() < window_end FROM rate_limits"
    )
    assert start % 420 == 0 and end == 420 and current


def test_no_pairs_is_no_query(django_assert_num_queries):
    """An empty list (or an exhausted generator) counts nothing and asks nothing of the database."""
    with django_assert_num_queries(0):
        limits_hit([])
        limits_hit(pair for pair in [])


# What the table keeps


def test_the_table_holds_no_raw_key(sql):
    """No e-mail address, login or IP address reaches the table: a bucket is the name and a 64-digit digest."""
    limit = Limit(name="recovery-per-identifier", max_hits=5, window=HOUR)
    keys = ["Someone@Example.com", "someone_login", "203.0.113.7", "2001:db8::1"]
    limits_hit([(limit, key) for key in keys])
    rows = sql("SELECT * FROM rate_limits")
    assert len(rows) == 4
    text = repr(rows).lower()
    for key in keys:
        assert key.lower() not in text
    assert all(bucket.startswith("recovery-per-identifier:") and len(bucket) == 24 + 64 for _, bucket, *_ in rows)


def test_the_database_refuses_a_bucket_that_is_not_a_digest(refused):
    """Whatever the client (psql too), a raw key cannot be written as a bucket."""
    refused(
        "INSERT INTO rate_limits (bucket, window_start, window_end, hits)"
        " VALUES ('recovery-per-identifier:someone@example.com', now(), now() + interval '1 hour', 1)",
        match="ck_rate_limits_bucket",
    )


def test_keys_differing_only_in_case_share_one_count():
    """Someone@Example.com and someone@example.com are one identifier."""
    limit = Limit(name="codes-per-identifier", max_hits=1, window=HOUR)
    limits_hit([(limit, "Someone@Example.com")])
    with pytest.raises(LimitExceeded):
        limits_hit([(limit, "someone@example.COM")])


def test_keys_differing_only_in_surrounding_spaces_share_one_count():
    """The services strip an identifier: so does the limiter, or spaces would be a way round it."""
    limit = Limit(name="codes-per-identifier", max_hits=1, window=HOUR)
    limits_hit([(limit, "someone@example.com")])
    with pytest.raises(LimitExceeded):
        limits_hit([(limit, " someone@example.com\t")])


# Refusals of bad input


@pytest.mark.parametrize(
    ("name", "max_hits", "window", "message"),
    [
        ("signup", 0, HOUR, "at least 1 hit"),
        ("signup", -1, HOUR, "at least 1 hit"),
        ("signup", 5, timedelta(0), "whole number of seconds, at least 1"),
        ("signup", 5, timedelta(milliseconds=500), "whole number of seconds, at least 1"),
        ("signup", 5, timedelta(seconds=1.5), "whole number of seconds, at least 1"),
        ("signup", 5, -HOUR, "whole number of seconds, at least 1"),
        ("", 5, HOUR, "a limit's name is"),
        ("Sign-Up", 5, HOUR, "a limit's name is"),
        ("sign:up", 5, HOUR, "a limit's name is"),
    ],
)
def test_a_bad_limit_is_refused_when_it_is_made(name, max_hits, window, message):
    """A limit that could never work fails where it is declared, not at the first request."""
    with pytest.raises(ValueError, match=message):
        Limit(name=name, max_hits=max_hits, window=window)


def test_two_different_limits_of_one_name_are_refused(sql):
    """A name is one limit: two that differ would count into one bucket."""
    hourly = Limit(name="sign-up-per-address", max_hits=5, window=HOUR)
    daily = Limit(name="sign-up-per-address", max_hits=50, window=timedelta(days=1))
    with pytest.raises(ValueError, match="two different limits are named sign-up-per-address"):
        limits_hit([(hourly, "203.0.113.7"), (daily, "203.0.113.7")])
    assert sql("SELECT count(*) FROM rate_limits") == [(0,)]


def test_a_key_that_is_not_a_string_is_refused():
    """No client address (None) is the caller's case to decide, not a bucket shared by all."""
    with pytest.raises(TypeError, match="limits: the key of sign-up-per-address must be a str, not NoneType"):
        limits_hit([(Limit(name="sign-up-per-address", max_hits=5, window=HOUR), None)])


# Transactions and concurrency


@pytest.mark.django_db(transaction=True)
def test_a_hit_stands_when_the_request_then_fails(psql):
    """Counted in autocommit, as views run, the hit is committed before the rest of the request fails."""
    limit = Limit(name="recovery-per-address", max_hits=5, window=LONG)
    with pytest.raises(RuntimeError):
        limits_hit([(limit, "203.0.113.7")])
        with transaction.atomic():
            raise RuntimeError("the recovery failed")
    assert psql.execute("SELECT hits FROM rate_limits").fetchall() == [(1,)]


@pytest.mark.django_db(transaction=True)
def test_concurrent_hits_from_many_sessions_are_all_counted(psql):
    """8 sessions hitting one bucket 25 times each at once: 200 hits, and exactly those past the maximum refused."""
    limit = Limit(name="sign-up-per-address", max_hits=50, window=LONG)
    start = threading.Barrier(8, timeout=30)

    def hammer():
        start.wait()
        refused = 0
        for _ in range(25):
            try:
                limits_hit([(limit, "203.0.113.7")])
            except LimitExceeded:
                refused += 1
        return refused

    threads, results = in_threads(*[hammer] * 8)
    for thread in threads:
        thread.join()
    assert all(ok for ok, _ in results), results
    assert psql.execute("SELECT hits FROM rate_limits").fetchall() == [(200,)]
    assert sum(refused for _, refused in results) == 200 - 50


@pytest.mark.django_db(transaction=True)
def test_two_requests_hitting_the_same_buckets_in_opposite_orders_never_deadlock(psql):
    """Both requests queue behind a third session on one bucket, the one listing it first ahead: locked
    in the callers' orders, each would then hold the row the other waits for (the server's deadlock
    detector fails one); locked in one order, the first takes both rows and the second follows."""
    per_address = Limit(name="codes-per-address", max_hits=10, window=LONG)
    per_identifier = Limit(name="codes-per-identifier", max_hits=10, window=LONG)  # its bucket sorts last
    pairs = [(per_address, "203.0.113.7"), (per_identifier, "someone@example.com")]
    limits_hit(pairs)
    with psql.transaction():
        psql.execute(
            "SELECT 1 FROM rate_limits WHERE bucket = %s FOR UPDATE",
            [bucket_for(limit=per_identifier, key="someone@example.com")],
        )
        first, first_results = in_threads(lambda: limits_hit(pairs[::-1]))
        wait_until_blocked(psql, 1)
        second, second_results = in_threads(lambda: limits_hit(pairs))
        wait_until_blocked(psql, 2)
    for thread in first + second:
        thread.join()
    results = first_results + second_results
    assert results == [(True, None), (True, None)], results
    assert psql.execute("SELECT hits FROM rate_limits").fetchall() == [(3,), (3,)]
