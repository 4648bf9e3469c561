"""SCIM Users as the database keeps them (accounts/sql/0026_scim_users.sql), tried in raw SQL as the
runtime role, as psql would: what a userName and an externalId may be, whose a User is, its trail,
and what an erasure and a direct change of address do."""

import json

import pytest

from tests.accounts.test_deprovision_rules import deprovision, new_account
from tests.accounts.test_erasure_rules import erase

pytestmark = pytest.mark.django_db


@pytest.fixture
def client_id(sql):
    return client(sql, "okta", ["scim"])


def client(sql, name, scopes, revoked=False) -> int:
    (client_id,) = sql(
        "INSERT INTO api_clients (name, key_prefix, key_hash, scopes, revoked_at, revoked_reason)"
        " VALUES (%s, %s, sha256(%s::bytea), %s, CASE WHEN %s THEN now() END, CASE WHEN %s THEN 'left' END)"
        " RETURNING id",
        [name, f"lc_{name}"[:16], name, scopes, revoked, revoked],
    )[0]
    return client_id


def link(sql, account_id, client_id, user_name="ann@example.com", external_id=None):
    sql(
        "INSERT INTO scim_users (account, client, user_name, external_id) VALUES (%s, %s, %s, %s)",
        [account_id, client_id, user_name, external_id],
    )


def trail(sql, account_id) -> list[tuple]:
    return [
        (action, json.loads(before) if before else None, json.loads(after) if after else None)
        for action, before, after in sql(
            "SELECT action, diff_before::text, diff_after::text FROM audit_events"
            " WHERE resource_type = 'account' AND resource_id = %s AND action LIKE 'account.scim%%' ORDER BY occurred_at",
            [str(account_id)],
        )
    ]


@pytest.mark.parametrize(
    ("user_name", "external_id", "match"),
    [
        ("", None, "userName must not be empty"),
        (" ann", None, "must not start or end with spaces"),
        ("a" * 255, None, "at most 254 characters"),
        ("ann\nroot", None, "control characters"),
        ("ann", "", "externalId must not be empty"),
        ("ann", "x" * 255, "externalId must be at most 254"),
        ("ann", "a\tb", "externalId must not hold control characters"),
    ],
)
def test_a_user_name_or_external_id_the_rules_refuse(sql, refused, client_id, user_name, external_id, match):
    account_id = new_account(sql)
    refused(
        "INSERT INTO scim_users (account, client, user_name, external_id) VALUES (%s, %s, %s, %s)",
        [account_id, client_id, user_name, external_id],
        match=match,
    )
    assert sql("SELECT count(*) FROM scim_users") == [(0,)]


def test_a_user_name_is_unique_ignoring_case_across_clients(sql, refused, client_id):
    other = client(sql, "entra", ["scim"])
    link(sql, new_account(sql), client_id, "Ann@Example.com")
    refused(
        "INSERT INTO scim_users (account, client, user_name) VALUES (%s, %s, 'ann@example.COM')",
        [new_account(sql, email="b@example.com", login="b"), other],
        match="scim_users_user_name_key",
    )


@pytest.mark.parametrize(("scopes", "revoked"), [(["accounts:read", "accounts:write"], False), (["scim"], True)])
def test_only_a_live_client_holding_the_scope_scim_has_users(sql, refused, scopes, revoked):
    holder = client(sql, "reader", scopes, revoked=revoked)
    refused(
        "INSERT INTO scim_users (account, client, user_name) VALUES (%s, %s, 'ann')",
        [new_account(sql), holder],
        match="does not hold the scope scim",
    )


def test_a_deprovisioned_account_cannot_become_a_user(sql, refused, client_id):
    account_id = new_account(sql, "active")
    deprovision(sql, account_id)
    refused(
        "INSERT INTO scim_users (account, client, user_name) VALUES (%s, %s, 'ann')",
        [account_id, client_id],
        match="deprovisioned or erased",
    )


@pytest.mark.parametrize(
    "change", ["account = %(other_account)s", "client = %(other_client)s", "created_at = now() - interval '1 day'"]
)
def test_a_user_stays_its_accounts_and_its_clients(sql, refused, client_id, change):
    account_id = new_account(sql)
    link(sql, account_id, client_id)
    values = {
        "other_account": new_account(sql, email="b@example.com", login="b"),
        "other_client": client(sql, "entra", ["scim"]),
        "account": account_id,
    }
    refused(f"UPDATE scim_users SET {change} WHERE account = %(account)s", values, match="stays its account")


def test_the_trail_has_the_link_its_changes_and_its_end_but_never_an_external_id(sql, client_id):
    account_id = new_account(sql)
    link(sql, account_id, client_id, "ann@example.com", external_id="00u-secret-7")
    sql(
        "UPDATE scim_users SET user_name = 'ann.lee@example.com', external_id = '00u-8' WHERE account = %s",
        [account_id],
    )
    sql("UPDATE scim_users SET external_id = NULL WHERE account = %s", [account_id])
    # The sign-up deleted (the cleanup's rule for one never activated) takes its User along.
    sql("DELETE FROM tokens WHERE account = %s", [account_id])
    sql("DELETE FROM accounts WHERE id = %s", [account_id])
    assert trail(sql, account_id) == [
        (
            "account.scim_linked",
            None,
            {"scim_client": client_id, "scim_user_name": "ann@example.com", "scim_external_id": "set"},
        ),
        (
            "account.scim_changed",
            {"scim_user_name": "ann@example.com", "scim_external_id": "set"},
            {"scim_user_name": "ann.lee@example.com", "scim_external_id": "changed"},
        ),
        ("account.scim_changed", {"scim_external_id": "set"}, {"scim_external_id": None}),
        ("account.scim_unlinked", {"scim_client": client_id, "scim_user_name": "ann.lee@example.com"}, None),
    ]
    assert sql("SELECT count(*) FROM audit_events WHERE strpos(diff_before::text || diff_after::text, '00u') > 0") == [
        (0,)
    ]


def test_a_user_is_never_deleted_by_itself_so_never_moved_to_another_client(sql, refused, client_id):
    account_id = new_account(sql)
    link(sql, account_id, client_id)
    other = client(sql, "entra", ["scim"])
    refused(
        "DELETE FROM scim_users WHERE account = %(id)s;"
        " INSERT INTO scim_users (account, client, user_name) VALUES (%(id)s, %(other)s, 'ann')",
        {"id": account_id, "other": other},
        match="ends with its account",
    )
    assert sql("SELECT client FROM scim_users WHERE account = %s", [account_id]) == [(client_id,)]


def test_a_user_its_provider_deleted_gets_no_restore_token_until_reprovisioned(sql, refused, client_id):
    account_id = new_account(sql, "active")
    link(sql, account_id, client_id)
    deprovision(sql, account_id)
    sql("UPDATE scim_users SET deleted_at = now() WHERE account = %s", [account_id])
    refused(
        "INSERT INTO tokens (account, action) VALUES (%s, 'restore')",
        [account_id],
        match="deleted by its identity provider",
    )
    sql("UPDATE accounts SET status = 'provisioned' WHERE id = %s", [account_id])  # staff reprovision it
    assert sql("SELECT deleted_at FROM scim_users WHERE account = %s", [account_id]) == [(None,)]


def test_a_user_staff_deprovisioned_keeps_its_restore_token(sql, client_id):
    account_id = new_account(sql, "active")
    link(sql, account_id, client_id)
    deprovision(sql, account_id)
    sql("INSERT INTO tokens (account, action) VALUES (%s, 'restore')", [account_id])


def test_updated_at_is_the_databases(sql, client_id):
    account_id = new_account(sql)
    link(sql, account_id, client_id)
    sql("UPDATE scim_users SET updated_at = '2000-01-01', user_name = 'ann2' WHERE account = %s", [account_id])
    assert sql("SELECT updated_at = now() FROM scim_users WHERE account = %s", [account_id]) == [(True,)]


def test_an_erasure_deletes_the_user_and_blanks_its_user_name_everywhere(sql, client_id):
    account_id = new_account(sql, "active", email="ann@example.com", login="ann")
    link(sql, account_id, client_id, "Ann.Lee@Corp.Example", external_id="00u-7")
    sql("UPDATE scim_users SET user_name = 'ann.lee2@corp.example' WHERE account = %s", [account_id])
    deprovision(sql, account_id, reason="Ann.Lee@corp.example left")
    erase(sql, account_id)
    assert sql("SELECT count(*) FROM scim_users") == [(0,)]
    for table in ("audit_events", "outbox_events"):
        (count,) = sql(
            f"SELECT count(*) FROM {table} t WHERE strpos(lower(t::text), 'ann.lee') > 0 OR strpos(t::text, '00u-7') > 0"
        )[0]
        assert count == 0, table
    # The erasure's row stands for the User's end: no account.scim_unlinked row after it.
    assert [action for action, *_ in trail(sql, account_id)] == ["account.scim_linked", "account.scim_changed"]


def test_a_deleted_sign_up_takes_its_user_with_it(sql, client_id):
    account_id = new_account(sql)
    link(sql, account_id, client_id)
    sql("DELETE FROM tokens WHERE account = %s", [account_id])
    sql("DELETE FROM accounts WHERE id = %s", [account_id])
    assert sql("SELECT count(*) FROM scim_users") == [(0,)]


def live(sql, account_id) -> list[str]:
    return [
        action
        for (action,) in sql(
            "SELECT action::text FROM tokens WHERE account = %s AND consumed_at IS NULL AND superseded_at IS NULL"
            " ORDER BY action",
            [account_id],
        )
    ]


def test_a_direct_change_of_address_stops_the_links_mailed_to_the_old_one(sql):
    account_id = new_account(sql, "active")
    sql("INSERT INTO tokens (account, action) VALUES (%s, 'password_recovery')", [account_id])
    sql("INSERT INTO tokens (account, action) VALUES (%s, 'deletion')", [account_id])
    assert live(sql, account_id) == ["deletion", "password_recovery"]
    sql("UPDATE accounts SET email = 'JANE@example.com' WHERE id = %s", [account_id])  # the same address
    assert live(sql, account_id) == ["deletion", "password_recovery"]
    sql("UPDATE accounts SET email = 'jane.new@example.com' WHERE id = %s", [account_id])
    assert live(sql, account_id) == []
