"""An activation an identity provider vouched for (tokens/sql/0027_vouched_activation.sql), tried in raw
SQL as the runtime role: only an activation token is consumed so, and it activates the account as a
link would."""

import pytest

from tests.accounts.test_deprovision_rules import new_account

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("action", ["password_recovery", "deletion"])
def test_no_other_token_is_consumed_as_vouched_for(sql, refused, action):
    account_id = new_account(sql, "active")
    (token,) = sql("INSERT INTO tokens (account, action) VALUES (%s, %s) RETURNING id", [account_id, action])[0]
    refused(
        "UPDATE tokens SET consumed_at = now(), consumed_with = 'identity_provider' WHERE id = %s",
        [token],
        match="tokens_consumed_with_check",
    )


def test_an_activation_token_consumed_as_vouched_for_activates_the_account(sql):
    account_id = new_account(sql)
    sql("UPDATE tokens SET consumed_at = now(), consumed_with = 'identity_provider' WHERE account = %s", [account_id])
    assert sql("SELECT status::text, activated_at IS NOT NULL FROM accounts WHERE id = %s", [account_id]) == [
        ("active", True)
    ]
    assert sql("SELECT consumed_with FROM tokens WHERE account = %s", [account_id]) == [("identity_provider",)]
