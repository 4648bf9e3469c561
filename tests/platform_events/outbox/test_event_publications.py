"""The Kafka relay's publication state (platform_events/sql/0022_event_publications.sql): rows made with
their events only while the stream is on, kept by retention while unpublished, and changed by the
runtime role only by the relay's own moves (a claim, a mark with the broker's acknowledgement, a
refusal counted)."""

import json
from datetime import datetime

import psycopg
import pytest

from tests.platform_events.outbox.test_runtime_rules import age_events
from tests.platform_events.outbox.test_triggers import activate, provision
from tests.support import connect, connect_as_owner, rewriting_history

pytestmark = pytest.mark.django_db(transaction=True)

CLAIM = (
    "UPDATE event_publications SET claim = %s, lease_until = now() + interval '1 minute'"
    " WHERE status = 'PENDING' RETURNING event_id"
)


def publications(conn):
    return conn.execute(
        "SELECT p.event_seq, p.ordering_key, p.status, e.event_type FROM event_publications p"
        " JOIN outbox_events e ON e.id = p.event_id ORDER BY p.event_seq"
    ).fetchall()


def trail(conn, action):
    rows = conn.execute(
        "SELECT resource_type, resource_id, diff_after::text FROM audit_events WHERE action = %s ORDER BY occurred_at",
        [action],
    ).fetchall()
    return [(kind, rid, json.loads(after) if after else None) for kind, rid, after in rows]


def start(conn):
    return conn.execute("SELECT event_stream_start()").fetchone()[0]


def test_with_the_stream_off_no_publication_row_is_made():
    with connect(autocommit=True) as conn:
        provision(conn, "jane")
        assert conn.execute("SELECT count(*) FROM outbox_events").fetchone() == (1,)
        assert publications(conn) == []


def test_from_its_start_each_event_gets_a_pending_row_with_its_seq_and_account():
    with connect(autocommit=True) as conn:
        provision(conn, "before")
        started = start(conn)
        jane = provision(conn, "jane")
        activate(conn, jane)

        rows = publications(conn)
        seqs = [seq for (seq,) in conn.execute("SELECT seq FROM outbox_events ORDER BY seq OFFSET 1")]
        assert rows == [
            (seqs[0], f"account:{jane}", "PENDING", "account.created"),
            (seqs[1], f"account:{jane}", "PENDING", "account.activated"),
        ]
        # Started once: a second start changes nothing and is not audited again.
        assert start(conn) == started
        # PostgreSQL's JSON drops a trailing zero of the microseconds that Python writes: compare the moments.
        ((kind, resource, after),) = trail(conn, "event.stream_started")
        assert (kind, resource, datetime.fromisoformat(after["started_at"])) == ("event_stream", "kafka", started)


def test_retention_keeps_an_unpublished_event():
    with connect(autocommit=True) as conn:
        start(conn)
        provision(conn, "jane")
        (event_id,) = conn.execute("SELECT id FROM outbox_events").fetchone()
        assert conn.execute("SELECT outbox_event_due_to(%s, 'account.created')", [event_id]).fetchone() == (
            "the Kafka relay",
        )
    with connect_as_owner(autocommit=True) as owner:
        with pytest.raises(psycopg.DatabaseError, match="still due to the Kafka relay"):
            owner.execute("DELETE FROM outbox_events")


def test_retention_deletes_an_old_event_only_once_published_and_its_publication_goes_with_it():
    """outbox_events_delete_old(), retention's one way (platform_events/retention.py): an event waiting for
    the relay, refused or not yet tried, is neither counted nor deleted however old; a published one is,
    and its publication row with it."""
    with connect(autocommit=True) as conn:
        start(conn)
        for login in ("published", "refused", "waiting"):
            provision(conn, login)
        published, refused, waiting = [row[0] for row in conn.execute("SELECT id FROM outbox_events ORDER BY seq")]
        claim = conn.execute("SELECT gen_random_uuid()").fetchone()[0]
        conn.execute(CLAIM, [claim])
        conn.execute(
            "UPDATE event_publications SET status = 'PUBLISHED', published_at = now(), kafka_partition = 0,"
            " kafka_offset = 0, claim = NULL, lease_until = NULL WHERE event_id = %s",
            [published],
        )
        conn.execute(
            "UPDATE event_publications SET attempts = 1, next_attempt_at = now() + interval '1 minute',"
            " last_error = 'refused', claim = NULL, lease_until = NULL WHERE event_id = %s",
            [refused],
        )
        conn.execute("UPDATE event_publications SET claim = NULL, lease_until = NULL WHERE event_id = %s", [waiting])
        age_events(31)

        assert conn.execute("SELECT outbox_events_old_count(30)").fetchone() == (1,)
        assert conn.execute("SELECT outbox_events_delete_old(30, 100)").fetchone() == (1,)
        assert conn.execute("SELECT outbox_events_delete_old(30, 100)").fetchone() == (0,)
        assert {row[0] for row in conn.execute("SELECT id FROM outbox_events")} == {refused, waiting}
        kept = conn.execute("SELECT event_id, status FROM event_publications ORDER BY event_seq").fetchall()
        assert kept == [(refused, "PENDING"), (waiting, "PENDING")]


def test_the_relay_claims_marks_what_the_broker_acknowledged_and_counts_a_refusal():
    with connect(autocommit=True) as conn:
        start(conn)
        provision(conn, "jane")
        provision(conn, "john")
        claim = conn.execute("SELECT gen_random_uuid()").fetchone()[0]
        first, second = [row[0] for row in conn.execute(CLAIM, [claim])]
        conn.execute(
            "UPDATE event_publications SET status = 'PUBLISHED', published_at = now(), kafka_partition = 2,"
            " kafka_offset = 41, claim = NULL, lease_until = NULL WHERE event_id = %s AND claim = %s",
            [first, claim],
        )
        conn.execute(
            "UPDATE event_publications SET attempts = attempts + 1, next_attempt_at = now() + interval '1 second',"
            " last_error = 'Broker: Message size too large', claim = NULL, lease_until = NULL"
            " WHERE event_id = %s AND claim = %s",
            [second, claim],
        )
        states = conn.execute("SELECT status, attempts, kafka_offset FROM event_publications ORDER BY event_seq")
        assert states.fetchall() == [("PUBLISHED", 0, 41), ("PENDING", 1, None)]
        assert trail(conn, "event.publication_rewritten") == []


def test_a_mark_that_knows_nothing_of_parking_publishes_a_row_parked_meanwhile():
    """A relay of the release before parking (0026), still running after the migration, neither parks
    nor unparks; its mark of a row another relay parked meanwhile must publish it all the same."""
    with connect(autocommit=True) as conn:
        start(conn)
        provision(conn, "jane")
        claim = conn.execute("SELECT gen_random_uuid()").fetchone()[0]
        (event,) = [row[0] for row in conn.execute(CLAIM, [claim])]
        conn.execute("UPDATE event_publications SET parked = true WHERE event_id = %s", [event])
        conn.execute(
            "UPDATE event_publications SET status = 'PUBLISHED', published_at = now(), kafka_partition = 0,"
            " kafka_offset = 7, claim = NULL, lease_until = NULL WHERE event_id = %s AND claim = %s",
            [event, claim],
        )
        assert conn.execute("SELECT status, kafka_offset FROM event_publications").fetchall() == [("PUBLISHED", 7)]


@pytest.mark.parametrize(
    "change",
    [
        # Published without a claim, or without the broker's partition and offset.
        "status = 'PUBLISHED', published_at = now(), kafka_partition = 0, kafka_offset = 0",
        "status = 'PUBLISHED', published_at = now(), kafka_partition = -1, kafka_offset = -1,"
        " claim = NULL, lease_until = NULL",
        # Put off for good, or held by a lease that never ends.
        "next_attempt_at = 'infinity'",
        "claim = gen_random_uuid(), lease_until = 'infinity'",
        # Moved to another account's order.
        "ordering_key = 'account:0'",
    ],
)
def test_an_unpublished_event_cannot_be_given_up_or_put_off_by_hand(change):
    with connect(autocommit=True) as conn:
        start(conn)
        provision(conn, "jane")
        conn.execute(CLAIM, [conn.execute("SELECT gen_random_uuid()").fetchone()[0]])
        before = publications(conn)
        with pytest.raises(psycopg.DatabaseError, match="cannot be changed so|violates check constraint"):
            conn.execute(f"UPDATE event_publications SET {change}")
        assert publications(conn) == before


def test_the_runtime_role_may_neither_make_nor_delete_a_publication_nor_switch_the_stream():
    with connect(autocommit=True) as conn:
        start(conn)
        provision(conn, "jane")
        for statement in (
            "DELETE FROM event_publications",
            "INSERT INTO event_publications (event_id, event_seq, ordering_key)"
            " SELECT id, seq, 'account:x' FROM outbox_events ON CONFLICT DO NOTHING",
            "DELETE FROM event_stream",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
        assert len(publications(conn)) == 1


def test_a_change_with_the_owners_key_is_audited():
    with connect(autocommit=True) as conn:
        start(conn)
        provision(conn, "jane")
    with connect_as_owner(autocommit=True) as owner, owner.transaction():
        rewriting_history(owner)
        owner.execute("UPDATE event_publications SET next_attempt_at = now() + interval '1 year'")
    with connect(autocommit=True) as conn:
        ((kind, _, after),) = trail(conn, "event.publication_rewritten")
        assert kind == "event_publication" and "next_attempt_at" in after


def test_stopping_drops_the_unpublished_rows_and_makes_no_more():
    with connect(autocommit=True) as conn:
        start(conn)
        provision(conn, "jane")
        assert conn.execute("SELECT event_stream_stop()").fetchone() == (1,)
        provision(conn, "john")
        assert publications(conn) == []
        assert trail(conn, "event.stream_stopped") == [("event_stream", "kafka", {"unpublished_dropped": 1})]
        assert conn.execute("SELECT event_stream_stop()").fetchone() == (0,)  # already off: nothing, no audit
        assert len(trail(conn, "event.stream_stopped")) == 1


def test_a_period_is_published_once_in_seq_order_and_only_while_the_stream_is_on():
    with connect(autocommit=True) as conn:
        jane = provision(conn, "jane")
        activate(conn, jane)
        with pytest.raises(psycopg.DatabaseError, match="the event stream is off"):
            conn.execute("SELECT event_publications_backfill(now() - interval '1 hour', now() + interval '1 hour')")
        start(conn)
        with pytest.raises(psycopg.DatabaseError, match="starts before it ends"):
            conn.execute("SELECT event_publications_backfill(now(), now() - interval '1 hour')")
        period = "SELECT event_publications_backfill(now() - interval '1 hour', now() + interval '1 hour')"
        assert conn.execute(period).fetchone() == (2,)
        assert conn.execute(period).fetchone() == (0,)
        assert [row[3] for row in publications(conn)] == ["account.created", "account.activated"]
        assert [after["events"] for *_, after in trail(conn, "event.publication_backfilled")] == [2, 0]


def test_a_period_published_again_replaces_its_published_rows_and_keeps_what_waits():
    """After a broker lost what it had acknowledged: the period's events are due again from the first,
    with their own seqs (and ids); a row still waiting is left as it is; audited once, as the runtime role."""
    with connect(autocommit=True) as conn:
        start(conn)
        jane = provision(conn, "jane")
        activate(conn, jane)
        provision(conn, "john")
        claim = conn.execute("SELECT gen_random_uuid()").fetchone()[0]
        conn.execute(CLAIM, [claim])
        ids = [row[0] for row in conn.execute("SELECT event_id FROM event_publications ORDER BY event_seq")]
        conn.execute(
            "UPDATE event_publications SET status = 'PUBLISHED', published_at = now(), kafka_partition = 0,"
            " kafka_offset = 7, claim = NULL, lease_until = NULL WHERE event_id = ANY(%s) AND claim = %s",
            [ids[:2], claim],
        )  # jane's two published; john's still claimed, waiting
        with pytest.raises(psycopg.DatabaseError, match="starts before it ends"):
            conn.execute("SELECT event_publications_republish(now(), now() - interval '1 hour')")
        again = "SELECT event_publications_republish(now() - interval '1 hour', now() + interval '1 hour')"
        assert conn.execute(again).fetchone() == (2,)
        rows = conn.execute(
            "SELECT event_id, status, kafka_offset, claim IS NOT NULL FROM event_publications ORDER BY event_seq"
        ).fetchall()
        assert rows == [
            (ids[0], "PENDING", None, False),
            (ids[1], "PENDING", None, False),
            (ids[2], "PENDING", None, True),
        ]
        ((kind, resource, after),) = trail(conn, "event.publication_republished")
        assert (kind, resource, after["events"], after["published_before"]) == ("event_stream", "kafka", 2, 2)


def test_a_period_cannot_be_published_again_while_the_stream_is_off():
    with connect(autocommit=True) as conn:
        provision(conn, "jane")
        with pytest.raises(psycopg.DatabaseError, match="the event stream is off"):
            conn.execute("SELECT event_publications_republish(now() - interval '1 hour', now() + interval '1 hour')")
