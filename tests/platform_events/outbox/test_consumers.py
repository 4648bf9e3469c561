"""Internal consumers of the outbox (platform_events/outbox/consumers.py): each event has one effect per
consumer group, however often it is handed over and however many workers run; nothing is skipped
whatever the commit order; an account's events reach the handler in order."""

import threading

import psycopg
import pytest
from django.conf import settings
from django.db import connection

from platform_events.outbox.consumers import Consumer, consume
from tests.support import connect, connect_as_owner, in_threads, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def effects():
    """A table of the consumer's own, written in the handler's transaction: one row per effect."""
    with connect_as_owner(autocommit=True) as owner:
        owner.execute(
            "CREATE TABLE consumer_effects (grp text, event_id uuid, account text, event_type text, at serial)"
        )
        owner.execute(f"GRANT ALL ON consumer_effects, consumer_effects_at_seq TO {settings.DATABASE_RUNTIME_ROLE}")
    yield
    with connect_as_owner(autocommit=True) as owner:
        owner.execute("DROP TABLE consumer_effects")


def recording(group, *, fail_on=None, pause=None):
    def handle(event):
        if pause:
            pause(event)
        if fail_on and fail_on(event):
            raise RuntimeError("handler failed")
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO consumer_effects (grp, event_id, account, event_type) VALUES (%s, %s, %s, %s)",
                [group, event.id, event.aggregate_id, event.type],
            )

    return Consumer(group, {"account.created", "account.suspended"}, handle)


def provision_many(conn, count, prefix="user"):
    conn.execute(
        "INSERT INTO accounts (email, login) SELECT %s || n || '@example.com', %s || n FROM generate_series(1, %s) n",
        [prefix, prefix, count],
    )


def effect_rows(conn):
    return conn.execute("SELECT grp, event_id, account, event_type FROM consumer_effects ORDER BY at").fetchall()


def test_a_redelivered_event_has_one_effect_and_each_group_records_its_own(effects):
    with connect(autocommit=True) as conn:
        provision_many(conn, 3)
        first = consume(recording("billing"))
        again = consume(recording("billing"))
        other = consume(recording("search"))
        rows = effect_rows(conn)
    assert (first.handled, again.handled, other.handled) == (3, 0, 3)
    assert len(rows) == 6 and len({(g, e) for g, e, _, _ in rows}) == 6


def test_four_workers_at_once_give_each_event_exactly_one_effect(effects):
    with connect(autocommit=True) as conn:
        provision_many(conn, 400)
        conn.execute("UPDATE accounts SET status = 'suspended' WHERE id % 3 = 0")
        (expected,) = conn.execute(
            "SELECT count(*) FROM outbox_events WHERE event_type IN ('account.created', 'account.suspended')"
        ).fetchone()
        consumer = recording("billing")
        in_threads(*[lambda: consume(consumer, batch_size=25)] * 4)
        consume(consumer)  # whatever a worker held back while another had the aggregate's earlier event
        rows = effect_rows(conn)
        assert len(rows) == expected
        assert len({event_id for _, event_id, _, _ in rows}) == expected
        # Each account's events in order: created before suspended.
        seen = {}
        for _, _, account, event_type in rows:
            seen.setdefault(account, []).append(event_type)
        assert all(types[0] == "account.created" for types in seen.values())


def test_a_failing_handler_rolls_its_event_back_holds_its_accounts_later_events_and_not_the_others(effects):
    broken = {"on": True}
    with connect(autocommit=True) as conn:
        provision_many(conn, 2)
        (first_account,) = conn.execute("SELECT min(id)::text FROM accounts").fetchone()
        conn.execute("UPDATE accounts SET status = 'suspended'")
        consumer = recording(
            "billing",
            fail_on=lambda event: (
                broken["on"] and event.aggregate_id == first_account and event.type == "account.created"
            ),
        )
        result = consume(consumer)
        assert (result.handled, result.failed, result.waiting) == (2, 1, 1)
        assert {account for _, _, account, _ in effect_rows(conn)} == {str(int(first_account) + 1)}
        broken["on"] = False
        assert consume(consumer).handled == 2
        mine = [t for _, _, account, t in effect_rows(conn) if account == first_account]
        assert mine == ["account.created", "account.suspended"]


def test_an_event_committed_late_is_not_skipped(effects):
    with connect() as late, connect(autocommit=True) as conn:
        provision_many(late, 1, prefix="late")  # takes the lower seq, commits last
        provision_many(conn, 1, prefix="early")
        assert consume(recording("billing")).handled == 1
        late.commit()
        assert consume(recording("billing")).handled == 1
        assert sorted(t for _, _, _, t in effect_rows(conn)) == ["account.created", "account.created"]


def test_a_worker_killed_mid_event_leaves_it_to_the_next_with_one_effect(effects):
    inside, released = threading.Event(), threading.Event()

    def hold(event):
        inside.set()
        released.wait(30)  # its session is killed meanwhile

    with connect(autocommit=True) as conn:
        provision_many(conn, 1)
        worker = threading.Thread(target=lambda: _consume_swallowing(recording("billing", pause=hold)), daemon=True)
        worker.start()
        assert inside.wait(10)
        (killed,) = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND state = 'idle in transaction' AND pid <> pg_backend_pid()"
        ).fetchone()
        assert killed == 1
        wait_for(lambda: conn.execute("SELECT count(*) FROM processed_events").fetchone() == (0,))
        assert consume(recording("billing")).handled == 1
        assert len(effect_rows(conn)) == 1
        released.set()
        worker.join(10)
        assert len(effect_rows(conn)) == 1


def _consume_swallowing(consumer):
    try:
        consume(consumer)
    except (psycopg.Error, Exception):
        pass
    finally:
        connection.close()
