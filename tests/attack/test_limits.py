"""Attacks on the public pages' limits (README, "Public pages", "Limits")."""

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse

from lifecycle.demo.factories import AccountFactory
from tests.attack.helpers import deliver

pytestmark = pytest.mark.django_db


def test_login_and_address_of_one_account_each_get_the_mail_allowance(client):
    """README: three e-mails an hour "caps a mailbox bombing ... at three". Typing the login and then the
    address of the same account gets two allowances: six e-mails land in one mailbox within the hour."""
    AccountFactory(login="victim", email="victim@example.com", active=True)
    delivered = 0
    for identifier in ["victim", "victim", "victim", "victim@example.com", "victim@example.com", "victim@example.com"]:
        response = client.post(reverse("recover"), {"identifier": identifier})
        assert response.status_code in (200, 429)
        delivered += deliver()
    assert {message.to[0] for message in mail.outbox} <= {"victim@example.com"}
    assert delivered <= 3, f"{delivered} e-mails reached victim@example.com in one hour"


def test_dotted_capital_i_lookalike_no_longer_bypasses_the_per_identifier_limit(client):
    """The attack: the limit's key was Python's lower() of what was typed, the account lookup PostgreSQL's
    lower(). They differ for U+0130 (İ): Python gives 'i̇' (two code points), PostgreSQL (C.UTF-8) gives
    'i'. So 'İAN' was a new bucket, yet named the account 'ian'. Identifiers are now plain ASCII: the
    form refuses it (400, for anyone) and nothing is mailed."""
    AccountFactory(login="ian", email="ian@example.com", active=True)
    for _ in range(3):
        assert client.post(reverse("recover"), {"identifier": "ian"}).status_code == 200
    assert client.post(reverse("recover"), {"identifier": "ian"}).status_code == 429
    deliver()
    sent_before = len(mail.outbox)
    response = client.post(reverse("recover"), {"identifier": "\u0130AN"})
    extra = deliver()
    assert (response.status_code, extra) == (400, 0), (
        f"'\\u0130AN' after the limit: status {response.status_code}, {extra} more e-mail(s) to"
        f" {[m.to for m in mail.outbox[sent_before:]]}"
    )


def test_case_and_whitespace_share_one_bucket(client):
    AccountFactory(login="jane", email="jane@example.com", active=True)
    statuses = [
        client.post(reverse("recover"), {"identifier": identifier}).status_code
        for identifier in ["jane", " JANE ", "Jane\u00a0", "\u3000jAnE"]
    ]
    assert statuses == [200, 200, 200, 429]


def test_recover_and_resend_share_one_allowance(client):
    AccountFactory(login="jane", email="jane@example.com")
    statuses = [client.post(reverse(page), {"identifier": "jane"}).status_code
                for page in ["recover", "resend", "recover", "resend"]]  # fmt: skip
    assert statuses == [200, 200, 200, 429]


def test_x_forwarded_for_is_ignored_without_trusted_proxies(settings):
    settings.TRUSTED_PROXY_COUNT = 0
    settings.PUBLIC_LIMITS_PER_HOUR = settings.PUBLIC_LIMITS_PER_HOUR | {"mail-per-client": 2}
    client = Client()
    statuses = [
        client.post(reverse("recover"), {"identifier": f"x{n}"}, HTTP_X_FORWARDED_FOR=f"10.0.0.{n}").status_code
        for n in range(3)
    ]
    assert statuses == [200, 200, 429]


def test_asking_again_does_not_cancel_the_link(client):
    from tokens.links import landing_path
    from tokens.selectors import live_token

    account = AccountFactory(login="jane", email="jane@example.com")
    path = landing_path(live_token(account=account))
    for page in ["resend", "resend", "recover"]:
        client.post(reverse(page), {"identifier": "jane@example.com"})
    deliver()
    assert client.get(path).status_code == 200
