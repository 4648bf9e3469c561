"""End users' sessions (accounts/sessions.py) and the rules the database keeps for them
(accounts/sql/0025_account_sessions.sql), the rules tried in raw SQL as the runtime role, as psql would."""

import hashlib
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.erasure import account_erase
from accounts.errors import NotSignedIn
from accounts.models import Account, AccountPassword, AccountSession, SessionEnd
from accounts.services import account_deprovision, account_password_hash, account_set_password, account_suspend
from accounts.sessions import (
    USER_AGENT_KEPT,
    account_session_by_secret,
    account_session_end,
    account_session_start,
    account_sign_ins,
    browser_name,
)
from lifecycle.demo.factories import AccountFactory
from platform_events.db.history import history_rewrite

pytestmark = pytest.mark.django_db

BROWSER = "Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0"


def password_set_at(account):
    """When the account's password was set (one is given to it first if it has none)."""
    account = Account.objects.get(pk=account) if isinstance(account, int) else account
    if not AccountPassword.objects.filter(account=account).exists():
        account_set_password(account=account, password_hash=account_password_hash("a pass phrase 1"), actor=None)
    return AccountPassword.objects.values_list("changed_at", flat=True).get(account=account)


def start(account, address="203.0.113.7", agent=BROWSER):
    return account_session_start(
        account=account, password_changed_at=password_set_at(account), client_address=address, user_agent=agent
    )


# A session as psql would insert it, with the time of the account's password.
INSERT = (
    "INSERT INTO account_sessions (account, secret_digest, password_changed_at, expires_at)"
    " SELECT %s, {digest}, (SELECT changed_at FROM account_passwords WHERE account = %s), {expires}"
)


def raw_session(sql, account_id) -> int:
    password_set_at(account_id)
    statement = INSERT.format(digest="sha256(uuid_send(gen_random_uuid()))", expires="now() + interval '1 hour'")
    (session_id,) = sql(statement + " RETURNING id", [account_id, account_id])[0]
    return session_id


# The service


def test_a_sign_in_gives_a_secret_that_finds_its_session_and_only_its_digest_is_stored():
    account = AccountFactory(active=True)
    signed_in = start(account)
    found = account_session_by_secret(signed_in.secret)
    assert found.pk == signed_in.session.pk and found.account == account
    stored = AccountSession.objects.get(pk=found.pk)
    assert bytes(stored.secret_digest) == hashlib.sha256(signed_in.secret.encode()).digest()
    assert signed_in.secret.encode() not in bytes(stored.secret_digest)
    assert (stored.client_address, stored.user_agent) == ("203.0.113.7", BROWSER)


def test_each_sign_in_gets_a_new_secret():
    account = AccountFactory(active=True)
    assert start(account).secret != start(account).secret


@pytest.mark.parametrize("secret", ["", "x", "A" * 43, "A" * 5000])
def test_a_secret_nobody_was_given_finds_nothing(secret):
    start(AccountFactory(active=True))
    assert account_session_by_secret(secret) is None


def test_an_ended_session_finds_nothing():
    account = AccountFactory(active=True)
    ended, kept = start(account), start(account)
    account_session_end(session=ended.session)
    assert account_session_by_secret(ended.secret) is None
    assert account_session_by_secret(kept.secret).pk == kept.session.pk


def test_a_session_past_its_hours_finds_nothing(settings):
    account = AccountFactory(active=True)
    signed_in = start(account)
    later = timezone.now() + timedelta(hours=settings.ACCOUNT_SESSION_HOURS, seconds=1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("accounts.sessions.timezone.now", lambda: later)
        assert account_session_by_secret(signed_in.secret) is None


def test_ending_twice_keeps_the_first_end():
    account = AccountFactory(active=True)
    signed_in = start(account)
    account_session_end(session=signed_in.session, why=SessionEnd.SIGN_OUT)
    account_session_end(session=signed_in.session, why=SessionEnd.PASSWORD)
    assert AccountSession.objects.get(pk=signed_in.session.pk).ended_by == SessionEnd.SIGN_OUT


@pytest.mark.parametrize("status", ["provisioned", "suspended", "deprovisioned"])
def test_only_an_active_account_signs_in(status):
    account = AccountFactory(**{status: True}) if status != "provisioned" else AccountFactory()
    with pytest.raises(NotSignedIn, match="only an active account signs in"):
        start(account)
    assert not AccountSession.objects.exists()


def test_the_user_agent_is_kept_printable_and_short():
    account = AccountFactory(active=True)
    signed_in = start(account, agent="Evil\x00\x1b[31m" + "x" * 1000)
    kept = AccountSession.objects.get(pk=signed_in.session.pk).user_agent
    assert kept.startswith("Evil[31m") and len(kept) == USER_AGENT_KEPT


def test_the_list_of_sign_ins_is_the_accounts_own_newest_first_with_what_became_of_each(sql):
    account, other = AccountFactory(active=True), AccountFactory(active=True)
    expired, ended, current, live = (start(account, address=f"192.0.2.{n}") for n in range(1, 5))
    start(other, address="192.0.2.99")
    account_session_end(session=ended.session)
    with history_rewrite():
        for age, signed_in in enumerate([live, current, ended, expired], start=1):
            sql(
                "UPDATE account_sessions SET signed_in_at = now() - make_interval(hours => %s) WHERE id = %s",
                [age, signed_in.session.pk],
            )
        sql("UPDATE account_sessions SET expires_at = now() - interval '1 second' WHERE id = %s", [expired.session.pk])
    listed = account_sign_ins(account, current=current.session)
    assert [(sign_in.client_address, sign_in.now) for sign_in in listed] == [
        ("192.0.2.4", "signed in"),
        ("192.0.2.3", "this browser"),
        ("192.0.2.2", "signed out"),
        ("192.0.2.1", "expired"),
    ]
    assert listed[0].browser == "Chrome 131 on Linux"
    assert len(account_sign_ins(account, limit=2)) == 2


@pytest.mark.parametrize(
    ("user_agent", "shown"),
    [
        ("Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0", "Firefox 133 on Windows"),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko)"
            " Version/17.0 Mobile/15E148 Safari/604.1",
            "Mobile Safari 17 on iOS",
        ),
        ("curl/8.5.0", "curl 8"),
        ("", "unknown browser"),
        ("<script>alert(1)</script>", "unknown browser"),
    ],
)
def test_a_browser_is_named_as_a_person_reads_it(user_agent, shown):
    assert browser_name(user_agent) == shown


# What ends a session, whoever does it


def test_a_suspension_ends_every_session_and_a_lifted_one_brings_none_back(sql):
    account = AccountFactory(active=True)
    signed_in = start(account)
    account_suspend(account=account, actor=None)
    assert AccountSession.objects.get(pk=signed_in.session.pk).ended_by == SessionEnd.SUSPENDED
    sql("UPDATE accounts SET status = 'active' WHERE id = %s", [account.pk])
    assert account_session_by_secret(signed_in.secret) is None


def test_a_suspension_typed_in_psql_ends_them_too(sql):
    account = AccountFactory(active=True)
    signed_in = start(account)
    sql("UPDATE accounts SET status = 'suspended' WHERE id = %s", [account.pk])
    assert AccountSession.objects.get(pk=signed_in.session.pk).ended_at is not None


def test_a_deprovisioning_ends_every_session():
    account = AccountFactory(active=True)
    signed_in = start(account)
    account_deprovision(account=account, actor=None)
    assert AccountSession.objects.get(pk=signed_in.session.pk).ended_by == SessionEnd.DEPROVISIONED


def test_a_new_password_ends_every_session_of_its_account_only(sql):
    account, other = AccountFactory(active=True), AccountFactory(active=True)
    account_set_password(account=account, password_hash=account_password_hash("first pass phrase"), actor=None)
    mine, theirs = start(account), start(other)
    account_set_password(account=account, password_hash=account_password_hash("second pass phrase"), actor=None)
    assert AccountSession.objects.get(pk=mine.session.pk).ended_by == SessionEnd.PASSWORD
    assert AccountSession.objects.get(pk=theirs.session.pk).ended_at is None


def test_a_password_changed_in_psql_ends_them_too(sql):
    account = AccountFactory(active=True)
    account_set_password(account=account, password_hash=account_password_hash("first pass phrase"), actor=None)
    signed_in = start(account)
    sql("UPDATE account_passwords SET password = %s WHERE account = %s", [account_password_hash("x y z w"), account.pk])
    assert account_session_by_secret(signed_in.secret) is None


@pytest.mark.django_db(transaction=True)
def test_an_erasure_leaves_no_sign_in_of_the_account():
    account, other = AccountFactory(active=True), AccountFactory(active=True)
    start(account, address="198.51.100.23")
    kept = start(other)
    account_deprovision(account=account, actor=None)
    account_erase(account=account, actor=None)
    assert list(AccountSession.objects.values_list("pk", flat=True)) == [kept.session.pk]


# The rules in raw SQL


LIVE = INSERT.format(digest="sha256('s'::bytea)", expires="now() + interval '1 hour'")


@pytest.mark.parametrize("status", ["provisioned", "suspended", "deprovisioned"])
def test_psql_cannot_sign_in_an_account_that_is_not_active(refused, status):
    account = AccountFactory(**{status: True}) if status != "provisioned" else AccountFactory()
    refused(LIVE, [account.pk, account.pk], match=f"account {account.pk} is {status}; only an active account signs in")


def test_psql_cannot_sign_in_an_account_that_is_not_there(refused):
    refused(LIVE, [0, 0], match="account 0 is missing")


def test_psql_cannot_sign_in_with_a_password_other_than_the_accounts_own(sql, refused):
    account = AccountFactory(active=True)
    set_at = password_set_at(account)
    for given in ("now() - interval '1 second'", "NULL"):
        refused(
            "INSERT INTO account_sessions (account, secret_digest, password_changed_at, expires_at)"
            f" VALUES (%s, sha256('s'::bytea), {given}, now() + interval '1 hour')",
            [account.pk],
            match="is not the one this sign-in checked|null value",
        )
    without = AccountFactory(active=True)
    refused(
        "INSERT INTO account_sessions (account, secret_digest, password_changed_at, expires_at)"
        " VALUES (%s, sha256('s'::bytea), %s, now() + interval '1 hour')",
        [without.pk, set_at],
        match="is not the one this sign-in checked",
    )


def test_a_password_changed_between_the_check_and_the_sign_in_refuses_the_session():
    """The check read the password set a second before the one the account has now (another request
    set it meanwhile)."""
    account = AccountFactory(active=True)
    checked_at = password_set_at(account) - timedelta(seconds=1)
    with pytest.raises(NotSignedIn, match="is not the one this sign-in checked"):
        account_session_start(account=account, password_changed_at=checked_at, client_address=None, user_agent="")
    assert not AccountSession.objects.exists()


def test_psql_cannot_start_a_session_ended_or_backdated(sql, refused):
    account = AccountFactory(active=True)
    password_set_at(account)
    refused(
        "INSERT INTO account_sessions (account, secret_digest, password_changed_at, expires_at, ended_at, ended_by)"
        " SELECT %s, sha256('s'::bytea), changed_at, now() + interval '1 hour', now(), 'sign-out'"
        " FROM account_passwords WHERE account = %s",
        [account.pk, account.pk],
        match="a session starts live",
    )
    (signed_in_at,) = sql(
        "INSERT INTO account_sessions (account, secret_digest, password_changed_at, expires_at, signed_in_at)"
        " SELECT %s, sha256('s'::bytea), changed_at, now() + interval '1 hour', now() - interval '1 year'"
        " FROM account_passwords WHERE account = %s RETURNING signed_in_at = now()",
        [account.pk, account.pk],
    )[0]
    assert signed_in_at  # the database's time, not the one given


@pytest.mark.parametrize(
    "change",
    [
        "account = account",  # a no-op is no end
        "expires_at = expires_at + interval '1 year'",
        "secret_digest = sha256('other'::bytea)",
        "client_address = '192.0.2.1'",
        "user_agent = 'someone else'",
        "signed_in_at = signed_in_at - interval '1 day'",
        "password_changed_at = now() + interval '1 day'",
        "ended_at = now()",
    ],
)
def test_psql_cannot_rewrite_a_session(sql, refused, change):
    session_id = raw_session(sql, AccountFactory(active=True).pk)
    refused(f"UPDATE account_sessions SET {change} WHERE id = %s", [session_id], match="is not rewritten")


def test_psql_ends_a_session_once_at_the_databases_time(sql, refused):
    session_id = raw_session(sql, AccountFactory(active=True).pk)
    sql("UPDATE account_sessions SET ended_by = 'sign-out', ended_at = '2000-01-01' WHERE id = %s", [session_id])
    assert sql("SELECT ended_at = now() FROM account_sessions WHERE id = %s", [session_id]) == [(True,)]
    refused("UPDATE account_sessions SET ended_by = 'password' WHERE id = %s", [session_id], match="is not rewritten")


def test_psql_cannot_delete_a_live_session_but_may_an_ended_one(sql, refused):
    account_id = AccountFactory(active=True).pk
    live, ended = raw_session(sql, account_id), raw_session(sql, account_id)
    refused("DELETE FROM account_sessions WHERE id = %s", [live], match="is live; end it")
    sql("UPDATE account_sessions SET ended_by = 'sign-out' WHERE id = %s", [ended])
    assert sql("DELETE FROM account_sessions WHERE id = %s", [ended]) == 1


def test_an_account_deleted_takes_its_sessions_with_it(sql):
    account = AccountFactory(active=True)
    start(account)
    assert sql("DELETE FROM accounts WHERE id = %s", [account.pk]) == 1
    assert not AccountSession.objects.exists()


def test_a_session_is_never_longer_than_its_start_or_without_a_known_end(refused):
    account = AccountFactory(active=True)
    password_set_at(account)
    refused(
        INSERT.format(digest="sha256('s'::bytea)", expires="now() - interval '1 s'"),
        [account.pk, account.pk],
        match="check constraint",
    )
    refused(
        INSERT.format(digest="'short'::bytea", expires="now() + interval '1 hour'"),
        [account.pk, account.pk],
        match="check constraint",
    )


def test_a_password_removed_or_set_again_ends_every_session(sql):
    account = AccountFactory(active=True)
    removed = start(account)
    sql("DELETE FROM account_passwords WHERE account = %s", [account.pk])
    assert AccountSession.objects.get(pk=removed.session.pk).ended_by == SessionEnd.PASSWORD


def test_a_client_address_that_is_not_an_ip_address_is_kept_as_none():
    account = AccountFactory(active=True)
    assert start(account, address="unix:").session.client_address is None
    assert start(account, address="2001:db8::1").session.client_address == "2001:db8::1"
