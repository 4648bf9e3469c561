"""A change of address as the database keeps it (tokens/sql/0026_email_change.sql), tried in raw SQL as
the runtime role, as psql would: the e-mail-change token obeys the rules every token obeys (one live
per account and action, consumed once, wrong codes counted), its use claims the address as activation
does, and the old address keeps a way back."""

import threading

import psycopg
import pytest

from accounts.models import Account, AccountSession, SessionEnd
from accounts.services import account_password_hash
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.models import AuditEvent
from platform_events.db.history import history_rewrite
from platform_events.outbox.models import OutboxEvent
from tests.accounts.test_sessions import start
from tests.support import connect
from tokens.models import Token, TokenAction

FIRST, SECOND = account_password_hash("first pass phrase 1"), account_password_hash("second pass phrase 2")

pytestmark = pytest.mark.django_db

OLD, NEW = "Old.Address@example.com", "new.address@example.net"


def request_change(sql, account_id, email=NEW) -> int:
    (token_id,) = sql(
        "INSERT INTO tokens (account, action, email) VALUES (%s, 'email_change', %s) RETURNING id", [account_id, email]
    )[0]
    return token_id


def consume(sql, token_id):
    sql("UPDATE tokens SET consumed_at = now(), consumed_with = 'link' WHERE id = %s", [token_id])


def tokens_of(sql, account_id) -> list[tuple]:
    return sql(
        "SELECT action::text, email, consumed_at IS NOT NULL, superseded_at IS NOT NULL FROM tokens"
        " WHERE account = %s AND action IN ('email_change', 'email_change_undo') ORDER BY id",
        [account_id],
    )


@pytest.fixture
def account(db):
    return AccountFactory(active=True, email=OLD, login="changer")


# Issuing


def test_a_change_is_a_token_for_the_new_address_and_the_old_one_stays_in_force(sql, account):
    request_change(sql, account.pk)
    assert tokens_of(sql, account.pk) == [("email_change", NEW, False, False)]
    assert Account.objects.get(pk=account.pk).email == OLD


def test_a_newer_change_replaces_the_older_one_live_per_account(sql, account):
    first = request_change(sql, account.pk)
    request_change(sql, account.pk, "third.address@example.org")
    assert [row[3] for row in tokens_of(sql, account.pk)] == [True, False]
    assert sql("SELECT mail_state::text FROM tokens WHERE id = %s", [first]) == [("skipped",)]


def test_the_address_goes_with_address_changes_only(refused, account):
    refused("INSERT INTO tokens (account, action) VALUES (%s, 'email_change')", [account.pk], match="must not be empty")
    refused(
        "INSERT INTO tokens (account, action, email) VALUES (%s, 'password_recovery', %s)",
        [account.pk, NEW],
        match="tokens_email_only_for_address_changes",
    )


@pytest.mark.parametrize(
    ("email", "message"),
    [
        ("not-an-address", "e-mail is not a valid address"),
        ("=?utf-8?q?a?=@example.com", 'must not contain "=\\?"'),
        (OLD, "is already the address of account"),
    ],
)
def test_an_address_the_rules_refuse_or_the_accounts_own_is_refused(refused, account, email, message):
    refused(
        "INSERT INTO tokens (account, action, email) VALUES (%s, 'email_change', %s)",
        [account.pk, email],
        match=message,
    )


@pytest.mark.parametrize("status", ["provisioned", "suspended", "deprovisioned"])
def test_only_an_active_account_changes_its_address(refused, status):
    other = AccountFactory(**({status: True} if status != "provisioned" else {}))
    refused(
        "INSERT INTO tokens (account, action, email) VALUES (%s, 'email_change', %s)",
        [other.pk, NEW],
        match="is not active|is deprovisioned",
    )


def test_a_tokens_address_is_written_once(sql, refused, account):
    token_id = request_change(sql, account.pk)
    refused("UPDATE tokens SET email = 'attacker@example.com' WHERE id = %s", [token_id], match="cannot be changed")


# Using it


def test_using_it_makes_the_new_address_the_accounts_and_mails_the_old_one_a_way_back(sql, account):
    consume(sql, request_change(sql, account.pk))
    assert Account.objects.get(pk=account.pk).email == NEW
    undo = Token.objects.get(account=account, action=TokenAction.EMAIL_CHANGE_UNDO)
    assert undo.email == OLD and (undo.expires_at - undo.created_at).days == 7 and undo.mail_state == "queued"
    audit = AuditEvent.objects.filter(resource_id=str(account.pk), diff_after__email=NEW).get()
    assert audit.diff_before["email"] == OLD
    assert OutboxEvent.objects.filter(event_type="account.email_changed", aggregate_id=str(account.pk)).exists()


def test_it_is_consumed_once(sql, refused, account):
    token_id = request_change(sql, account.pk)
    consume(sql, token_id)
    refused(
        "UPDATE tokens SET consumed_at = now(), consumed_with = 'link' WHERE id = %s",
        [token_id],
        match="already been used",
    )


def test_wrong_codes_are_counted_and_never_taken_back(sql, refused, account):
    token_id = request_change(sql, account.pk)
    sql("UPDATE tokens SET failed_attempts = 5 WHERE id = %s", [token_id])
    refused("UPDATE tokens SET failed_attempts = 0 WHERE id = %s", [token_id], match="its wrong-code count only grows")
    refused(
        "UPDATE tokens SET consumed_at = now(), consumed_with = 'code' WHERE id = %s",
        [token_id],
        match="no longer works after too many wrong codes",
    )


def test_an_address_another_activated_account_holds_is_refused_and_nothing_changes(sql, refused, account):
    AccountFactory(active=True, email="NEW.address@example.net")
    token_id = request_change(sql, account.pk)
    refused(
        "UPDATE tokens SET consumed_at = now(), consumed_with = 'link' WHERE id = %s",
        [token_id],
        match="accounts_email_claimed_key|already claimed",
    )
    assert Account.objects.get(pk=account.pk).email == OLD
    assert tokens_of(sql, account.pk) == [("email_change", NEW, False, False)]


def test_a_sign_up_never_activated_with_the_address_does_not_stand_in_the_way(sql, account):
    waiting = AccountFactory(email=NEW)
    consume(sql, request_change(sql, account.pk))
    assert Account.objects.get(pk=account.pk).email == NEW
    assert Account.objects.get(pk=waiting.pk).email == NEW  # it may not activate with it now


@pytest.mark.parametrize("status", ["suspended", "deprovisioned"])
def test_it_is_not_used_once_the_account_is_no_longer_active(sql, refused, account, status):
    token_id = request_change(sql, account.pk)
    sql("UPDATE accounts SET status = %s WHERE id = %s", [status, account.pk])
    refused(
        "UPDATE tokens SET consumed_at = now(), consumed_with = 'link' WHERE id = %s",
        [token_id],
        match="is suspended|is deprovisioned|replaced",
    )
    assert Account.objects.get(pk=account.pk).email == OLD


# The way back


def test_the_undo_puts_the_old_address_back_and_ends_every_session(sql, account):
    consume(sql, request_change(sql, account.pk))
    signed_in = start(Account.objects.get(pk=account.pk))
    undo = Token.objects.get(account=account, action=TokenAction.EMAIL_CHANGE_UNDO)
    consume(sql, undo.pk)
    assert Account.objects.get(pk=account.pk).email == OLD
    assert AccountSession.objects.get(pk=signed_in.session.pk).ended_by == SessionEnd.ADDRESS


def test_while_the_undo_is_live_the_address_does_not_change_again_nor_is_the_account_deleted(sql, refused, account):
    """Whoever changed the address cannot take the undo away: neither by changing it again (the undo
    would go to their own address) nor by deleting the account (its deprovisioning replaces the undo,
    and the restore e-mail goes to their address)."""
    consume(sql, request_change(sql, account.pk))
    for action, email in (("email_change", "third.address@example.org"), ("deletion", None)):
        refused(
            "INSERT INTO tokens (account, action, email) VALUES (%s, %s, %s)",
            [account.pk, action, email],
            match="changed lately; it (changes again|is deleted) once the link mailed to the old address",
        )
    undo = Token.objects.get(account=account, action=TokenAction.EMAIL_CHANGE_UNDO)
    consume(sql, undo.pk)  # used: the address may change again
    request_change(sql, account.pk, "third.address@example.org")


def test_once_the_undo_expired_the_address_changes_again(sql, account):
    consume(sql, request_change(sql, account.pk))
    with history_rewrite():
        sql(
            "UPDATE tokens SET expires_at = now() - interval '1 second'"
            " WHERE account = %s AND action = 'email_change_undo'",
            [account.pk],
        )
    request_change(sql, account.pk, "third.address@example.org")


def test_a_change_voids_the_links_mailed_to_the_address_it_leaves(sql, account):
    recovery, deletion = (
        sql("INSERT INTO tokens (account, action) VALUES (%s, %s) RETURNING id", [account.pk, action])[0][0]
        for action in ("password_recovery", "deletion")
    )
    consume(sql, request_change(sql, account.pk))
    assert sql("SELECT bool_and(superseded_at IS NOT NULL) FROM tokens WHERE id IN (%s, %s)", [recovery, deletion]) == [
        (True,)
    ]


def test_the_undo_voids_the_links_mailed_to_the_address_it_takes_back_from(sql, account):
    consume(sql, request_change(sql, account.pk))
    (recovery,) = sql(
        "INSERT INTO tokens (account, action) VALUES (%s, 'password_recovery') RETURNING id", [account.pk]
    )[0]
    consume(sql, Token.objects.get(account=account, action=TokenAction.EMAIL_CHANGE_UNDO).pk)
    assert sql("SELECT superseded_at IS NOT NULL FROM tokens WHERE id = %s", [recovery]) == [(True,)]


@pytest.mark.parametrize("how", ["update", "delete"])
def test_a_new_password_voids_a_change_still_pending(sql, account, how):
    sql("INSERT INTO account_passwords (account, password) VALUES (%s, %s)", [account.pk, FIRST])
    pending = request_change(sql, account.pk)
    if how == "update":
        sql("UPDATE account_passwords SET password = %s WHERE account = %s", [SECOND, account.pk])
    else:
        sql("DELETE FROM account_passwords WHERE account = %s", [account.pk])
    assert sql("SELECT superseded_at IS NOT NULL FROM tokens WHERE id = %s", [pending]) == [(True,)]


def test_a_longer_address_than_the_rules_allow_is_refused_in_their_words(refused, account):
    refused(
        "INSERT INTO tokens (account, action, email) VALUES (%s, 'email_change', %s)",
        [account.pk, "a" * 300 + "@example.com"],
        match="e-mail must be at most 254 characters",
    )


def test_the_undo_is_refused_when_the_old_address_was_claimed_meanwhile(sql, refused, account):
    consume(sql, request_change(sql, account.pk))
    AccountFactory(active=True, email=OLD.lower())
    undo = Token.objects.get(account=account, action=TokenAction.EMAIL_CHANGE_UNDO)
    refused(
        "UPDATE tokens SET consumed_at = now(), consumed_with = 'link' WHERE id = %s",
        [undo.pk],
        match="accounts_email_claimed_key|already claimed",
    )
    assert Account.objects.get(pk=account.pk).email == NEW


# Two at once


@pytest.mark.django_db(transaction=True)
def test_two_accounts_taking_one_address_at_once_one_wins():
    first, second = AccountFactory(active=True), AccountFactory(active=True)
    with connect(autocommit=True) as setup:
        ids = [
            setup.execute(
                "INSERT INTO tokens (account, action, email) VALUES (%s, 'email_change', %s) RETURNING id", [a.pk, NEW]
            ).fetchone()[0]
            for a in (first, second)
        ]
    with connect() as one, connect() as two:
        one.execute("UPDATE tokens SET consumed_at = now(), consumed_with = 'link' WHERE id = %s", [ids[0]])
        outcome = {}

        def second_takes_it():
            try:
                two.execute("UPDATE tokens SET consumed_at = now(), consumed_with = 'link' WHERE id = %s", [ids[1]])
                two.commit()
                outcome["second"] = "took it"
            except psycopg.errors.UniqueViolation:
                two.rollback()
                outcome["second"] = "refused"

        thread = threading.Thread(target=second_takes_it)
        thread.start()
        thread.join(timeout=1)
        assert thread.is_alive()  # it waits on the first's uncommitted claim
        one.commit()
        thread.join(timeout=30)
    assert outcome == {"second": "refused"}
    assert [Account.objects.get(pk=a.pk).email for a in (first, second)] == [NEW, second.email]
