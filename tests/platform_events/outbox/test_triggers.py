"""The outbox is written by the database (platform_events/sql/0010_outbox.sql, accounts/sql/0013_outbox.sql):
every change made by raw SQL, as psql would make it, publishes its event in its own transaction, queued
for the endpoints that take it, and nothing a change rolls back is ever published."""

import json

import psycopg
import pytest

from tests.support import connect, connect_as_owner, rewriting_history

pytestmark = pytest.mark.django_db(transaction=True)


def events(conn, account_id=None):
    rows = conn.execute(
        "SELECT event_type, payload::text FROM outbox_events WHERE %s::text IS NULL OR aggregate_id = %s::text ORDER BY seq",
        [account_id, account_id],
    ).fetchall()
    return [(event_type, json.loads(payload)) for event_type, payload in rows]


def endpoint(conn, *types, status="ACTIVE"):
    (sub_id,) = conn.execute(
        "INSERT INTO webhook_subscriptions (owner_id, url, events, secret_encrypted, secret_key_id, status)"
        " VALUES ('partner', 'https://hooks.example.com/in', %s, '\\x00', 'k1', %s) RETURNING id",
        [list(types), status],
    ).fetchone()
    return sub_id


def provision(conn, login):
    (account_id,) = conn.execute(
        "INSERT INTO accounts (email, login) VALUES (%s, %s) RETURNING id", [f"{login}@example.com", login]
    ).fetchone()
    return account_id


def activate(conn, account_id):
    conn.execute(
        "UPDATE tokens SET consumed_at = now() WHERE account = %s AND action = 'activation' AND consumed_at IS NULL",
        [account_id],
    )


def test_every_lifecycle_change_made_in_sql_publishes_its_event_in_order():
    with connect(autocommit=True) as conn:
        account_id = provision(conn, "jane")
        activate(conn, account_id)
        conn.execute("UPDATE accounts SET status = 'suspended' WHERE id = %s", [account_id])
        conn.execute("UPDATE accounts SET status = 'active' WHERE id = %s", [account_id])
        conn.execute("UPDATE accounts SET email = 'jane.doe@example.com' WHERE id = %s", [account_id])
        conn.execute(
            "INSERT INTO account_passwords (account, password) VALUES (%s, 'argon2$argon2id$v=19$m=1,t=1,p=1$x$y')",
            [account_id],
        )
        conn.execute(
            "UPDATE account_passwords SET password = 'argon2$argon2id$v=19$m=1,t=1,p=1$z$w' WHERE account = %s",
            [account_id],
        )
        conn.execute("DELETE FROM accounts WHERE id = %s", [account_id])
        published = events(conn, account_id)
    assert [event_type for event_type, _ in published] == [
        "account.created",
        "account.activated",
        "account.suspended",
        "account.unsuspended",
        "account.email_changed",
        "account.password_changed",
        "account.password_changed",
        "account.deleted",
    ]
    created = published[0][1]
    assert set(created) == {"type", "timestamp", "data"}
    assert created["type"] == "account.created"
    assert created["timestamp"].endswith("Z")
    assert created["data"] == {"id": account_id, "login": "jane", "email": "jane@example.com", "status": "provisioned"}
    assert published[4][1]["data"]["previous_email"] == "jane@example.com"
    assert published[4][1]["data"]["email"] == "jane.doe@example.com"


def test_no_event_carries_a_secret_a_code_or_a_password_hash():
    with connect(autocommit=True) as conn:
        account_id = provision(conn, "jane")
        secret, code = conn.execute(
            "SELECT encode(secret, 'hex'), code FROM tokens WHERE account = %s", [account_id]
        ).fetchone()
        activate(conn, account_id)
        conn.execute(
            "INSERT INTO account_passwords (account, password) VALUES (%s, 'argon2$argon2id$v=19$m=1,t=1,p=1$salt$hash')",
            [account_id],
        )
        (everything,) = conn.execute("SELECT string_agg(payload::text, ' ') FROM outbox_events").fetchone()
    assert secret not in everything
    assert str(code) not in everything
    assert "argon2" not in everything and "salt$hash" not in everything


def test_a_rolled_back_change_publishes_nothing():
    with connect() as conn:
        provision(conn, "ghost")
        conn.rollback()
        with conn.transaction():
            account_id = provision(conn, "kept")
        conn.execute("UPDATE accounts SET status = 'suspended' WHERE id = %s", [account_id])
        conn.rollback()
        conn.commit()
        assert [t for t, _ in events(conn)] == ["account.created"]


def test_a_bulk_insert_publishes_one_event_per_account_and_queues_each_for_every_endpoint_that_takes_it():
    with connect(autocommit=True) as conn:
        takes_created = endpoint(conn, "account.created", "account.suspended")
        endpoint(conn, "account.suspended")  # takes other events only
        paused = endpoint(conn, "account.created", status="PAUSED")
        endpoint(conn, "account.created", status="DISABLED_DEAD")
        conn.execute(
            "INSERT INTO accounts (email, login) SELECT 'bulk' || n || '@example.com', 'bulk' || n FROM generate_series(1, 500) n"
        )
        assert conn.execute("SELECT count(*) FROM outbox_events WHERE event_type = 'account.created'").fetchone() == (
            500,
        )
        queued = dict(
            conn.execute("SELECT subscription_id, count(*) FROM webhook_deliveries GROUP BY subscription_id").fetchall()
        )
    # Paused endpoints get their events when resumed; disabled ones get none.
    assert queued == {takes_created: 500, paused: 500}


def test_an_events_seq_follows_the_order_its_account_changed():
    with connect(autocommit=True) as conn:
        account_id = provision(conn, "jane")
        activate(conn, account_id)
        seqs = conn.execute(
            "SELECT event_type FROM outbox_events WHERE aggregate_id = %s::text ORDER BY seq", [account_id]
        ).fetchall()
    assert [s for (s,) in seqs] == ["account.created", "account.activated"]


def test_the_runtime_role_cannot_write_change_or_forge_events():
    with connect(autocommit=True) as conn:
        account_id = provision(conn, "jane")
        sub_id = endpoint(conn, "account.created")
        (event_id,) = conn.execute("SELECT id FROM outbox_events LIMIT 1").fetchone()
        refused = {
            "insert": "INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload)"
            " VALUES ('account', '1', 'account.deleted', '{\"type\": 1, \"timestamp\": 1, \"data\": 1}')",
            "call the writer": "SELECT outbox_append_many('account', ARRAY['1'], 'account.deleted', ARRAY['{}'::jsonb])",
            "queue a delivery": f"INSERT INTO webhook_deliveries (subscription_id, event_id, event_seq, ordering_key)"
            f" VALUES ('{sub_id}', '{event_id}', 1, 'account:{account_id}')",
        }
        for what, sql in refused.items():
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql)
            print("refused:", what)
        with pytest.raises(psycopg.DatabaseError, match="cannot be changed"):
            conn.execute(f"UPDATE outbox_events SET payload = payload || '{{\"x\": 1}}' WHERE id = '{event_id}'")


def test_an_event_an_endpoint_is_still_due_cannot_be_deleted_and_nobody_can_change_one():
    with connect(autocommit=True) as conn:
        endpoint(conn, "account.created")
        provision(conn, "jane")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # retention's function deletes events
            conn.execute("DELETE FROM outbox_events")
    with connect_as_owner(autocommit=True) as owner:
        with pytest.raises(psycopg.DatabaseError, match="still due to an endpoint"):
            owner.execute("DELETE FROM outbox_events")
        with owner.transaction():
            rewriting_history(owner)
            owner.execute("UPDATE webhook_deliveries SET status = 'DELIVERED'")
        owner.execute("DELETE FROM outbox_events")
        assert owner.execute("SELECT count(*) FROM webhook_deliveries").fetchone() == (0,)
        provision(owner, "john")
        with pytest.raises(psycopg.DatabaseError, match="cannot be changed"):
            owner.execute("UPDATE outbox_events SET aggregate_id = '0'")


def test_a_delivery_sent_again_is_audited_and_wakes_the_dispatcher():
    with connect(autocommit=True) as conn:
        endpoint(conn, "account.created")
        provision(conn, "jane")
        with conn.transaction():
            rewriting_history(conn)
            conn.execute("UPDATE webhook_deliveries SET status = 'PERMANENTLY_FAILED', attempts = 8")
        with connect(autocommit=True) as listener:
            listener.execute("LISTEN webhook_delivery")
            conn.execute("UPDATE webhook_deliveries SET status = 'PENDING', next_retry_at = now()")
            assert next(listener.notifies(timeout=5, stop_after=1)).channel == "webhook_delivery"
        rows = conn.execute(
            "SELECT action, resource_type, diff_before->>'status' FROM audit_events WHERE action LIKE 'webhook.%'"
        ).fetchall()
    assert ("webhook.redelivered", "webhook_delivery", "PERMANENTLY_FAILED") in rows


def test_endpoint_changes_are_audited_without_their_secret():
    with connect(autocommit=True) as conn:
        sub_id = endpoint(conn, "account.created")
        conn.execute("UPDATE webhook_subscriptions SET status = 'PAUSED' WHERE id = %s", [sub_id])
        conn.execute("UPDATE webhook_subscriptions SET status = 'ACTIVE' WHERE id = %s", [sub_id])
        conn.execute(
            "UPDATE webhook_subscriptions SET failure_count = 3, last_failure_at = now() WHERE id = %s", [sub_id]
        )
        conn.execute(
            "UPDATE webhook_subscriptions SET previous_secret_encrypted = secret_encrypted, previous_secret_key_id = 'k1',"
            " previous_secret_until = now() + interval '1 day', secret_encrypted = '\\x01' WHERE id = %s",
            [sub_id],
        )
        conn.execute(
            "UPDATE webhook_subscriptions SET status = 'DISABLED_DEAD', disabled_reason = '410 Gone' WHERE id = %s",
            [sub_id],
        )
        conn.execute("UPDATE webhook_subscriptions SET status = 'ACTIVE' WHERE id = %s", [sub_id])
        conn.execute("DELETE FROM webhook_subscriptions WHERE id = %s", [sub_id])
        rows = conn.execute(
            "SELECT action, coalesce(diff_before::text, '') || coalesce(diff_after::text, '') FROM audit_events"
            " WHERE resource_type = 'webhook_endpoint' ORDER BY occurred_at, id"
        ).fetchall()
    assert [action for action, _ in rows] == [
        "webhook.created",
        "webhook.paused",
        "webhook.resumed",
        "webhook.secret_rotated",
        "webhook.disabled",
        "webhook.enabled",
        "webhook.deleted",
    ]
    assert not any("secret_encrypted" in diffs or "\\x0" in diffs for _, diffs in rows)


def test_a_test_event_goes_to_its_one_endpoint():
    with connect(autocommit=True) as conn:
        target = endpoint(conn, "account.created")
        endpoint(conn, "account.created")
        (event_id,) = conn.execute("SELECT webhook_send_test(%s)", [target]).fetchone()
        queued = conn.execute(
            "SELECT subscription_id FROM webhook_deliveries WHERE event_id = %s", [event_id]
        ).fetchall()
    assert queued == [(target,)]


def test_the_runtime_role_cannot_redirect_or_drop_a_due_delivery():
    """The attack: a delivery pointed at another endpoint, or deleted while due, unaudited. Both are
    refused."""
    with connect(autocommit=True) as conn:
        endpoint(conn, "account.created")
        other = endpoint(conn, "account.suspended")
        provision(conn, "jane")
        with pytest.raises(psycopg.DatabaseError, match="cannot be changed"):
            conn.execute("UPDATE webhook_deliveries SET subscription_id = %s", [other])
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("DELETE FROM webhook_deliveries")
        with connect_as_owner(autocommit=True) as owner, pytest.raises(psycopg.DatabaseError, match="still due"):
            owner.execute("DELETE FROM webhook_deliveries")
        provision(conn, "john")
        conn.execute("DELETE FROM webhook_subscriptions")  # its due deliveries go with it, audited
        assert conn.execute("SELECT count(*) FROM webhook_deliveries").fetchone() == (0,)


@pytest.mark.parametrize(
    "change",
    [
        "subscription_id = (SELECT id FROM webhook_subscriptions WHERE id <> subscription_id LIMIT 1)",
        "event_id = (SELECT id FROM outbox_events WHERE id <> event_id LIMIT 1)",
        "event_seq = event_seq + 1",
        "ordering_key = 'account:someone-else'",
    ],
)
def test_no_part_of_a_deliverys_identity_can_be_changed(change):
    """The rules' trigger fires only when its WHEN sees the identity change (0015): each column of it."""
    with connect(autocommit=True) as conn:
        endpoint(conn, "account.created")
        endpoint(conn, "account.suspended")
        provision(conn, "jane")
        provision(conn, "john")
        with pytest.raises(psycopg.DatabaseError, match="cannot be changed"):
            conn.execute(f"UPDATE webhook_deliveries SET {change}")
        # What the dispatcher and staff change is still allowed.
        conn.execute(
            "UPDATE webhook_deliveries SET claim = gen_random_uuid(), lease_until = now() + interval '1 minute'"
        )
        conn.execute(
            "UPDATE webhook_deliveries SET status = 'FAILED', attempts = attempts + 1, next_retry_at = now(),"
            " first_attempt_at = now(), last_attempt_at = now(), claim = NULL, lease_until = NULL"
        )
