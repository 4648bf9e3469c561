"""The lifecycle rules as the database keeps them, exercised with raw SQL as a psql user would."""

import re

import psycopg
import pytest
from django.core.mail.message import sanitize_address

from tests.support import BAD_EMAILS, BAD_LOGINS, connect, connect_as_owner

pytestmark = pytest.mark.django_db


def insert_account(sql, email="user@example.com", login="user123", status=None):
    if status is None:
        return sql("INSERT INTO accounts (email, login) VALUES (%s, %s) RETURNING id", [email, login])[0][0]
    return sql("INSERT INTO accounts (email, login, status) VALUES (%s, %s, %s) RETURNING id", [email, login, status])[
        0
    ][0]


def account_row(sql, account_id):
    (row,) = sql(
        "SELECT status::text, status_changed_at, activated_at, suspended_at, unsuspended_at FROM accounts WHERE id = %s",
        [account_id],
    )
    return dict(
        zip(["status", "status_changed_at", "activated_at", "suspended_at", "unsuspended_at"], row, strict=True)
    )


class TestSeedWalkthrough:
    """The lifecycle walked through step by step in raw SQL, as a person types it in psql."""

    def test_insert_creates_a_provisioned_account_and_its_activation_token(self, sql):
        account_id = insert_account(sql)
        assert account_row(sql, account_id)["status"] == "provisioned"
        assert sql("SELECT action::text, consumed_at FROM tokens WHERE account = %s", [account_id]) == [
            ("activation", None)
        ]

    def test_consuming_the_activation_token_activates_the_account(self, sql):
        account_id = insert_account(sql)
        sql("UPDATE tokens SET consumed_at = now() WHERE account = %s AND action = 'activation'", [account_id])
        row = account_row(sql, account_id)
        assert row["status"] == "active"
        assert row["activated_at"] is not None

    def test_suspending_sets_suspended_at_and_clears_unsuspended_at(self, sql):
        account_id = insert_account(sql)
        sql("UPDATE tokens SET consumed_at = now() WHERE account = %s", [account_id])
        sql("UPDATE accounts SET status = 'suspended' WHERE id = %s", [account_id])
        sql("UPDATE accounts SET status = 'active' WHERE id = %s", [account_id])
        sql("UPDATE accounts SET status = 'suspended' WHERE id = %s", [account_id])
        row = account_row(sql, account_id)
        assert row["status"] == "suspended"
        assert row["suspended_at"] is not None
        assert row["unsuspended_at"] is None

    def test_unsuspending_sets_unsuspended_at_and_clears_suspended_at(self, sql):
        account_id = insert_account(sql)
        sql("UPDATE tokens SET consumed_at = now() WHERE account = %s", [account_id])
        sql("UPDATE accounts SET status = 'suspended' WHERE id = %s", [account_id])
        sql("UPDATE accounts SET status = 'active' WHERE id = %s", [account_id])
        row = account_row(sql, account_id)
        assert row["status"] == "active"
        assert row["unsuspended_at"] is not None
        assert row["suspended_at"] is None
        assert row["activated_at"] is not None


@pytest.mark.django_db(transaction=True)
def test_walkthrough_listen_session_is_notified_of_a_token_insert(psql):
    """LISTEN token_insert in one session; a token inserted in another arrives as a notification."""
    account_id = psql.execute(
        "INSERT INTO accounts (email, login) VALUES ('user@example.com', 'user123') RETURNING id"
    ).fetchone()[0]
    with connect(autocommit=True) as listener:
        listener.execute("LISTEN token_insert")
        psql.execute("INSERT INTO tokens (account, action) VALUES (%s, 'activation')", [account_id])
        notifications = list(listener.notifies(timeout=5, stop_after=1))
    assert [(n.channel, n.payload) for n in notifications] == [("token_insert", "")]


def test_unsuspending_a_never_activated_account_returns_it_to_provisioned(sql):
    account_id = insert_account(sql)
    sql("UPDATE accounts SET status = 'suspended' WHERE id = %s", [account_id])
    sql("UPDATE accounts SET status = 'active' WHERE id = %s", [account_id])
    assert account_row(sql, account_id)["status"] == "provisioned"


class TestInsertTimestamps:
    """An account inserted in a later state gets that state's timestamps from the triggers: without
    activated_at, an account inserted active would fall back to provisioned when unsuspended."""

    def test_an_account_inserted_as_active_gets_activated_at(self, sql):
        row = account_row(sql, insert_account(sql, status="active"))
        assert row["activated_at"] is not None
        assert row["status_changed_at"] is not None

    def test_suspend_and_unsuspend_of_an_imported_active_account_leaves_it_active(self, sql):
        account_id = insert_account(sql, status="active")
        sql("UPDATE accounts SET status = 'suspended' WHERE id = %s", [account_id])
        sql("UPDATE accounts SET status = 'active' WHERE id = %s", [account_id])
        assert account_row(sql, account_id)["status"] == "active"

    def test_an_account_inserted_as_suspended_gets_suspended_at(self, sql):
        row = account_row(sql, insert_account(sql, status="suspended"))
        assert row["suspended_at"] is not None

    def test_an_account_inserted_as_active_gets_no_activation_token(self, sql):
        account_id = insert_account(sql, status="active")
        assert sql("SELECT count(*) FROM tokens WHERE account = %s", [account_id]) == [(0,)]

    def test_a_provisioned_insert_cannot_claim_an_address_by_setting_activated_at(self, sql, refused):
        refused(
            "INSERT INTO accounts (email, login, activated_at) VALUES ('a@example.com', 'a', now())",
            match="activated_at of a new account cannot be given",
        )
        assert sql("SELECT count(*) FROM accounts WHERE login = 'a'") == [(0,)]


def test_timestamps_are_timestamptz_beyond_2038(sql):
    """Times are timestamptz: INTEGER epochs would overflow on 2038-01-19."""
    account_id = insert_account(sql)
    sql(
        "INSERT INTO tokens (account, action, expires_at) VALUES (%s, 'activation', '2040-01-01T00:00:00Z')",
        [account_id],
    )
    assert sql("SELECT extract(year FROM max(expires_at))::int FROM tokens WHERE account = %s", [account_id]) == [
        (2040,)
    ]
    types = dict(sql("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'accounts'"))
    assert {
        types[c] for c in ["created_at", "status_changed_at", "activated_at", "suspended_at", "unsuspended_at"]
    } == {"timestamp with time zone"}


def test_an_account_cannot_be_set_back_to_provisioned(sql, refused):
    account_id = insert_account(sql, status="active")
    refused(
        "UPDATE accounts SET status = 'provisioned' WHERE id = %s",
        [account_id],
        match="accounts: account .* cannot be set back to provisioned",
    )
    assert account_row(sql, account_id)["status"] == "active"


class TestEmailClaiming:
    """An address is unique, ignoring case, only among activated accounts: an unverified sign-up
    cannot block the address's owner."""

    def test_any_number_of_unverified_sign_ups_may_hold_an_address(self, sql):
        for n in range(3):
            insert_account(sql, email="Shared@Example.com".upper() if n else "shared@example.com", login=f"u{n}")
        assert sql("SELECT count(*) FROM accounts WHERE lower(email) = 'shared@example.com'") == [(3,)]

    def test_activating_a_second_account_with_a_claimed_address_fails_and_changes_nothing(self, sql, refused):
        owner = insert_account(sql, email="owner@example.com", login="owner")
        squatter = insert_account(sql, email="OWNER@example.com", login="squatter")
        sql("UPDATE tokens SET consumed_at = now() WHERE account = %s", [owner])
        refused(
            "UPDATE tokens SET consumed_at = now() WHERE account = %s",
            [squatter],
            match="accounts: e-mail OWNER@example.com is already claimed by an activated account",
        )
        assert account_row(sql, squatter)["status"] == "provisioned"
        assert sql("SELECT consumed_at FROM tokens WHERE account = %s", [squatter]) == [(None,)]

    def test_a_sign_up_may_hold_a_claimed_address_but_never_activate_with_it(self, sql, refused):
        insert_account(sql, email="owner@example.com", login="owner", status="active")
        late = insert_account(sql, email="Owner@Example.COM", login="late")
        refused(
            "UPDATE tokens SET consumed_at = now() WHERE account = %s",
            [late],
            match="accounts: e-mail Owner@Example.COM is already claimed",
        )
        assert account_row(sql, late)["status"] == "provisioned"

    def test_an_account_inserted_as_active_with_a_claimed_address_is_refused(self, sql, refused):
        insert_account(sql, email="owner@example.com", login="owner", status="active")
        refused(
            "INSERT INTO accounts (email, login, status) VALUES ('OWNER@example.com', 'twin', 'active')",
            match="accounts: e-mail OWNER@example.com is already claimed",
        )

    def test_changing_an_address_to_a_claimed_one_is_refused(self, sql, refused):
        insert_account(sql, email="owner@example.com", login="owner", status="active")
        other = insert_account(sql, email="other@example.com", login="other", status="active")
        refused(
            "UPDATE accounts SET email = 'owner@example.com' WHERE id = %s",
            [other],
            match="accounts: e-mail .* is already claimed",
        )

    @pytest.mark.django_db(transaction=True)
    def test_the_unique_index_holds_even_without_the_trigger(self):
        """The trigger's check only gives the message; the partial unique index is the guarantee
        (only the owner can disable a trigger)."""
        with connect_as_owner() as owner:
            owner.execute("INSERT INTO accounts (email, login, status) VALUES ('owner@example.com', 'owner', 'active')")
            owner.execute("ALTER TABLE accounts DISABLE TRIGGER before_account_write_claim_email")
            with pytest.raises(psycopg.errors.UniqueViolation, match="accounts_email_claimed_key"):
                owner.execute(
                    "INSERT INTO accounts (email, login, status) VALUES ('OWNER@example.com', 'twin', 'active')"
                )

    def test_logins_are_unique_ignoring_case(self, sql, refused):
        insert_account(sql, login="Jane.Doe")
        refused(
            "INSERT INTO accounts (email, login) VALUES ('x@example.com', 'jane.doe')",
            match='unique constraint "accounts_login_key"',
        )


GOOD_EMAILS = [
    "user@example.com",
    "first.last+tag@sub.example.co.uk",
    "o'hara@example.com",
    "a@b.cd",
    "a!#$%&*+/=^_`{|}~-b?c@example.com",
    "a?=b@example.com",
    "u@" + "x" * 63 + ".example.com",
    "x" * 64 + "@example.com",
]


@pytest.mark.parametrize(("email", "message"), BAD_EMAILS)
def test_the_database_refuses_a_bad_email_with_a_clear_message(sql, refused, email, message):
    refused(
        "INSERT INTO accounts (email, login) VALUES (%s, 'someone')", [email], match=f"accounts: {re.escape(message)}"
    )
    assert sql("SELECT count(*) FROM accounts") == [(0,)]
    assert sql("SELECT count(*) FROM tokens") == [(0,)]


@pytest.mark.parametrize(("login", "message"), BAD_LOGINS)
def test_the_database_refuses_a_bad_login_with_a_clear_message(sql, refused, login, message):
    refused(
        "INSERT INTO accounts (email, login) VALUES ('user@example.com', %s)",
        [login],
        match=f"accounts: {re.escape(message)}",
    )
    assert sql("SELECT count(*) FROM accounts") == [(0,)]


def test_a_254_character_address_is_accepted(sql):
    email = "a" * 64 + "@" + "b" * 60 + "." + "c" * 60 + "." + "d" * 63 + ".com"
    account_id = insert_account(sql, email=email)
    assert sql("SELECT length(email) FROM accounts WHERE id = %s", [account_id]) == [(254,)]


def test_a_null_email_or_login_is_refused_while_the_account_is_not_erased(refused):
    refused("INSERT INTO accounts (email, login) VALUES (NULL, 'someone')", match="ck_accounts_erased_blank")
    refused("INSERT INTO accounts (email, login) VALUES ('some@example.com', NULL)", match="ck_accounts_erased_blank")


@pytest.mark.parametrize("email", GOOD_EMAILS)
def test_the_problem_function_accepts_what_the_trigger_accepts(sql, email):
    """accounts_email_problem() and the trigger's WHEN clause hold the same rule."""
    insert_account(sql, email=email, login="someone")
    assert sql("SELECT accounts_email_problem(%s), accounts_login_problem('someone')", [email]) == [(None, None)]


@pytest.mark.parametrize("email", GOOD_EMAILS)
def test_the_mailer_sends_to_an_accepted_address_as_it_is_stored(email):
    """Addresses compare in the form the mailer sends to: Django's mailer neither refuses an accepted
    address nor rewrites it into another one (as it would decode '=?us-ascii?q?active1?=@...' to
    'active1@...')."""
    assert sanitize_address(email, "utf-8") == email
