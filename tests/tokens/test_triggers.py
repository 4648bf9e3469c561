"""Token rules as the database keeps them, exercised with raw SQL."""

import pytest

from tests.support import expire
from tokens.selectors import live_token

pytestmark = pytest.mark.django_db


@pytest.fixture
def account_id(sql):
    return sql("INSERT INTO accounts (email, login) VALUES ('user@example.com', 'user123') RETURNING id")[0][0]


def secret_default(sql) -> str:
    """The DEFAULT expression of tokens.secret, as the database holds it."""
    return sql(
        "SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d JOIN pg_attribute a ON (a.attrelid, a.attnum) = (d.adrelid, d.adnum)"
        " WHERE d.adrelid = 'tokens'::regclass AND a.attname = 'secret'"
    )[0][0]


class TestRandomness:
    """Secrets and codes from a CSPRNG in core PostgreSQL: not pgcrypto's gen_random_bytes (not
    available everywhere), nor a code from random(), which is no CSPRNG and may print '#####'."""

    def test_every_code_is_five_digits(self, sql):
        (bad,) = sql("SELECT count(*) FROM generate_series(1, 100000) WHERE lifecycle_random_code() !~ '^[0-9]{5}$'")[0]
        assert bad == 0

    def test_codes_are_uniform_over_the_first_digit(self, sql):
        """Chi-square over 10 buckets of 100,000 codes; 60 is far beyond p = 1e-9 for 9 degrees of freedom."""
        counts = dict(
            sql(
                "SELECT left(c, 1), count(*) FROM (SELECT lifecycle_random_code() c FROM generate_series(1, 100000)) s GROUP BY 1"
            )
        )
        assert sorted(counts) == list("0123456789")
        chi_square = sum((n - 10000) ** 2 / 10000 for n in counts.values())
        assert chi_square < 60

    def test_codes_do_not_come_from_random(self, sql):
        """random() repeats after setseed(); a CSPRNG does not."""
        draw = "SELECT setseed(0.42), array_agg(lifecycle_random_code()) FROM generate_series(1, 5)"
        assert sql(draw)[0][1] != sql(draw)[0][1]

    def test_secrets_and_codes_need_no_extension(self, sql):
        """They come from core gen_random_uuid(), not pgcrypto; the only extension is the account
        search's pg_trgm (accounts/sql/0012_substring_search.sql)."""
        assert sql("SELECT extname FROM pg_extension ORDER BY 1") == [("pg_trgm",), ("plpgsql",)]
        assert "random()" not in secret_default(sql)

    def test_secrets_are_32_bytes_and_unique(self, sql):
        (count, distinct, length) = sql(
            f"SELECT count(*), count(DISTINCT s), min(length(s)) FROM (SELECT {secret_default(sql)} s FROM generate_series(1, 10000)) x"
        )[0]
        assert (count, distinct, length) == (10000, 10000, 32)

    def test_secret_bytes_are_uniform(self, sql):
        """Chi-square over 256 byte values of 320,000 bytes; raw UUID bytes (fixed version/variant bits) would blow it up."""
        counts = [
            n
            for (n,) in sql(
                f"SELECT count(*) FROM (SELECT {secret_default(sql)} s FROM generate_series(1, 10000)) x,"
                " generate_series(0, 31) i GROUP BY get_byte(s, i)"
            )
        ]
        expected = 320000 / 256
        chi_square = sum((n - expected) ** 2 / expected for n in counts) + expected * (256 - len(counts))
        assert chi_square < 420  # 255 degrees of freedom: p < 1e-9 beyond about 420


class TestConsumption:
    def test_a_token_is_single_use(self, sql, refused, account_id):
        token = live_token(account=account_id).pk
        sql("UPDATE tokens SET consumed_at = now() WHERE id = %s", [token])
        refused(
            "UPDATE tokens SET consumed_at = now() WHERE id = %s",
            [token],
            match=f"tokens: token {token} has already been used",
        )

    def test_a_consumed_token_cannot_be_unconsumed(self, sql, refused, account_id):
        token = live_token(account=account_id).pk
        sql("UPDATE tokens SET consumed_at = now() WHERE id = %s", [token])
        refused(
            "UPDATE tokens SET consumed_at = NULL WHERE id = %s",
            [token],
            match="tokens: token .* has already been used",
        )

    def test_an_expired_token_cannot_be_consumed(self, sql, refused, account_id):
        token = live_token(account=account_id)
        expire(token)
        token = token.pk
        refused("UPDATE tokens SET consumed_at = now() WHERE id = %s", [token], match="tokens: token .* has expired")
        assert sql("SELECT status::text FROM accounts WHERE id = %s", [account_id]) == [("provisioned",)]

    def test_tokens_expire_after_15_minutes_by_default(self, sql, account_id):
        assert (
            sql("SELECT expires_at - created_at FROM tokens WHERE account = %s", [account_id])[0][0].total_seconds()
            == 900
        )

    def test_a_token_of_a_suspended_account_cannot_be_consumed(self, sql, refused, account_id):
        token = live_token(account=account_id).pk
        sql("UPDATE accounts SET status = 'suspended' WHERE id = %s", [account_id])
        refused(
            "UPDATE tokens SET consumed_at = now() WHERE id = %s",
            [token],
            match=f"tokens: account {account_id} is suspended",
        )

    def test_after_too_many_wrong_codes_a_token_cannot_be_consumed_by_code(self, sql, refused, account_id):
        token = live_token(account=account_id).pk
        sql("UPDATE tokens SET failed_attempts = tokens_max_code_attempts() WHERE id = %s", [token])
        refused(
            "UPDATE tokens SET consumed_at = now(), consumed_with = 'code' WHERE id = %s",
            [token],
            match="tokens: the code of token .* no longer works after too many wrong codes; its link still does",
        )

    @pytest.mark.parametrize("said", ["consumed_with = 'link', ", ""], ids=["by link", "unsaid"])
    def test_after_too_many_wrong_codes_a_token_can_still_be_consumed_by_link(self, sql, account_id, said):
        token = live_token(account=account_id).pk
        sql("UPDATE tokens SET failed_attempts = tokens_max_code_attempts() WHERE id = %s", [token])
        sql(f"UPDATE tokens SET {said}consumed_at = now() WHERE id = %s", [token])
        assert sql("SELECT status FROM accounts WHERE id = %s", [account_id]) == [("active",)]

    def test_how_a_token_was_consumed_cannot_be_said_apart_from_the_consumption_or_changed(
        self, refused, sql, account_id
    ):
        token = live_token(account=account_id).pk
        refused("UPDATE tokens SET consumed_with = 'code' WHERE id = %s", [token], match="said when it is consumed")
        refused(
            "UPDATE tokens SET consumed_at = now(), consumed_with = 'mail' WHERE id = %s",
            [token],
            match="tokens_consumed_with_check",
        )
        sql("UPDATE tokens SET consumed_at = now(), consumed_with = 'link' WHERE id = %s", [token])
        refused("UPDATE tokens SET consumed_with = 'code' WHERE id = %s", [token], match="said when it is consumed")

    def test_a_recovery_token_needs_an_active_account(self, sql, refused, account_id):
        token = sql("INSERT INTO tokens (account, action) VALUES (%s, 'password_recovery') RETURNING id", [account_id])[
            0
        ][0]
        refused(
            "UPDATE tokens SET consumed_at = now() WHERE id = %s",
            [token],
            match=f"tokens: account {account_id} is not active",
        )

    def test_consuming_a_recovery_token_leaves_the_account_as_it_was(self, sql, account_id):
        sql("UPDATE tokens SET consumed_at = now() WHERE account = %s", [account_id])
        token = sql("INSERT INTO tokens (account, action) VALUES (%s, 'password_recovery') RETURNING id", [account_id])[
            0
        ][0]
        sql("UPDATE tokens SET consumed_at = now() WHERE id = %s", [token])
        assert sql("SELECT status::text FROM accounts WHERE id = %s", [account_id]) == [("active",)]


class TestSuperseding:
    def test_a_new_token_makes_the_older_unconsumed_one_unusable(self, sql, refused, account_id):
        old = live_token(account=account_id).pk
        new = sql("INSERT INTO tokens (account, action) VALUES (%s, 'activation') RETURNING id", [account_id])[0][0]
        refused(
            "UPDATE tokens SET consumed_at = now() WHERE id = %s",
            [old],
            match=f"tokens: token {old} was replaced by a newer one",
        )
        sql("UPDATE tokens SET consumed_at = now() WHERE id = %s", [new])
        assert sql("SELECT status::text FROM accounts WHERE id = %s", [account_id]) == [("active",)]

    def test_a_token_of_another_action_is_left_alone(self, sql, account_id):
        sql("UPDATE tokens SET consumed_at = now() WHERE account = %s", [account_id])
        sql("INSERT INTO tokens (account, action) VALUES (%s, 'password_recovery')", [account_id])
        sql("INSERT INTO tokens (account, action) VALUES (%s, 'password_recovery')", [account_id])
        assert sql(
            "SELECT action::text, consumed_at IS NOT NULL, superseded_at IS NOT NULL FROM tokens"
            " WHERE account = %s ORDER BY id",
            [account_id],
        ) == [
            ("activation", True, False),  # used, and not touched by the recovery tokens
            ("password_recovery", False, True),
            ("password_recovery", False, False),
        ]


def test_an_account_insert_that_fails_leaves_no_token(sql, refused):
    sql("INSERT INTO accounts (email, login, status) VALUES ('owner@example.com', 'owner', 'active')")
    refused("INSERT INTO accounts (email, login) VALUES ('x@example.com', 'OWNER')", match="accounts_login_key")
    assert sql("SELECT count(*) FROM tokens") == [(0,)]


def test_deleting_an_account_deletes_its_tokens(sql, account_id):
    sql("DELETE FROM accounts WHERE id = %s", [account_id])
    assert sql("SELECT count(*) FROM tokens") == [(0,)]
