"""Erasure as the database keeps it (accounts/sql/0024_erasure.sql), tried in raw SQL as the runtime
role, as psql would: account_erase() is the one way to an erased account, and the one writer that
may blank columns of the append-only trail and the outbox."""

import json

import pytest

from tests.accounts.test_deprovision_rules import deprovision, new_account

pytestmark = pytest.mark.django_db

ADDRESS = "Quentin.Erasable@Example.com"
LOGIN = "qerasable"


def erase(sql, account_id, reason=None):
    if reason is not None:
        sql("SELECT set_config('lifecycle.reason', %s, true)", [reason])
    (done,) = sql("SELECT account_erase(%s)::text", [account_id])[0]
    return json.loads(done) if done is not None else None


def erasable(sql, status="active", reason=f"asked by {ADDRESS} ({LOGIN})"):
    account_id = new_account(sql, status, email=ADDRESS, login=LOGIN)
    deprovision(sql, account_id, reason=reason)
    return account_id


def mentions(sql, table: str) -> int:
    (count,) = sql(
        f"SELECT count(*) FROM {table} t WHERE strpos(lower(t::text), %s) > 0 OR strpos(lower(t::text), %s) > 0",
        [ADDRESS.lower(), LOGIN],
    )[0]
    return count


def test_erasure_blanks_the_row_and_every_copy_in_the_trail_and_the_outbox(sql):
    account_id = erasable(sql)
    assert mentions(sql, "audit_events") > 0 and mentions(sql, "outbox_events") > 0

    done = erase(sql, account_id, reason=f"erase {ADDRESS} now")

    (row,) = sql(
        "SELECT status::text, email, login, activated_at IS NOT NULL FROM accounts WHERE id = %s", [account_id]
    )
    assert row == ("erased", None, None, True)
    assert mentions(sql, "audit_events") == 0
    assert mentions(sql, "outbox_events") == 0
    assert sql("SELECT count(*) FROM tokens WHERE account = %s", [account_id]) == [(0,)]
    assert done["tokens_deleted"] >= 1 and done["audit_rows_blanked"] >= 3
    # The trail keeps every row, in order, each saying what it said but the address and login.
    actions = [
        a
        for (a,) in sql(
            "SELECT action FROM audit_events WHERE resource_type = 'account' AND resource_id = %s ORDER BY occurred_at, action",
            [str(account_id)],
        )
    ]
    assert actions[0] == "account.created" and actions[-1] == "account.erased"
    assert {"account.activated", "account.deprovisioned"} <= set(actions)
    (created,) = sql(
        "SELECT diff_after FROM audit_events WHERE action = 'account.created' AND resource_id = %s", [str(account_id)]
    )
    assert json.loads(created[0]) == {"email": "[erased]", "login": "[erased]", "status": "provisioned"}
    (deprovisioned,) = sql(
        "SELECT reason FROM audit_events WHERE action = 'account.deprovisioned' AND resource_id = %s", [str(account_id)]
    )
    assert deprovisioned == ("asked by [erased] ([erased])",)
    (erased,) = sql(
        "SELECT reason, diff_after->>'status' FROM audit_events WHERE action = 'account.erased' AND resource_id = %s",
        [str(account_id)],
    )
    assert erased == ("erase [erased] now", "erased")
    # Its last event says the id only.
    (last,) = sql(
        "SELECT event_type, payload->'data' FROM outbox_events WHERE aggregate_id = %s ORDER BY seq DESC LIMIT 1",
        [str(account_id)],
    )
    assert (last[0], json.loads(last[1])) == ("account.erased", {"id": account_id})


def test_another_rows_reason_loses_the_address_and_login_unless_another_account_holds_them(sql):
    account_id = erasable(sql)
    other = new_account(sql, "active", email="other@example.com", login="other")
    # A sign-up never activated with the other account's address: erased, it takes that address along
    # only in its own rows.
    (stale,) = sql("INSERT INTO accounts (email, login) VALUES ('OTHER@example.com', 'stale') RETURNING id")[0]
    sql(
        "SELECT set_config('lifecycle.reason', %s, true)",
        [f"same person as {ADDRESS.upper()}, {LOGIN}; other@example.com"],
    )
    sql("UPDATE accounts SET status = 'suspended' WHERE id = %s", [other])
    sql("UPDATE accounts SET status = 'deprovisioned' WHERE id = %s", [stale])

    erase(sql, account_id)
    erase(sql, stale)

    (reason,) = sql(
        "SELECT reason FROM audit_events WHERE action = 'account.suspended' AND resource_id = %s", [str(other)]
    )
    assert reason == ("same person as [erased], [erased]; other@example.com",)
    (created,) = sql(
        "SELECT diff_after->>'email' FROM audit_events WHERE action = 'account.created' AND resource_id = %s",
        [str(stale)],
    )
    assert created == ("[erased]",)


def test_a_login_is_replaced_as_a_word_not_inside_other_words(sql):
    (scrubbed,) = sql(
        "SELECT erasure_scrub_text(%s, ARRAY['at', 'a.b+c@example.com'])",
        ["at: activated_at by AT, A.B+C@EXAMPLE.COM; cat"],
    )[0]
    assert scrubbed == "[erased]: activated_at by [erased], [erased]; cat"


@pytest.mark.parametrize("status", ["provisioned", "active", "suspended"])
def test_only_a_deprovisioned_account_is_erased(sql, refused, status):
    account_id = new_account(sql, status, email=ADDRESS, login=LOGIN)
    refused(
        "SELECT account_erase(%s)", [account_id], match="is not deprovisioned; only a deprovisioned account is erased"
    )
    assert sql("SELECT status::text, email FROM accounts WHERE id = %s", [account_id]) == [(status, ADDRESS)]


def test_an_unknown_account_is_refused_and_an_erased_one_is_erased_once(sql, refused):
    refused("SELECT account_erase(%s)", [987654321], match="account 987654321 does not exist")
    account_id = erasable(sql)
    assert erase(sql, account_id) is not None
    assert erase(sql, account_id) is None
    assert sql(
        "SELECT count(*) FROM audit_events WHERE action = 'account.erased' AND resource_id = %s", [str(account_id)]
    ) == [(1,)]


def test_no_one_erases_by_hand_nor_changes_an_erased_account(sql, refused):
    account_id = erasable(sql)
    refused(
        "UPDATE accounts SET status = 'erased', email = NULL, login = NULL WHERE id = %s",
        [account_id],
        match="is erased only by account_erase",
    )
    refused(
        "INSERT INTO accounts (email, login, status) VALUES ('n@example.com', 'n', 'erased')", match="cannot be erased"
    )
    refused("UPDATE accounts SET email = NULL WHERE id = %s", [account_id], match="ck_accounts_erased_blank")
    erase(sql, account_id)
    for change in ("status = 'provisioned'", "email = 'back@example.com'", "login = 'back'"):
        refused(f"UPDATE accounts SET {change} WHERE id = %s", [account_id], match="is erased; it takes no change")
    refused("INSERT INTO tokens (account, action) VALUES (%s, 'activation')", [account_id], match="is erased; no token")
    refused("INSERT INTO tokens (account, action) VALUES (%s, 'restore')", [account_id], match="is not deprovisioned")


def test_the_trail_and_the_outbox_stay_closed_to_the_runtime_role_and_to_the_owner_outside_an_erasure(sql, refused):
    account_id = erasable(sql)
    refused(
        "UPDATE audit_events SET reason = NULL WHERE resource_id = %s", [str(account_id)], match="permission denied"
    )
    refused(
        "UPDATE outbox_events SET payload = '{}' WHERE aggregate_id = %s",
        [str(account_id)],
        match="outbox events cannot be changed",
    )
    refused("INSERT INTO erasure_in_progress (account) VALUES (%s)", [account_id], match="permission denied")
    refused("SELECT * FROM erasure_in_progress", match="permission denied")


@pytest.mark.django_db(databases=["default", "owner"])
def test_the_owner_cannot_blank_the_trail_outside_an_erasure_either(owner_sql):
    from django.db import DatabaseError, transaction

    owner_sql("INSERT INTO accounts (email, login) VALUES (%s, %s)", [ADDRESS, LOGIN])
    with pytest.raises(DatabaseError, match="audit events cannot be changed"):
        with transaction.atomic(using="owner"):
            owner_sql("UPDATE audit_events SET reason = 'x' WHERE action = 'account.created'")
    # Its mark, made by hand, lets through only the columns that may carry the data, in its own transaction.
    with pytest.raises(DatabaseError, match="audit events cannot be changed"):
        with transaction.atomic(using="owner"):
            owner_sql("INSERT INTO erasure_in_progress (account) VALUES (1)")
            owner_sql("UPDATE audit_events SET action = 'account.forged' WHERE action = 'account.created'")


def test_what_is_due_about_it_is_cancelled_and_its_erased_event_goes_out(sql):
    (subscription,) = sql(
        "INSERT INTO webhook_subscriptions (owner_id, url, events, secret_encrypted, secret_key_id)"
        " VALUES ('t', 'https://hooks.example.com/x', ARRAY['account.deprovisioned', 'account.erased'], '\\x00', 'k')"
        " RETURNING id"
    )[0]
    account_id = erasable(sql)
    (due,) = sql(
        "SELECT d.status FROM webhook_deliveries d JOIN outbox_events o ON o.id = d.event_id"
        " WHERE o.aggregate_id = %s AND o.event_type = 'account.deprovisioned'",
        [str(account_id)],
    )
    assert due == ("PENDING",)

    done = erase(sql, account_id)

    rows = sql(
        "SELECT o.event_type, d.status FROM webhook_deliveries d JOIN outbox_events o ON o.id = d.event_id"
        " WHERE o.aggregate_id = %s ORDER BY o.seq",
        [str(account_id)],
    )
    assert rows == [("account.deprovisioned", "CANCELLED"), ("account.erased", "PENDING")]
    assert done["deliveries_cancelled"] == 1
    assert sql(
        "SELECT outbox_event_due_to(o.id, o.event_type) FROM outbox_events o WHERE o.aggregate_id = %s AND o.event_type = 'account.deprovisioned'",
        [str(account_id)],
    ) == [(None,)]
    assert subscription


def test_a_finished_idempotent_answer_that_names_it_is_blanked(sql):
    account_id = erasable(sql)
    (client,) = sql(
        "INSERT INTO api_clients (name, key_prefix, key_hash, scopes)"
        " VALUES ('c', 'lc_x', sha256('k'), ARRAY['accounts:write'])"
        " RETURNING id"
    )[0]
    sql(
        "INSERT INTO idempotency_keys (client_id, key, request_hash, response_status, response_body, expires_at)"
        " VALUES (%s, %s, %s, 201, %s, now() + interval '1 day')",
        [client, "k" * 32, "0" * 64, f'{{"id": {account_id}, "email": "{ADDRESS}", "login": "{LOGIN}"}}'],
    )
    erase(sql, account_id)
    ((body,),) = sql("SELECT response_body::text FROM idempotency_keys WHERE client_id = %s", [client])
    assert json.loads(body) == {"id": account_id, "email": "[erased]", "login": "[erased]"}


def test_the_address_is_free_again_after_erasure(sql):
    account_id = erasable(sql)
    erase(sql, account_id)
    new = new_account(sql, "active", email=ADDRESS.lower(), login=LOGIN)
    assert sql("SELECT status::text FROM accounts WHERE id = %s", [new]) == [("active",)]


def test_no_node_assignment_for_an_erased_account(sql, refused):
    account_id = erasable(sql)
    erase(sql, account_id)
    (service,) = sql("INSERT INTO services (service, pattern) VALUES ('sync-9', '{node}') RETURNING id")[0]
    (node,) = sql(
        "INSERT INTO nodes (service, node, available, current_load, capacity)"
        " VALUES (%s, 'https://n.example.com', 1, 0, 1) RETURNING id",
        [service],
    )[0]
    refused(
        "INSERT INTO node_assignments (service, account, node, generation, client_state, keys_changed_at)"
        " VALUES (%s, %s, %s, 1, 'a', 1)",
        [service, account_id, node],
        match="is erased; it gets no node",
    )


@pytest.mark.django_db(databases=["default", "owner"])
def test_nothing_after_an_erasure_in_its_transaction_may_rewrite_the_trail(owner_sql):
    from django.db import DatabaseError, transaction

    with transaction.atomic(using="owner"):
        (account_id,) = owner_sql("INSERT INTO accounts (email, login) VALUES (%s, %s) RETURNING id", [ADDRESS, LOGIN])[
            0
        ]
        owner_sql("UPDATE accounts SET status = 'deprovisioned' WHERE id = %s", [account_id])
        owner_sql("SELECT account_erase(%s)", [account_id])
        with pytest.raises(DatabaseError, match="audit events cannot be changed"):
            with transaction.atomic(using="owner"):
                owner_sql("UPDATE audit_events SET reason = 'rewritten' WHERE resource_id = %s", [str(account_id)])


def test_a_failure_recorded_for_a_delivery_sent_while_its_account_was_erased_is_cancelled_without_its_answer(sql):
    """The delivery a sender held when the erasure ran is left to it (accounts/sql/0024_erasure.sql); the
    record of its failed attempt keeps no excerpt (a receiver may echo the address) and is not retried,
    while another account's failure is recorded as it was sent (accounts/sql/0027_...: the account found
    by its key)."""
    sql(
        "INSERT INTO webhook_subscriptions (owner_id, url, events, secret_encrypted, secret_key_id)"
        " VALUES ('t', 'https://hooks.example.com/x', ARRAY['account.deprovisioned'], '\\x00', 'k')"
    )
    account_id = erasable(sql)
    other_id = new_account(sql, "active", email="kept@example.com", login="kept")
    deprovision(sql, other_id)
    deliveries = dict(
        sql(
            "SELECT o.aggregate_id::bigint, d.id FROM webhook_deliveries d JOIN outbox_events o ON o.id = d.event_id"
            " WHERE o.aggregate_id IN (%s, %s)",
            [str(account_id), str(other_id)],
        )
    )
    claim = sql("SELECT gen_random_uuid()")[0][0]
    sql(
        "UPDATE webhook_deliveries SET claim = %s, lease_until = now() + interval '2 minutes' WHERE id = ANY(%s)",
        [claim, list(deliveries.values())],
    )

    erase(sql, account_id)
    sql(
        "UPDATE webhook_deliveries SET status = 'FAILED', attempts = attempts + 1,"
        " next_retry_at = now() + interval '5 seconds', http_status = 503,"
        " http_response_body_excerpt = %s, latency_ms = 3, first_attempt_at = now(), last_attempt_at = now(),"
        " claim = NULL, lease_until = NULL WHERE claim = %s",
        [f"no room for {ADDRESS}", claim],
    )

    recorded = dict(
        sql(
            "SELECT d.id, (d.status, d.http_response_body_excerpt) FROM webhook_deliveries d WHERE d.id = ANY(%s)",
            [list(deliveries.values())],
        )
    )
    assert recorded[deliveries[account_id]] == ("CANCELLED", None)
    assert recorded[deliveries[other_id]] == ("FAILED", f"no room for {ADDRESS}")


def test_an_empty_answer_recorded_for_an_erased_accounts_delivery_is_kept_and_an_empty_failure_still_cancelled(sql):
    """The erased-account check runs only when a record holds something to drop or cancel
    (accounts/sql/0029_delivery_record_erased_when.sql): a delivery answered with nothing keeps its empty
    excerpt as recorded, where the check would have made it NULL; a failure with nothing in its answer
    is still cancelled, never retried."""
    for url in ("https://hooks.example.com/a", "https://hooks.example.com/b"):
        sql(
            "INSERT INTO webhook_subscriptions (owner_id, url, events, secret_encrypted, secret_key_id)"
            " VALUES ('t', %s, ARRAY['account.deprovisioned'], '\\x00', 'k')",
            [url],
        )
    account_id = erasable(sql)
    delivered, failed = (
        row[0]
        for row in sql(
            "SELECT d.id FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id"
            " ORDER BY s.url"
        )
    )
    claim = sql("SELECT gen_random_uuid()")[0][0]
    sql(
        "UPDATE webhook_deliveries SET claim = %s, lease_until = now() + interval '2 minutes' WHERE id IN (%s, %s)",
        [claim, delivered, failed],
    )

    erase(sql, account_id)
    record = (
        "UPDATE webhook_deliveries SET status = %s, attempts = attempts + 1, next_retry_at = {}, http_status = %s,"
        " http_response_body_excerpt = '', latency_ms = 3, first_attempt_at = now(), last_attempt_at = now(),"
        " claim = NULL, lease_until = NULL WHERE id = %s"
    )
    sql(record.format("next_retry_at"), ["DELIVERED", 204, delivered])
    sql(record.format("now() + interval '5 seconds'"), ["FAILED", 503, failed])

    recorded = dict(
        sql(
            "SELECT id, (status, http_response_body_excerpt) FROM webhook_deliveries WHERE id IN (%s, %s)",
            [delivered, failed],
        )
    )
    assert recorded == {delivered: ("DELIVERED", ""), failed: ("CANCELLED", None)}
