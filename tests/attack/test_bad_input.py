"""Bad input on every public page: never a 500, and nothing changes."""

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import Account
from lifecycle.demo.factories import AccountFactory
from tests.attack.helpers import NEW_PASSWORD
from tokens.links import landing_path
from tokens.selectors import live_token

pytestmark = pytest.mark.django_db

FORMS = ["sign-up", "activate-code", "recover", "resend", "recover-code"]
NASTY = ["\x00", "a\x00b", "x" * 100_000, "\u0130\u212a\U0001f600", "\n", "<script>", "%00", ""]


@pytest.mark.parametrize("page", FORMS)
@pytest.mark.parametrize("value", NASTY, ids=range(len(NASTY)))
def test_nasty_values_in_every_field(page, value):
    client = Client(raise_request_exception=False)
    fields = ["email", "login", "identifier", "code", "password", "password_again"]
    for field in fields:
        data = {"email": "a@example.com", "login": "abc", "identifier": "abc", "code": "12345"} | NEW_PASSWORD
        data[field] = value
        response = client.post(reverse(page), data)
        assert response.status_code < 500, (field, response.status_code)


@pytest.mark.parametrize("page", FORMS)
def test_invalid_utf8_body(page):
    client = Client(raise_request_exception=False)
    body = b"email=%ff%fe@x.com&login=%c0%80&identifier=%ff&code=%ef%bc%91%ef%bc%92%ef%bc%93%ef%bc%94%ef%bc%95&password=%ed%a0%80&password_again=%ed%a0%80"
    response = client.post(reverse(page), body, content_type="application/x-www-form-urlencoded")
    assert response.status_code < 500


@pytest.mark.parametrize("page", FORMS)
@pytest.mark.parametrize("method", ["put", "delete", "patch", "head", "options"])
def test_wrong_methods(page, method):
    response = getattr(Client(raise_request_exception=False), method)(reverse(page))
    assert response.status_code < 500


@pytest.mark.parametrize("secret", ["x" * 43, "\u00e9" * 43, "%00" * 15, "A" * 42 + "\u0130", "=" * 43, "x" * 5000])
@pytest.mark.parametrize("page", ["activate-link", "recover-link"])
def test_bad_secrets(page, secret):
    client = Client(raise_request_exception=False)
    for method in ("get", "post"):
        response = getattr(client, method)(reverse(page, args=[secret]))
        assert response.status_code < 500


def test_a_request_without_a_client_address_gets_a_page_not_a_500():
    """client_ip() returns None when REMOTE_ADDR is empty (gunicorn behind a proxy on a Unix socket sets
    it to '', and so does any request that reaches TRUSTED_PROXY_COUNT>0 with too few hops and no peer);
    bucket_for() then raises TypeError on every POST that counts a limit."""
    client = Client(REMOTE_ADDR="", raise_request_exception=False)
    AccountFactory(login="jane", email="jane@example.com", active=True)
    statuses = {
        page: client.post(reverse(page), data).status_code
        for page, data in [
            ("recover", {"identifier": "jane"}),
            ("resend", {"identifier": "jane"}),
            ("activate-code", {"identifier": "jane", "code": "12345"} | NEW_PASSWORD),
            ("recover-code", {"identifier": "jane", "code": "12345"} | NEW_PASSWORD),
            ("sign-up", {"email": "new@example.com", "login": "newbie"} | NEW_PASSWORD),
        ]
    }
    assert all(status < 500 for status in statuses.values()), statuses


def test_nasty_passwords_on_the_links_change_nothing():
    client = Client(raise_request_exception=False)
    account = AccountFactory(login="jane")
    path = landing_path(live_token(account=account))
    for value in ["\x00", "a\x00b", "\n", "", "%00", "x\x00" * 20]:
        response = client.post(path, {"password": value, "password_again": value})
        assert response.status_code < 500
    account.refresh_from_db()
    assert account.status == "provisioned"
    assert Account.objects.count() == 1
