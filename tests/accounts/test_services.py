"""Account services: the walkthrough again, bad input and illegal moves."""

import re

import pytest
from django.db import transaction

from accounts.errors import (
    AccountGone,
    AccountIsDeprovisioned,
    AlreadyDeprovisioned,
    AlreadySuspended,
    EmailAlreadyClaimed,
    IllegalTransition,
    InvalidEmail,
    InvalidLogin,
    LoginTaken,
    NotDeprovisioned,
    NotSuspended,
)
from accounts.models import Account, AccountStatus
from accounts.services import (
    account_deprovision,
    account_password_hash,
    account_password_verify,
    account_provision,
    account_reprovision,
    account_set_password,
    account_suspend,
    account_unsuspend,
)
from lifecycle.demo.factories import AccountFactory
from tests.support import BAD_EMAILS, BAD_LOGINS, connect, in_threads, wait_until_blocked
from tokens.errors import AccountDeprovisioned, TokenNotFound
from tokens.models import Token, TokenAction
from tokens.selectors import due_mail, live_token
from tokens.services import token_consume

pytestmark = pytest.mark.django_db


def test_walkthrough_through_the_services():
    """Provision, activate with the token, suspend, unsuspend: each returns the row as the triggers left it."""
    account = account_provision(email="user@example.com", login="user123", actor=None)
    assert account.status == AccountStatus.PROVISIONED
    assert account.created_at is not None and account.status_changed_at is not None

    token = token_consume(secret=bytes(live_token(account=account).secret), actor=None)
    assert token.account.status == AccountStatus.ACTIVE
    assert token.account.activated_at is not None

    account = account_suspend(account=token.account, actor=None)
    assert (account.status, account.unsuspended_at) == (AccountStatus.SUSPENDED, None)
    assert account.suspended_at is not None

    account = account_unsuspend(account=account, actor=None)
    assert (account.status, account.suspended_at) == (AccountStatus.ACTIVE, None)
    assert account.unsuspended_at is not None


def test_provision_strips_surrounding_whitespace():
    """The one normalisation the service makes (docs/rules.md)."""
    account = account_provision(email="  user@example.com\n", login="\tuser123 ", actor=None)
    assert (account.email, account.login) == ("user@example.com", "user123")


def test_provision_keeps_the_case_it_was_given():
    account = account_provision(email="Jane.Doe@Example.com", login="JaneDoe", actor=None)
    assert (account.email, account.login) == ("Jane.Doe@Example.com", "JaneDoe")


@pytest.mark.parametrize(("email", "message"), [(e, m) for e, m in BAD_EMAILS if e.strip() == e or not e.strip()])
def test_provision_refuses_a_bad_email_and_writes_nothing(email, message):
    with pytest.raises(InvalidEmail, match=f"accounts: {re.escape(message)}"):
        account_provision(email=email, login="someone", actor=None)
    assert not Account.objects.exists()
    assert not Token.objects.exists()


@pytest.mark.parametrize(("login", "message"), [(lg, m) for lg, m in BAD_LOGINS if lg.strip() == lg or not lg.strip()])
def test_provision_refuses_a_bad_login_and_writes_nothing(login, message):
    with pytest.raises(InvalidLogin, match=f"accounts: {re.escape(message)}"):
        account_provision(email="user@example.com", login=login, actor=None)
    assert not Account.objects.exists()


def test_provision_refuses_a_taken_login_in_any_case():
    AccountFactory(login="user123")
    with pytest.raises(LoginTaken, match="accounts: login is already taken"):
        account_provision(email="other@example.com", login="USER123", actor=None)


def test_provision_refuses_an_address_claimed_by_an_activated_account():
    AccountFactory(email="owner@example.com", active=True)
    with pytest.raises(EmailAlreadyClaimed, match="accounts: e-mail OWNER@EXAMPLE.COM is already claimed"):
        account_provision(email="OWNER@EXAMPLE.COM", login="late", actor=None)


def test_provision_allows_an_address_held_only_by_unverified_sign_ups():
    AccountFactory(email="shared@example.com")
    account = account_provision(email="Shared@example.com", login="second", actor=None)
    assert account.status == AccountStatus.PROVISIONED


def test_activating_the_second_holder_of_a_claimed_address_fails_and_changes_nothing():
    squatter = AccountFactory(email="owner@example.com")
    AccountFactory(email="owner@example.com", active=True)
    with pytest.raises(EmailAlreadyClaimed, match="accounts: e-mail owner@example.com is already claimed"):
        token_consume(secret=bytes(live_token(account=squatter).secret), actor=None)
    squatter.refresh_from_db()
    assert squatter.status == AccountStatus.PROVISIONED
    assert Token.objects.get(account=squatter).consumed_at is None


class TestIllegalMoves:
    """A refusal says why in its fields (code, account, state), so that no caller parses its sentence."""

    def test_suspending_a_suspended_account(self):
        account = AccountFactory(suspended=True)
        with pytest.raises(AlreadySuspended, match=f"accounts: account {account.pk} is already suspended") as caught:
            account_suspend(account=account, actor=None)
        refusal = caught.value
        assert (refusal.code, refusal.account_id, refusal.state, refusal.reason) == (
            "already-suspended",
            account.pk,
            AccountStatus.SUSPENDED,
            "already suspended",
        )

    def test_unsuspending_an_account_that_is_not_suspended(self):
        account = AccountFactory(active=True)
        with pytest.raises(NotSuspended, match=f"accounts: account {account.pk} is not suspended") as caught:
            account_unsuspend(account=account, actor=None)
        assert (caught.value.code, caught.value.state) == ("not-suspended", AccountStatus.ACTIVE)
        assert isinstance(caught.value, IllegalTransition)

    def test_an_account_deleted_meanwhile(self, sql):
        account = AccountFactory(active=True)
        sql("DELETE FROM accounts WHERE id = %s", [account.pk])
        with pytest.raises(AccountGone, match=f"accounts: account {account.pk} no longer exists"):
            account_suspend(account=account, actor=None)

    def test_the_database_decides_under_the_row_lock(self, sql):
        """The status the service was handed may be stale; the row's own state decides."""
        account = AccountFactory(active=True)
        sql("UPDATE accounts SET status = 'suspended' WHERE id = %s", [account.pk])
        assert account.status == AccountStatus.ACTIVE  # stale
        with pytest.raises(AlreadySuspended):
            account_suspend(account=account, actor=None)
        assert account.status == AccountStatus.SUSPENDED  # refreshed


def test_unsuspending_a_never_activated_account_returns_it_to_provisioned():
    account = AccountFactory(suspended=True, was_activated=False)
    assert account_unsuspend(account=account, actor=None).status == AccountStatus.PROVISIONED


def test_a_provisioned_account_can_be_suspended():
    account = account_suspend(account=AccountFactory(), actor=None)
    assert (account.status, account.activated_at) == (AccountStatus.SUSPENDED, None)


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_suspensions_suspend_once_and_refuse_the_other(psql):
    account = AccountFactory(active=True)
    # A third session holds the row so that both suspensions are waiting when it lets go.
    with psql.transaction():
        psql.execute("SELECT 1 FROM accounts WHERE id = %s FOR UPDATE", [account.pk])
        threads, results = in_threads(*[lambda: account_suspend(account=account, actor=None)] * 2)
        wait_until_blocked(psql, 2)
    for thread in threads:
        thread.join()
    assert sorted(ok for ok, _ in results) == [False, True]
    (refusal,) = [value for ok, value in results if not ok]
    assert isinstance(refusal, AlreadySuspended)
    (suspensions,) = psql.execute(
        "SELECT count(*) FROM audit_events WHERE action = 'account.suspended' AND resource_id = %s", [str(account.pk)]
    ).fetchone()
    assert suspensions == 1


@pytest.mark.django_db(transaction=True)
def test_walkthrough_provisioning_through_the_service_notifies_a_listening_session():
    with connect(autocommit=True) as listener:
        listener.execute("LISTEN token_insert")
        account_provision(email="user@example.com", login="user123", actor=None)
        notifications = list(listener.notifies(timeout=5, stop_after=1))
    assert [n.channel for n in notifications] == ["token_insert"]


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_sign_up_leaves_nothing_and_notifies_nobody():
    with connect(autocommit=True) as listener:
        listener.execute("LISTEN token_insert")
        with pytest.raises(RuntimeError), transaction.atomic():
            account_provision(email="user@example.com", login="user123", actor=None)
            raise RuntimeError("the caller changed its mind")
        assert list(listener.notifies(timeout=0.5, stop_after=1)) == []
    assert not Account.objects.exists()
    assert not Token.objects.exists()


class TestNulBytes:
    """A NUL is refused by the rule it breaks, never left to PostgreSQL (whose text cannot hold one) as a
    DataError."""

    @pytest.mark.parametrize(
        ("email", "login", "error"),
        [("a\x00b@example.com", "ab", InvalidEmail), ("ab@example.com", "a\x00b", InvalidLogin)],
    )
    def test_provisioning_refuses_it_with_the_rule_and_makes_nothing(self, email, login, error):
        with pytest.raises(error, match="accounts: "):
            account_provision(email=email, login=login, actor=None)
        assert not Account.objects.exists()

    def test_an_identifier_holding_one_names_nobody(self):
        from tokens.errors import TokenNotFound
        from tokens.services import token_consume_code, token_request_mail

        AccountFactory(login="jane", active=True)
        with pytest.raises(TokenNotFound):
            token_consume_code(identifier="ja\x00ne", code="12345", actor=None)
        assert token_request_mail(identifier="ja\x00ne", action=TokenAction.PASSWORD_RECOVERY, actor=None) is None
        assert not Token.objects.filter(action="password_recovery").exists()


class TestDeprovisioning:
    """account_deprovision and account_reprovision: the database's moves (tests/accounts/test_deprovision_rules.py)
    through the services, their refusals in fields."""

    @pytest.mark.parametrize("state", [{}, {"active": True}, {"suspended": True}])
    def test_any_account_is_deprovisioned_and_reprovisioned_with_a_fresh_activation_token(self, state):
        account = account_deprovision(account=AccountFactory(**state), actor=None)
        assert account.status == AccountStatus.DEPROVISIONED and account.deprovisioned_at is not None
        assert live_token(account=account) is None
        account = account_reprovision(account=account, actor=None)
        assert (account.status, account.deprovisioned_at) == (AccountStatus.PROVISIONED, None)
        assert account.reprovisioned_at is not None
        fresh = live_token(account=account, action=TokenAction.ACTIVATION)
        assert token_consume(secret=bytes(fresh.secret), actor=None).account.status == AccountStatus.ACTIVE

    def test_deprovisioning_twice(self):
        account = account_deprovision(account=AccountFactory(active=True), actor=None)
        with pytest.raises(AlreadyDeprovisioned, match=f"account {account.pk} is already deprovisioned") as caught:
            account_deprovision(account=account, actor=None)
        assert (caught.value.code, caught.value.state) == ("already-deprovisioned", AccountStatus.DEPROVISIONED)
        assert isinstance(caught.value, IllegalTransition)

    def test_reprovisioning_an_account_that_is_not_deprovisioned(self):
        account = AccountFactory(active=True)
        with pytest.raises(NotDeprovisioned, match=f"account {account.pk} is not deprovisioned") as caught:
            account_reprovision(account=account, actor=None)
        assert (caught.value.code, caught.value.state) == ("not-deprovisioned", AccountStatus.ACTIVE)
        assert Account.objects.get(pk=account.pk).status == AccountStatus.ACTIVE

    def test_a_deprovisioned_account_is_neither_suspended_nor_unsuspended(self):
        account = account_deprovision(account=AccountFactory(active=True), actor=None)
        with pytest.raises(AccountIsDeprovisioned, match="only reprovisioning") as caught:
            account_suspend(account=account, actor=None)
        assert (caught.value.code, caught.value.reason) == ("account-deprovisioned", "deprovisioned")
        with pytest.raises(NotSuspended):
            account_unsuspend(account=account, actor=None)
        assert Account.objects.get(pk=account.pk).status == AccountStatus.DEPROVISIONED

    def test_a_deprovisioned_account_has_no_password_to_check(self):
        """As a name nobody has: (None, False) after the same work, right password or not."""
        account = AccountFactory(active=True)
        account_set_password(account=account, password_hash=account_password_hash("correct horse 1"), actor=None)
        assert account_password_verify(identifier=account.login, password="correct horse 1") == (account, True)
        account_deprovision(account=account, actor=None)
        for identifier in (account.login, account.email):
            assert account_password_verify(identifier=identifier, password="correct horse 1") == (None, False)


@pytest.mark.django_db(transaction=True)
def test_a_consumption_racing_a_deprovisioning_either_activates_first_or_is_refused(psql):
    """Both wait for the account's row, and neither deadlocks: whichever goes first, the account ends
    deprovisioned, and a refused consumption says the account is deprovisioned."""
    account = AccountFactory()
    secret = bytes(live_token(account=account).secret)
    with psql.transaction():
        psql.execute("SELECT 1 FROM accounts WHERE id = %s FOR UPDATE", [account.pk])
        threads, results = in_threads(
            lambda: token_consume(secret=secret, actor=None),
            lambda: account_deprovision(account=account, actor=None),
        )
        wait_until_blocked(psql, 2)
    for thread in threads:
        thread.join()
    consumed, deprovisioned = results
    assert deprovisioned[0], deprovisioned
    assert consumed[0] or isinstance(consumed[1], AccountDeprovisioned), consumed
    account.refresh_from_db()
    assert account.status == AccountStatus.DEPROVISIONED
    # A token the deprovisioning skipped (its consumption held it) stays unusable and is never mailed...
    with pytest.raises((AccountDeprovisioned, TokenNotFound)):
        token_consume(secret=secret, actor=None)
    assert not due_mail().filter(account=account).exists()
    # ...and reprovisioning replaces it: one live activation token, the fresh one.
    account_reprovision(account=account, actor=None)
    assert Token.objects.filter(account=account, consumed_at=None, superseded_at=None).count() == 1
