"""The outbox's rules against the runtime role (platform_events/sql/0019_outbox_trail.sql): every
change the runtime role makes to webhook_deliveries, outbox_events, outbox_consumers and
processed_events is a routine move of the code that writes them, or audited, or refused. Each attack is
raw SQL on a session of that role, as an intruder holding the app's credentials would type it."""

import json
import re
from pathlib import Path

import psycopg
import pytest

import platform_events
from accounts.nodes.consumer import ASSIGNMENTS
from tests.platform_events.outbox.test_triggers import endpoint, provision
from tests.support import connect, connect_as_owner, rewriting_history

pytestmark = pytest.mark.django_db(transaction=True)


# A run's claim, as dispatch.py's CLAIM takes it.
CLAIM = "UPDATE webhook_deliveries SET claim = gen_random_uuid(), lease_until = now() + interval '2 minutes'"


def deliveries(conn):
    return conn.execute(
        "SELECT id, status, attempts, next_retry_at, lease_until, http_status, last_attempt_at"
        " FROM webhook_deliveries ORDER BY id"
    ).fetchall()


def trail(conn, action_like="%"):
    rows = conn.execute(
        "SELECT action, resource_id, db_user, actor_id, diff_after::text FROM audit_events WHERE action LIKE %s"
        " ORDER BY occurred_at, id",
        [action_like],
    ).fetchall()
    return [(*row[:4], json.loads(row[4]) if row[4] else None) for row in rows]


@pytest.fixture
def due():
    """Two accounts' account.created due to one endpoint: two deliveries PENDING, never tried."""
    with connect(autocommit=True) as conn:
        endpoint(conn, "account.created")
        provision(conn, "jane")
        provision(conn, "john")


# Deliveries: the attack set due ones DELIVERED (then deleted their events) with no attempt and no row


@pytest.mark.parametrize(
    "change",
    [
        "status = 'DELIVERED'",
        "status = 'PERMANENTLY_FAILED'",
        # An attempt made up, without the claim a run takes before it sends.
        "status = 'DELIVERED', attempts = attempts + 1, http_status = 200, first_attempt_at = now(),"
        " last_attempt_at = now()",
        # Never due again, or held by a claim that never runs out: the same as dropped.
        "next_retry_at = 'infinity'",
        "claim = gen_random_uuid(), lease_until = 'infinity'",
        "status = 'FAILED', next_retry_at = now() + interval '10 years'",
        "attempts = 99",
    ],
)
def test_a_due_delivery_cannot_be_given_up_or_put_off_by_hand(due, change):
    with connect(autocommit=True) as conn:
        before = deliveries(conn)
        with pytest.raises(psycopg.DatabaseError, match="cannot be changed so"):
            conn.execute(f"UPDATE webhook_deliveries SET {change}")
        assert deliveries(conn) == before
        assert trail(conn, "webhook.%delivery%") == []


@pytest.mark.parametrize(
    "change",
    ["http_status = 200", "attempts = 0", "last_attempt_at = now() - interval '1 day'", "status = 'FAILED'"],
)
def test_a_finished_deliverys_record_cannot_be_rewritten(due, change):
    with connect(autocommit=True) as conn:
        conn.execute(CLAIM)
        conn.execute(
            "UPDATE webhook_deliveries SET status = 'PERMANENTLY_FAILED', attempts = attempts + 1, http_status = 410,"
            " first_attempt_at = now(), last_attempt_at = now(), claim = NULL, lease_until = NULL"
        )
        before = deliveries(conn)
        with pytest.raises(psycopg.DatabaseError, match="cannot be changed so"):
            conn.execute(f"UPDATE webhook_deliveries SET {change}")
        assert deliveries(conn) == before


def test_the_dispatchers_moves_pass_and_write_no_audit_row(due):
    """Claim, renew, release, and an attempt recorded by the claiming run: each as dispatch.py writes it."""
    with connect(autocommit=True) as conn:
        conn.execute(CLAIM)
        conn.execute("UPDATE webhook_deliveries SET lease_until = now() + interval '4 minutes'")
        conn.execute("UPDATE webhook_deliveries SET lease_until = NULL, claim = NULL")
        conn.execute(CLAIM)
        (first, second) = [row[0] for row in deliveries(conn)]
        conn.execute(
            "UPDATE webhook_deliveries SET status = 'DELIVERED', attempts = attempts + 1, http_status = 204,"
            " first_attempt_at = coalesce(first_attempt_at, now()), last_attempt_at = now(), claim = NULL,"
            " lease_until = NULL WHERE id = %s",
            [first],
        )
        conn.execute(
            "UPDATE webhook_deliveries SET status = 'FAILED', attempts = attempts + 1, http_status = 503,"
            " next_retry_at = now() + interval '5 minutes', first_attempt_at = coalesce(first_attempt_at, now()),"
            " last_attempt_at = now(), claim = NULL, lease_until = NULL WHERE id = %s",
            [second],
        )
        assert [row[1:3] for row in deliveries(conn)] == [("DELIVERED", 1), ("FAILED", 1)]
        assert trail(conn, "webhook.%delivery%") == []


@pytest.mark.parametrize(
    "record",
    [
        "status = 'DELIVERED', attempts = attempts + 1, http_status = 500",  # delivered is a 2xx answer
        "status = 'DELIVERED', attempts = attempts + 1, http_status = NULL",
        "status = 'FAILED', attempts = attempts + 1, next_retry_at = now() + interval '8 days'",
        "status = 'FAILED', attempts = attempts + 1, next_retry_at = now() - interval '1 day'",
        "status = 'DELIVERED', attempts = attempts + 2, http_status = 200",
        "status = 'PENDING', attempts = attempts + 1",
    ],
)
def test_even_the_claiming_run_records_only_an_attempt_as_the_dispatcher_makes_it(due, record):
    with connect(autocommit=True) as conn:
        conn.execute(CLAIM)
        before = deliveries(conn)
        with pytest.raises(psycopg.DatabaseError, match="cannot be changed so"):
            conn.execute(
                f"UPDATE webhook_deliveries SET {record}, first_attempt_at = coalesce(first_attempt_at, now()),"
                " last_attempt_at = now(), claim = NULL, lease_until = NULL"
            )
        assert deliveries(conn) == before


def test_a_claim_longer_than_an_hour_or_on_a_finished_delivery_is_refused(due):
    with connect(autocommit=True) as conn:
        with pytest.raises(psycopg.DatabaseError, match="cannot be changed so"):
            conn.execute(
                "UPDATE webhook_deliveries SET claim = gen_random_uuid(), lease_until = now() + interval '2 hours'"
            )
        with conn.transaction():
            rewriting_history(conn)
            conn.execute("UPDATE webhook_deliveries SET status = 'DELIVERED'")
        with pytest.raises(psycopg.DatabaseError, match="cannot be changed so"):
            conn.execute(
                "UPDATE webhook_deliveries SET claim = gen_random_uuid(), lease_until = now() + interval '1 minute'"
            )


def test_with_the_owners_key_a_delivery_may_be_rewritten_audited(due):
    with connect(autocommit=True) as conn:
        with conn.transaction():
            rewriting_history(conn)
            conn.execute("UPDATE webhook_deliveries SET status = 'DELIVERED', attempts = 3")
        rows = trail(conn, "webhook.delivery_rewritten")
        (login,) = conn.execute("SELECT session_user").fetchone()
    assert [(db_user, diff) for _, _, db_user, _, diff in rows] == [(login, {"status": "DELIVERED", "attempts": 3})] * 2


def test_the_runtime_role_deletes_no_delivery_and_no_event(due):
    """The attack's second step: the events of deliveries marked delivered, deleted. Neither table is
    the runtime role's to delete from (retention goes through outbox_events_delete_old)."""
    with connect(autocommit=True) as conn:
        for statement in ["DELETE FROM webhook_deliveries", "DELETE FROM outbox_events"]:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
        assert conn.execute("SELECT count(*) FROM outbox_events").fetchone() == (2,)


# Events: kept while anything has them due; retention's function checks it and audits each batch


def age_events(days: int) -> None:
    with connect_as_owner(autocommit=True) as owner:
        owner.execute("ALTER TABLE outbox_events DISABLE TRIGGER before_outbox_event_update")
        owner.execute("UPDATE outbox_events SET created_at = now() - make_interval(days => %s)", [days])
        owner.execute("ALTER TABLE outbox_events ENABLE TRIGGER before_outbox_event_update")


def test_retention_deletes_only_old_events_nothing_has_due_and_audits_it():
    with connect(autocommit=True) as conn:
        endpoint(conn, "account.created")
        jane, john = provision(conn, "jane"), provision(conn, "john")
        conn.execute("SELECT outbox_consumer_register('mirror', ARRAY['account.created'])")
        age_events(31)
        assert conn.execute("SELECT outbox_events_delete_old(30, 100)").fetchone() == (0,)  # all due
        # Jane's delivered, John's still due to the endpoint; the consumer recorded both.
        conn.execute(CLAIM)
        conn.execute(
            "UPDATE webhook_deliveries d SET status = 'DELIVERED', attempts = 1, http_status = 200,"
            " first_attempt_at = now(), last_attempt_at = now(), claim = NULL, lease_until = NULL"
            " FROM outbox_events e WHERE e.id = d.event_id AND e.aggregate_id = %s",
            [str(jane)],
        )
        conn.execute("UPDATE webhook_deliveries SET claim = NULL, lease_until = NULL")
        assert conn.execute("SELECT outbox_events_delete_old(30, 100)").fetchone() == (0,)  # the consumer's due
        conn.execute("INSERT INTO processed_events (consumer_group, event_id) SELECT 'mirror', id FROM outbox_events")
        assert conn.execute("SELECT outbox_events_old_count(30)").fetchone() == (1,)
        assert conn.execute("SELECT outbox_events_delete_old(32, 100)").fetchone() == (0,)  # not old enough
        assert conn.execute("SELECT outbox_events_delete_old(30, 100)").fetchone() == (1,)
        kept = conn.execute("SELECT aggregate_id FROM outbox_events").fetchall()
        assert kept == [(str(john),)]
        ((*_, diff),) = trail(conn, "event.retention_deleted")
        assert diff["deleted"] == 1
        for days, size in [(0, 100), (30, 0)]:
            with pytest.raises(psycopg.DatabaseError, match="at least 1"):
                conn.execute("SELECT outbox_events_delete_old(%s, %s)", [days, size])


def test_an_event_a_consumer_group_has_not_recorded_cannot_be_deleted_even_by_the_owner():
    with connect(autocommit=True) as conn:
        conn.execute("SELECT outbox_consumer_register('mirror', ARRAY['account.created'])")
        provision(conn, "jane")
    with connect_as_owner(autocommit=True) as owner:
        with pytest.raises(psycopg.DatabaseError, match="still due to consumer group mirror"):
            owner.execute("DELETE FROM outbox_events")


# Consumers: registered through the function, audited; the table is not the runtime role's to write


def test_a_consumer_group_is_registered_audited_and_not_written_by_hand():
    with connect(autocommit=True) as conn:
        for _ in range(2):
            conn.execute("SELECT outbox_consumer_register('mirror', ARRAY['account.deleted', 'account.created'])")
        conn.execute("SELECT outbox_consumer_register('mirror', ARRAY['account.created'])")
        for statement in [
            "DELETE FROM outbox_consumers",
            "UPDATE outbox_consumers SET event_types = ARRAY['account.suspended']",
            "INSERT INTO outbox_consumers (consumer_group, event_types) VALUES ('x', ARRAY['account.created'])",
        ]:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
        with pytest.raises(psycopg.DatabaseError, match="1 to 64 characters"):
            conn.execute("SELECT outbox_consumer_register('', ARRAY['account.created'])")
        rows = [(action, group, diff) for action, group, _, _, diff in trail(conn, "consumer.%")]
    assert rows == [
        ("consumer.registered", "mirror", {"event_types": ["account.created", "account.deleted"]}),
        ("consumer.changed", "mirror", {"consumer_group": "mirror", "event_types": ["account.created"]}),
    ]


def test_the_migration_registers_the_released_consumer_group_as_its_code_does():
    """So that, while old and new code run side by side in a deploy, the old consumer (which does not
    register) may still record its events."""
    sql = (Path(platform_events.__file__).parent / "sql" / "0019_outbox_trail.sql").read_text()
    ((group, types),) = re.findall(r"SELECT outbox_consumer_register\('([^']+)', '\{([^}]+)\}'\)", sql)
    assert (group, set(types.split(","))) == (ASSIGNMENTS.group, set(ASSIGNMENTS.event_types))


# Processed events: the attack skipped or replayed a consumer by inserting or deleting its records


def test_a_record_is_written_only_for_a_kept_event_its_group_takes_and_each_is_audited():
    with connect(autocommit=True) as conn:
        account = provision(conn, "jane")
        conn.execute("UPDATE accounts SET status = 'suspended' WHERE id = %s", [account])
        conn.execute("SELECT outbox_consumer_register('mirror', ARRAY['account.created'])")
        created, suspended = [row[0] for row in conn.execute("SELECT id FROM outbox_events ORDER BY seq").fetchall()]
        refused = {
            "an unregistered group": ("INSERT INTO processed_events VALUES ('other', %s)", [created]),
            "a type the group does not take": ("INSERT INTO processed_events VALUES ('mirror', %s)", [suspended]),
            "no such event": ("INSERT INTO processed_events VALUES ('mirror', gen_random_uuid())", []),
            "dated earlier": (
                "INSERT INTO processed_events VALUES ('mirror', %s, now() - interval '1 day')",
                [created],
            ),
        }
        for what, (statement, params) in refused.items():
            with pytest.raises(psycopg.DatabaseError, match="cannot record event"):
                conn.execute(statement, params)
            print("refused:", what)
        with conn.transaction():
            conn.execute("SELECT set_config('lifecycle.actor_id', 'staff:7', true)")
            conn.execute("INSERT INTO processed_events (consumer_group, event_id) VALUES ('mirror', %s)", [created])
        ((action, resource, db_user, actor, diff),) = trail(conn, "event.processed")
        (login,) = conn.execute("SELECT session_user").fetchone()
    assert (action, resource, db_user, actor, diff) == (
        "event.processed",
        str(created),
        login,
        "staff:7",
        {"consumer_group": "mirror"},
    )


def test_a_record_cannot_be_deleted_or_changed_while_its_event_is_kept():
    """Deleted, the consumer would handle the event again (a replay); changed, another event skipped."""
    with connect(autocommit=True) as conn:
        provision(conn, "jane")
        conn.execute("SELECT outbox_consumer_register('mirror', ARRAY['account.created'])")
        conn.execute("INSERT INTO processed_events (consumer_group, event_id) SELECT 'mirror', id FROM outbox_events")
        with pytest.raises(psycopg.DatabaseError, match="cannot be deleted while the event is kept"):
            conn.execute("DELETE FROM processed_events")
        for change in ["processed_at = now() - interval '1 day'", "event_id = gen_random_uuid()"]:
            with pytest.raises(psycopg.DatabaseError, match="cannot be changed"):
                conn.execute(f"UPDATE processed_events SET {change}")
        assert conn.execute("SELECT count(*) FROM processed_events").fetchone() == (1,)
