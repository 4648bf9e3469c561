"""Account services: the walkthrough again, bad input and illegal moves."""

import pytest
from django.db import transaction

from accounts.errors import EmailAlreadyClaimed, IllegalTransition, InvalidEmail, InvalidLogin, LoginTaken
from accounts.models import Account, AccountStatus
from accounts.services import account_provision, account_resend_activation, account_suspend, account_unsuspend
from lifecycle.factories import AccountFactory
from tests.support import BAD_EMAILS, BAD_LOGINS, connect
from tokens.errors import TokenSuperseded
from tokens.models import Token, TokenAction
from tokens.services import token_consume

pytestmark = pytest.mark.django_db


def activation_secret(account) -> bytes:
    return bytes(Token.objects.get(account=account, action=TokenAction.ACTIVATION, superseded_at__isnull=True).secret)


def test_walkthrough_through_the_services():
    """Provision, activate with the token, suspend, unsuspend: each returns the row as the triggers left it."""
    account = account_provision(email="user@example.com", login="user123")
    assert account.status == AccountStatus.PROVISIONED
    assert account.created_at is not None and account.status_changed_at is not None

    token = token_consume(secret=activation_secret(account))
    assert token.account.status == AccountStatus.ACTIVE
    assert token.account.activated_at is not None

    account = account_suspend(account=token.account)
    assert (account.status, account.unsuspended_at) == (AccountStatus.SUSPENDED, None)
    assert account.suspended_at is not None

    account = account_unsuspend(account=account)
    assert (account.status, account.suspended_at) == (AccountStatus.ACTIVE, None)
    assert account.unsuspended_at is not None


def test_provision_strips_surrounding_whitespace():
    """The one normalisation the service makes (README, "Lifecycle rules")."""
    account = account_provision(email="  user@example.com\n", login="\tuser123 ")
    assert (account.email, account.login) == ("user@example.com", "user123")


def test_provision_keeps_the_case_it_was_given():
    account = account_provision(email="Jane.Doe@Example.com", login="JaneDoe")
    assert (account.email, account.login) == ("Jane.Doe@Example.com", "JaneDoe")


@pytest.mark.parametrize(("email", "message"), [(e, m) for e, m in BAD_EMAILS if e.strip() == e or not e.strip()])
def test_provision_refuses_a_bad_email_and_writes_nothing(email, message):
    with pytest.raises(InvalidEmail, match=f"accounts: {message}"):
        account_provision(email=email, login="someone")
    assert not Account.objects.exists()
    assert not Token.objects.exists()


@pytest.mark.parametrize(("login", "message"), [(lg, m) for lg, m in BAD_LOGINS if lg.strip() == lg or not lg.strip()])
def test_provision_refuses_a_bad_login_and_writes_nothing(login, message):
    with pytest.raises(InvalidLogin, match=f"accounts: {message}"):
        account_provision(email="user@example.com", login=login)
    assert not Account.objects.exists()


def test_provision_refuses_a_taken_login_in_any_case():
    AccountFactory(login="user123")
    with pytest.raises(LoginTaken, match="accounts: login is already taken"):
        account_provision(email="other@example.com", login="USER123")


def test_provision_refuses_an_address_claimed_by_an_activated_account():
    AccountFactory(email="owner@example.com", active=True)
    with pytest.raises(EmailAlreadyClaimed, match="accounts: e-mail OWNER@EXAMPLE.COM is already claimed"):
        account_provision(email="OWNER@EXAMPLE.COM", login="late")


def test_provision_allows_an_address_held_only_by_unverified_sign_ups():
    AccountFactory(email="shared@example.com")
    account = account_provision(email="Shared@example.com", login="second")
    assert account.status == AccountStatus.PROVISIONED


def test_activating_the_second_holder_of_a_claimed_address_fails_and_changes_nothing():
    squatter = AccountFactory(email="owner@example.com")
    AccountFactory(email="owner@example.com", active=True)
    with pytest.raises(EmailAlreadyClaimed, match="accounts: e-mail owner@example.com is already claimed"):
        token_consume(secret=activation_secret(squatter))
    squatter.refresh_from_db()
    assert squatter.status == AccountStatus.PROVISIONED
    assert Token.objects.get(account=squatter).consumed_at is None


class TestIllegalMoves:
    def test_suspending_a_suspended_account(self):
        account = AccountFactory(suspended=True)
        with pytest.raises(IllegalTransition, match=f"accounts: account {account.pk} is already suspended"):
            account_suspend(account=account)

    def test_unsuspending_an_account_that_is_not_suspended(self):
        account = AccountFactory(active=True)
        with pytest.raises(IllegalTransition, match=f"accounts: account {account.pk} is not suspended"):
            account_unsuspend(account=account)

    def test_resending_activation_to_an_active_account(self):
        account = AccountFactory(active=True)
        with pytest.raises(IllegalTransition, match="only provisioned accounts get activation e-mails"):
            account_resend_activation(account=account)


def test_unsuspending_a_never_activated_account_returns_it_to_provisioned():
    account = AccountFactory(suspended=True, was_activated=False)
    assert account_unsuspend(account=account).status == AccountStatus.PROVISIONED


def test_a_provisioned_account_can_be_suspended():
    account = account_suspend(account=AccountFactory())
    assert (account.status, account.activated_at) == (AccountStatus.SUSPENDED, None)


def test_resending_activation_supersedes_the_old_token():
    account = AccountFactory()
    old_secret = activation_secret(account)
    new_token = account_resend_activation(account=account)
    assert new_token.action == TokenAction.ACTIVATION
    with pytest.raises(TokenSuperseded, match="tokens: token .* was replaced by a newer one"):
        token_consume(secret=old_secret)
    assert token_consume(secret=bytes(new_token.secret)).account.status == AccountStatus.ACTIVE


@pytest.mark.django_db(transaction=True)
def test_walkthrough_provisioning_through_the_service_notifies_a_listening_session():
    with connect(autocommit=True) as listener:
        listener.execute("LISTEN token_insert")
        account_provision(email="user@example.com", login="user123")
        notifications = list(listener.notifies(timeout=5, stop_after=1))
    assert [n.channel for n in notifications] == ["token_insert"]


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_sign_up_leaves_nothing_and_notifies_nobody():
    with connect(autocommit=True) as listener:
        listener.execute("LISTEN token_insert")
        with pytest.raises(RuntimeError), transaction.atomic():
            account_provision(email="user@example.com", login="user123")
            raise RuntimeError("the caller changed its mind")
        assert list(listener.notifies(timeout=0.5, stop_after=1)) == []
    assert not Account.objects.exists()
    assert not Token.objects.exists()
