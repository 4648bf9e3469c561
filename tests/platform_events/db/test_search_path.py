"""No function of the schema can be pointed at a fake table: each has a fixed search_path (public,
then pg_temp), so a temporary table named like ours and put first on a session's search_path is
never what a trigger reads or writes (accounts/sql/0010, tokens/sql/0010, platform_events/sql/0006)."""

import pytest

pytestmark = pytest.mark.django_db

FIXED = "search_path=public, pg_temp"


def test_every_function_of_the_schema_has_a_fixed_search_path(sql):
    """A new function without SET search_path fails here (the migrations' own, not an extension's)."""
    loose = sql(
        "SELECT p.oid::regprocedure::text FROM pg_proc p"
        " WHERE p.pronamespace = 'public'::regnamespace"
        "   AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')"
        "   AND %s <> ALL (coalesce(p.proconfig, '{}'))"
        " ORDER BY 1",
        [FIXED],
    )
    assert loose == []


def shadow(sql, table: str, *, assignments: str = "") -> None:
    """What the attack does: a temporary copy of ``table`` first on the search_path, changed at will."""
    sql(f"CREATE TEMP TABLE {table} (LIKE public.{table} INCLUDING ALL)")
    sql(f"INSERT INTO pg_temp.{table} SELECT * FROM public.{table}")
    if assignments:
        sql(f"UPDATE pg_temp.{table} SET {assignments}")
    sql("SET LOCAL search_path = pg_temp, public")


@pytest.fixture
def suspended_with_recovery(sql):
    """A suspended account holding a live recovery token (issued while it was active)."""
    (account_id,) = sql(
        "INSERT INTO accounts (email, login, status) VALUES ('s@example.com', 's1', 'active') RETURNING id"
    )[0]
    (token_id,) = sql(
        "INSERT INTO tokens (account, action) VALUES (%s, 'password_recovery') RETURNING id", [account_id]
    )[0]
    sql("UPDATE accounts SET status = 'suspended' WHERE id = %s", [account_id])
    return account_id, token_id


def test_a_fake_accounts_table_does_not_let_a_suspended_account_recover(sql, refused, suspended_with_recovery):
    account_id, token_id = suspended_with_recovery
    shadow(sql, "accounts", assignments="status = 'active'")
    refused(
        "UPDATE public.tokens SET consumed_at = now() WHERE id = %s",
        [token_id],
        match=f"tokens: account {account_id} is suspended",
    )
    assert sql("SELECT consumed_at FROM public.tokens WHERE id = %s", [token_id]) == [(None,)]


def test_a_fake_tokens_table_does_not_keep_the_old_token_live(sql):
    """A new token replaces the live one of its account and action, also with a fake tokens table first
    on the search_path: a trigger reading the fake would replace the fake's token, and the live-token
    index would refuse the new one (no recovery e-mail could be sent)."""
    (account_id,) = sql(
        "INSERT INTO accounts (email, login, status) VALUES ('t@example.com', 't1', 'active') RETURNING id"
    )[0]
    sql("INSERT INTO tokens (account, action) VALUES (%s, 'password_recovery')", [account_id])
    shadow(sql, "tokens")
    sql("INSERT INTO public.tokens (account, action) VALUES (%s, 'password_recovery')", [account_id])
    live = sql(
        "SELECT count(*) FROM public.tokens WHERE account = %s AND consumed_at IS NULL AND superseded_at IS NULL",
        [account_id],
    )
    assert live == [(1,)]
