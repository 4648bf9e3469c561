"""An account's trigger-kept history cannot be rewritten, and deleting an account is audited
(accounts/sql/0009_history_rules.sql), tried in raw SQL as the runtime role, as psql would."""

import json

import psycopg
import pytest
from django.db import transaction

from lifecycle.demo.factories import AccountFactory
from platform_events.db.history import history_rewrite
from tests.support import connect, connect_as_owner

pytestmark = pytest.mark.django_db

KEPT = ["created_at", "status_changed_at", "activated_at", "suspended_at", "unsuspended_at"]


def row(sql, account_id):
    (values,) = sql(f"SELECT {', '.join(KEPT)} FROM accounts WHERE id = %s", [account_id])
    return dict(zip(KEPT, values, strict=True))


def audit_actions(sql, resource_type, resource_id):
    return [
        action
        for (action,) in sql(
            "SELECT action FROM audit_events WHERE resource_type = %s AND resource_id = %s ORDER BY occurred_at",
            [resource_type, str(resource_id)],
        )
    ]


@pytest.fixture
def suspended_id(sql):
    """An account activated, suspended and unsuspended, then suspended again: every timestamp is set."""
    account_id = sql(
        "INSERT INTO accounts (email, login, status) VALUES ('a@example.com', 'a1', 'active') RETURNING id"
    )
    account_id = account_id[0][0]
    for status in ["suspended", "active", "suspended"]:
        sql("UPDATE accounts SET status = %s WHERE id = %s", [status, account_id])
    return account_id


@pytest.mark.parametrize(
    "assignment",
    [
        "activated_at = NULL",
        "created_at = now() - interval '10 years'",
        "status_changed_at = now() - interval '1 day'",
        "suspended_at = NULL",
        "unsuspended_at = now()",
        # Setting one alongside a status change is refused too: the status trigger sets them.
        "status = 'active', activated_at = now() - interval '1 year'",
    ],
)
def test_trigger_kept_timestamps_cannot_be_set_by_hand(sql, refused, suspended_id, assignment):
    """Each is refused, the row and the trail unchanged: accepted, it would rewrite history unaudited."""
    before, trail = row(sql, suspended_id), audit_actions(sql, "account", suspended_id)
    refused(
        f"UPDATE accounts SET {assignment} WHERE id = %s", [suspended_id], match="accounts: .* cannot be set by hand"
    )
    assert row(sql, suspended_id) == before
    assert audit_actions(sql, "account", suspended_id) == trail


def test_the_refusal_names_the_fields(sql, refused, suspended_id):
    refused(
        "UPDATE accounts SET created_at = now() - interval '1 day', activated_at = NULL WHERE id = %s",
        [suspended_id],
        match=rf"accounts: activated_at, created_at of account {suspended_id} cannot be set by hand",
    )


def test_created_at_may_be_given_at_insert(sql):
    """Imports and demo data keep their sign-up date."""
    (account_id,) = sql(
        "INSERT INTO accounts (email, login, created_at) VALUES ('old@example.com', 'old', '2020-01-01T00:00:00Z')"
        " RETURNING id"
    )[0]
    assert row(sql, account_id)["created_at"].year == 2020


@pytest.mark.parametrize(
    ("status", "given"),
    [
        ("active", "activated_at = '1999-01-01T00:00:00Z'"),
        ("suspended", "suspended_at = '1999-01-01T00:00:00Z'"),
        ("active", "status_changed_at = '1999-01-01T00:00:00Z'"),
        ("active", "unsuspended_at = now()"),
        # A provisioned account claiming its address by an activated_at it never earned.
        ("provisioned", "activated_at = now()"),
    ],
)
def test_status_timestamps_cannot_be_given_at_insert(sql, refused, status, given):
    """An insert cannot give a status timestamp either (an account inserted active with activated_at =
    '1999-01-01' would carry a history it never had)."""
    column, value = given.split(" = ")
    refused(
        f"INSERT INTO accounts (email, login, status, {column}) VALUES ('f@example.com', 'f1', %s, {value})",
        [status],
        match=f"accounts: {column} of a new account cannot be given",
    )
    assert sql("SELECT count(*) FROM accounts WHERE login = 'f1'") == [(0,)]


def test_an_insert_gets_its_status_timestamps_from_the_database(sql):
    (account_id,) = sql(
        "INSERT INTO accounts (email, login, status, status_changed_at) VALUES ('n@example.com', 'n1', 'active', now())"
        " RETURNING id"
    )[0]
    (now,) = sql("SELECT now()")[0]
    kept = row(sql, account_id)
    assert (kept["status_changed_at"], kept["activated_at"], kept["suspended_at"]) == (now, now, None)


def test_with_the_owners_key_an_insert_may_give_them(sql):
    """Demo data and benches age accounts at insert; the account.created row shows what was given."""
    with transaction.atomic(), history_rewrite():
        (account_id,) = sql(
            "INSERT INTO accounts (email, login, status, activated_at) VALUES ('k@example.com', 'k1', 'active',"
            " '2020-01-01T00:00:00Z') RETURNING id"
        )[0]
    assert row(sql, account_id)["activated_at"].year == 2020


def test_an_account_id_cannot_change(sql, refused, suspended_id):
    """An id is fixed: two accounts swapping ids in one transaction (the tokens' foreign key is
    deferred) would swap their tokens too, unaudited."""
    refused(
        "UPDATE accounts SET id = -id WHERE id = %s",
        [suspended_id],
        match=f"accounts: id of account {suspended_id} cannot be set by hand",
    )


def test_swapping_two_accounts_ids_is_refused(sql, refused, suspended_id):
    (other,) = sql("INSERT INTO accounts (email, login) VALUES ('o@example.com', 'o1') RETURNING id")[0]
    swap = "UPDATE accounts SET id = CASE id WHEN %(a)s THEN %(b)s ELSE %(a)s END WHERE id IN (%(a)s, %(b)s)"
    refused(f"SET CONSTRAINTS ALL DEFERRED; {swap}", {"a": suspended_id, "b": other}, match="id of account")
    assert sql("SELECT login FROM accounts WHERE id = %s", [other]) == [("o1",)]


def test_the_status_triggers_still_keep_the_timestamps(sql, suspended_id):
    sql("UPDATE accounts SET status = 'active' WHERE id = %s", [suspended_id])
    after = row(sql, suspended_id)
    assert after["suspended_at"] is None and after["unsuspended_at"] == after["status_changed_at"]


def test_an_unchanged_value_in_the_statement_is_not_a_rewrite(sql, suspended_id):
    """Django's save() writes every column: the values it read back are accepted."""
    sql("UPDATE accounts SET created_at = created_at, activated_at = activated_at WHERE id = %s", [suspended_id])


def test_with_the_owners_key_history_may_be_rewritten_and_the_trail_says_so(sql, suspended_id):
    with transaction.atomic(), history_rewrite():
        sql("UPDATE accounts SET created_at = '2020-01-01T00:00:00Z' WHERE id = %s", [suspended_id])
    assert row(sql, suspended_id)["created_at"].year == 2020
    (before, after, db_user) = sql(
        "SELECT diff_before, diff_after, db_user FROM audit_events WHERE action = 'account.history_rewritten'"
        " AND resource_id = %s",
        [str(suspended_id)],
    )[0]
    before, after = json.loads(before), json.loads(after)
    assert list(before) == list(after) == ["created_at"] and after["created_at"].startswith("2020-01-01")
    assert db_user == "lifecycle_app"


def test_the_key_is_forgotten_when_its_block_ends(sql, refused, suspended_id):
    with transaction.atomic():
        with history_rewrite():
            sql("UPDATE accounts SET created_at = now() - interval '1 day' WHERE id = %s", [suspended_id])
        refused(
            "UPDATE accounts SET created_at = now() - interval '2 days' WHERE id = %s",
            [suspended_id],
            match="cannot be set by hand",
        )


def test_the_runtime_role_cannot_read_the_key_nor_guess_it():
    """The door is the owner's: the runtime role has no privilege on the key, and a made-up one opens nothing."""
    with connect() as runtime:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            runtime.execute("SELECT key FROM history_rewrite_key")
        runtime.rollback()
        runtime.execute("SET lifecycle.rewrite_history = 'on'")
        runtime.execute("INSERT INTO accounts (email, login) VALUES ('guess@example.com', 'guess')")
        with pytest.raises(psycopg.Error, match="cannot be set by hand"):
            runtime.execute("UPDATE accounts SET created_at = now() - interval '1 day' WHERE login = 'guess'")


@pytest.mark.django_db(transaction=True)
def test_deleting_an_account_in_psql_is_audited_with_its_tokens(psql):
    """A DELETE typed in psql leaves an audit row for the account and one for each of its tokens."""
    account = AccountFactory(login="gone", email="gone@example.com")
    (token_id,) = psql.execute("SELECT id FROM tokens WHERE account = %s", [account.pk]).fetchone()
    psql.execute("DELETE FROM accounts WHERE id = %s", [account.pk])
    with connect_as_owner() as owner:
        rows = owner.execute(
            "SELECT action, resource_id, actor_type, db_user, diff_before FROM audit_events"
            " WHERE action IN ('account.deleted', 'token.deleted') ORDER BY action"
        ).fetchall()
    assert [(action, resource, actor, db_user) for action, resource, actor, db_user, _ in rows] == [
        ("account.deleted", str(account.pk), "SYSTEM", "lifecycle_app"),
        ("token.deleted", str(token_id), "SYSTEM", "lifecycle_app"),
    ]
    assert json.loads(rows[0][4]) == {"email": "gone@example.com", "login": "gone", "status": "provisioned"}


def test_the_key_never_shows_in_another_sessions_view_of_the_query(sql, suspended_id):
    """The key is bound server-side: bound client-side, it would stand in pg_stat_activity for any
    runtime session."""
    from platform_events.db.history import history_rewrite_key

    with transaction.atomic(), history_rewrite():
        with connect(autocommit=True) as other:
            seen = other.execute("SELECT string_agg(query, ' ') FROM pg_stat_activity").fetchone()[0]
    assert history_rewrite_key() not in seen
