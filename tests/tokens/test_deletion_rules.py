"""A person's deletion token as the database keeps it (tokens/sql/0021_deletion.sql), tried in raw SQL
as the runtime role: issued only for an active account; consumed, it deprovisions the account and
issues the restore token in the same transaction."""

import pytest

from accounts.models import AccountStatus
from lifecycle.demo.factories import AccountFactory
from tests.accounts.test_deprovision_rules import new_account
from tokens.errors import WrongAccountState
from tokens.models import Token, TokenAction
from tokens.services import token_delete_by_password

pytestmark = pytest.mark.django_db


def deletion_token(sql, account_id) -> int:
    (token_id,) = sql("INSERT INTO tokens (account, action) VALUES (%s, 'deletion') RETURNING id", [account_id])[0]
    return token_id


def test_consuming_a_deletion_token_deprovisions_the_account_and_issues_its_restore_token(sql):
    account_id = new_account(sql, "active")
    token_id = deletion_token(sql, account_id)

    sql("UPDATE tokens SET consumed_at = now(), consumed_with = 'link' WHERE id = %s", [token_id])

    assert sql("SELECT status::text FROM accounts WHERE id = %s", [account_id]) == [("deprovisioned",)]
    live = sql(
        "SELECT action::text, created_at = (SELECT deprovisioned_at FROM accounts WHERE id = %s) FROM tokens"
        " WHERE account = %s AND consumed_at IS NULL AND superseded_at IS NULL",
        [account_id, account_id],
    )
    assert live == [("restore", True)]


@pytest.mark.parametrize("status", ["provisioned", "suspended"])
def test_a_deletion_token_is_issued_only_for_an_active_account(sql, refused, status):
    account_id = new_account(sql, status)
    refused(
        "INSERT INTO tokens (account, action) VALUES (%s, 'deletion')",
        [account_id],
        match="is not active; a deletion token is for an active account",
    )


def test_a_suspended_accounts_deletion_token_is_refused_and_nothing_changes(sql, refused):
    account_id = new_account(sql, "active")
    token_id = deletion_token(sql, account_id)
    sql("UPDATE accounts SET status = 'suspended' WHERE id = %s", [account_id])
    refused(
        "UPDATE tokens SET consumed_at = now(), consumed_with = 'link' WHERE id = %s", [token_id], match="is suspended"
    )
    assert sql("SELECT status::text FROM accounts WHERE id = %s", [account_id]) == [("suspended",)]


# Confirmed by the password (tokens/sql/0024_deletion_by_password.sql)


def test_only_a_deletion_is_consumed_with_the_password(sql, refused):
    account = AccountFactory(active=True)
    (recovery,) = sql(
        "INSERT INTO tokens (account, action) VALUES (%s, 'password_recovery') RETURNING id", [account.pk]
    )[0]
    refused(
        "UPDATE tokens SET consumed_at = now(), consumed_with = 'password' WHERE id = %s",
        [recovery],
        match="tokens_consumed_with_check",
    )
    (deletion,) = sql("INSERT INTO tokens (account, action) VALUES (%s, 'deletion') RETURNING id", [account.pk])[0]
    sql("UPDATE tokens SET consumed_at = now(), consumed_with = 'password' WHERE id = %s", [deletion])
    assert sql("SELECT status::text FROM accounts WHERE id = %s", [account.pk]) == [("deprovisioned",)]


def test_a_deletion_by_password_of_an_account_no_longer_active_is_refused_and_changes_nothing():
    account = AccountFactory(suspended=True)
    with pytest.raises(WrongAccountState):
        token_delete_by_password(account=account)
    account.refresh_from_db()
    assert account.status == AccountStatus.SUSPENDED
    assert not Token.objects.filter(account=account, action=TokenAction.DELETION).exists()
