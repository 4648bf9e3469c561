"""Attacks by the runtime role, in raw SQL, on the Kafka relay's publication state
(platform_events/sql/0022_event_publications.sql, 0024_event_republish.sql): every change that is not one
of the relay's moves is refused, and the owner functions that switch or refill the stream are audited."""

import psycopg
import pytest

from tests.platform_events.outbox.test_event_publications import CLAIM, start, trail
from tests.platform_events.outbox.test_triggers import activate, provision
from tests.support import connect

pytestmark = [pytest.mark.attack, pytest.mark.django_db(transaction=True)]

MARK = (
    "UPDATE event_publications SET status = 'PUBLISHED', published_at = now(), kafka_partition = 0,"
    " kafka_offset = 5, claim = NULL, lease_until = NULL WHERE event_id = %s"
)


def states(conn):
    return conn.execute("SELECT * FROM event_publications ORDER BY event_seq").fetchall()


@pytest.fixture
def published_and_waiting():
    """Jane's first event published (offset 5), her second waiting, unclaimed."""
    with connect(autocommit=True) as conn:
        start(conn)
        jane = provision(conn, "jane")
        activate(conn, jane)
        first, second = [row[0] for row in conn.execute("SELECT event_id FROM event_publications ORDER BY event_seq")]
        conn.execute(CLAIM, [conn.execute("SELECT gen_random_uuid()").fetchone()[0]])
        conn.execute(MARK, [first])
        conn.execute("UPDATE event_publications SET claim = NULL, lease_until = NULL WHERE event_id = %s", [second])
    return first, second


@pytest.mark.parametrize(
    ("which", "change"),
    [
        # A published event made due again, or its acknowledgement rewritten (where a consumer finds it).
        ("published", "status = 'PENDING', published_at = NULL, kafka_partition = NULL, kafka_offset = NULL"),
        ("published", "kafka_offset = 999"),
        ("published", "kafka_partition = 1"),
        ("published", "published_at = now() - interval '1 day'"),
        # A lease taken on a published row.
        ("published", "claim = gen_random_uuid(), lease_until = now() + interval '1 minute'"),
        # Reordered: the waiting event moved before the published one, or out of its account.
        ("waiting", "event_seq = 0"),
        ("waiting", "ordering_key = 'account:someone-else'"),
        ("waiting", "event_id = gen_random_uuid()"),
        ("waiting", "created_at = now() - interval '1 year'"),
        # Its refusals forgotten, or an error recorded by no claim's holder.
        ("waiting", "last_error = 'made up'"),
        ("waiting", "attempts = 5"),
        ("waiting", "next_attempt_at = now() + interval '1 hour'"),
    ],
)
def test_a_change_that_is_no_relay_move_is_refused(published_and_waiting, which, change):
    first, second = published_and_waiting
    with connect(autocommit=True) as conn:
        before = states(conn)
        with pytest.raises(psycopg.DatabaseError, match="cannot be changed so|violates check constraint"):
            conn.execute(
                f"UPDATE event_publications SET {change} WHERE event_id = %s",
                [first if which == "published" else second],
            )
        assert states(conn) == before


@pytest.mark.parametrize(
    "move",
    [
        # Marked published with the attempts it had wiped, or a refusal without an error.
        "status = 'PUBLISHED', published_at = now(), kafka_partition = 0, kafka_offset = 6, attempts = 0,"
        " claim = NULL, lease_until = NULL",
        "attempts = attempts + 1, next_attempt_at = now(), last_error = NULL, claim = NULL, lease_until = NULL",
        # Put off past a day, or refused twice in one move.
        "attempts = attempts + 1, next_attempt_at = now() + interval '2 days', last_error = 'x', claim = NULL,"
        " lease_until = NULL",
        "attempts = attempts + 2, next_attempt_at = now(), last_error = 'x', claim = NULL, lease_until = NULL",
        # A lease longer than an hour.
        "claim = gen_random_uuid(), lease_until = now() + interval '61 minutes'",
    ],
)
def test_a_claimed_row_moves_only_as_the_relay_moves_it(published_and_waiting, move):
    _, second = published_and_waiting
    with connect(autocommit=True) as conn:
        conn.execute(
            "UPDATE event_publications SET claim = gen_random_uuid(), lease_until = now() + interval '1 minute',"
            " attempts = attempts WHERE event_id = %s",
            [second],
        )
        conn.execute(  # a first refusal, so that "attempts = 0" would forget one
            "UPDATE event_publications SET attempts = attempts + 1, next_attempt_at = now(), last_error = 'first',"
            " claim = NULL, lease_until = NULL WHERE event_id = %s",
            [second],
        )
        conn.execute(
            "UPDATE event_publications SET claim = gen_random_uuid(), lease_until = now() + interval '1 minute'"
            " WHERE event_id = %s",
            [second],
        )
        before = states(conn)
        with pytest.raises(psycopg.DatabaseError, match="cannot be changed so|violates check constraint"):
            conn.execute(f"UPDATE event_publications SET {move} WHERE event_id = %s", [second])
        assert states(conn) == before


@pytest.mark.parametrize(
    "statement",
    [
        "TRUNCATE event_publications",
        "TRUNCATE event_stream",
        "UPDATE event_stream SET started_at = now() - interval '1 year'",
        "INSERT INTO event_stream DEFAULT VALUES",
        "ALTER TABLE event_publications DISABLE TRIGGER before_event_publication_move",
        "DROP INDEX event_publications_order",
        "SELECT audit_record('event.stream_started', 'event_stream', 'kafka', NULL, NULL)",
        "SELECT outbox_append_many('account', ARRAY['x'], 'account.created', ARRAY['{}'::jsonb])",
    ],
)
def test_the_runtime_role_may_not_truncate_switch_forge_or_unhook(published_and_waiting, statement):
    with connect(autocommit=True) as conn:
        before = states(conn)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(statement)
        assert states(conn) == before


def test_the_owner_functions_it_may_call_are_each_audited(published_and_waiting):
    """What the runtime role can do to the stream through the owner's functions leaves a trail: a
    period refilled, published again, the stream switched off (dropping what waits) and on again."""
    with connect(autocommit=True) as conn:
        conn.execute("SELECT event_publications_backfill('-infinity', 'infinity')")
        conn.execute("SELECT event_publications_republish('-infinity', 'infinity')")
        conn.execute("SELECT event_stream_stop()")
        provision(conn, "unseen")  # no row while off
        conn.execute("SELECT event_stream_start()")
        actions = conn.execute(
            "SELECT action FROM audit_events WHERE resource_type = 'event_stream' ORDER BY occurred_at, id"
        ).fetchall()
        assert [a for (a,) in actions] == [
            "event.stream_started",
            "event.publication_backfilled",
            "event.publication_republished",
            "event.stream_stopped",
            "event.stream_started",
        ]
        assert trail(conn, "event.stream_stopped")[0][2] == {"unpublished_dropped": 2}
