"""POST /api/v1/accounts/{id}/email-change: a client application changes an account's address, verified
by a link to the new one, as the account page does (tokens/sql/0026_email_change.sql)."""

import pytest

from accounts.models import Account
from lifecycle.demo.factories import AccountFactory
from tests.lifecycle.api.conftest import new_key
from tests.lifecycle.api.test_accounts_api import problem_type
from tokens.links import landing_path
from tokens.models import Token, TokenAction

pytestmark = pytest.mark.django_db

NEW = "ada.new@example.net"


def test_it_mails_a_link_to_the_new_address_and_keeps_the_old_one_until_it_is_used(api, client):
    account = AccountFactory(active=True, email="ada@example.com")
    response = api.post(f"/accounts/{account.pk}/email-change", {"email": NEW})
    assert response.status_code == 202, response.content
    body = response.json()
    assert (body["account_id"], body["action"]) == (account.pk, "email_change")
    token = Token.objects.get(account=account, action=TokenAction.EMAIL_CHANGE)
    assert token.email == NEW and token.mail_state == "queued"
    assert Account.objects.get(pk=account.pk).email == "ada@example.com"
    client.post(landing_path(token))
    assert Account.objects.get(pk=account.pk).email == NEW


def test_the_same_key_answers_the_same_and_issues_once(api):
    account = AccountFactory(active=True)
    key = new_key()
    first = api.post(f"/accounts/{account.pk}/email-change", {"email": NEW}, key=key)
    again = api.post(f"/accounts/{account.pk}/email-change", {"email": NEW}, key=key)
    assert first.json() == again.json()
    assert Token.objects.filter(account=account, action=TokenAction.EMAIL_CHANGE).count() == 1


@pytest.mark.parametrize(
    ("email", "status", "kind"),
    [("not-an-address", 422, "invalid-email"), ("ada@example.com", 422, "address-unchanged")],
)
def test_an_address_that_cannot_be_the_new_one_is_one_clear_problem(api, email, status, kind):
    account = AccountFactory(active=True, email="ada@example.com")
    response = api.post(f"/accounts/{account.pk}/email-change", {"email": email})
    assert response.status_code == status and problem_type(response) == kind, response.content
    assert not Token.objects.filter(action=TokenAction.EMAIL_CHANGE).exists()


@pytest.mark.parametrize(
    ("traits", "kind"), [({"suspended": True}, "wrong-account-state"), ({}, "wrong-account-state")]
)
def test_only_an_active_account_changes_its_address(api, traits, kind):
    account = AccountFactory(**traits)
    response = api.post(f"/accounts/{account.pk}/email-change", {"email": NEW})
    assert response.status_code == 409 and problem_type(response) == kind, response.content


def test_a_deprovisioned_or_missing_account(api):
    account = AccountFactory(deprovisioned=True)
    deprovisioned = api.post(f"/accounts/{account.pk}/email-change", {"email": NEW})
    assert deprovisioned.status_code == 409 and problem_type(deprovisioned) == "account-deprovisioned"
    assert api.post("/accounts/999999/email-change", {"email": NEW}).status_code == 404


def test_it_needs_the_write_scope(make_api):
    reader = make_api("accounts:read")
    account = AccountFactory(active=True)
    response = reader.post(f"/accounts/{account.pk}/email-change", {"email": NEW})
    assert response.status_code == 403 and problem_type(response) == "insufficient-scope"


@pytest.mark.parametrize("body", [{}, {"email": ""}, {"email": NEW, "extra": 1}, {"email": 42}])
def test_a_bad_body_is_refused(api, body):
    account = AccountFactory(active=True)
    assert api.post(f"/accounts/{account.pk}/email-change", body).status_code in (400, 422)


def test_while_the_last_changes_undo_is_live_the_address_does_not_change_again(api, client):
    account = AccountFactory(active=True, email="ada@example.com")
    api.post(f"/accounts/{account.pk}/email-change", {"email": NEW})
    client.post(landing_path(Token.objects.get(account=account, action=TokenAction.EMAIL_CHANGE)))
    response = api.post(f"/accounts/{account.pk}/email-change", {"email": "ada.third@example.org"})
    assert response.status_code == 409 and problem_type(response) == "address-changed-lately", response.content


def test_an_address_longer_than_the_rules_allow_is_a_problem_not_a_500(api):
    account = AccountFactory(active=True)
    response = api.post(f"/accounts/{account.pk}/email-change", {"email": "a" * 300 + "@example.com"})
    assert response.status_code == 422 and problem_type(response) == "invalid-email", response.content
