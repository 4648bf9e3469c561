"""Passwords never stored raw or copied where they do not belong; no oracle on the public pages."""

import logging

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from accounts.models import Account, AccountPassword
from lifecycle.demo.factories import AccountFactory
from tests.attack.helpers import NEW_PASSWORD, PASSWORD, deliver, page_text
from tests.support import run_queued_tasks
from tokens.links import landing_path
from tokens.models import TokenAction
from tokens.selectors import live_token

pytestmark = pytest.mark.django_db

SECOND = "another horse battery staple 9"


def _table_text(table: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT coalesce(string_agg(t::text, ' '), '') FROM {table} t")
        return cursor.fetchone()[0]


def test_passwords_and_hashes_never_reach_audit_tasks_or_logs(client, caplog):
    caplog.set_level(logging.DEBUG)
    client.post(reverse("sign-up"), {"email": "jane@example.com", "login": "jane"} | NEW_PASSWORD)
    run_queued_tasks()
    account = Account.objects.get(login="jane")
    client.post(landing_path(live_token(account=account)), {})
    first_hash = AccountPassword.objects.get(account=account).password
    client.post(reverse("recover"), {"identifier": "jane"})
    deliver()
    token = live_token(account=account, action=TokenAction.PASSWORD_RECOVERY)
    client.post(landing_path(token), {"password": SECOND, "password_again": SECOND})
    second_hash = AccountPassword.objects.get(account=account).password
    assert first_hash != second_hash and first_hash.startswith("argon2$argon2id$")
    for table in ["audit_events", "django_q_task", "django_q_ormq", "accounts", "tokens", "rate_limits"]:
        text = _table_text(table)
        for secret in [PASSWORD, SECOND, first_hash, second_hash, first_hash.split("$")[-1]]:
            assert secret not in text, (table, secret)
    for secret in [PASSWORD, SECOND, first_hash, second_hash]:
        assert secret not in caplog.text


def test_a_weak_password_at_sign_up_uses_up_the_address_allowance(client):
    """A refused password is meant to consume nothing; at /signup/ the limit is counted before the
    password is checked, so three refused (weak) passwords lock the address out of signing up for an
    hour: anyone can block a victim's address this way without a single e-mail being sent."""
    for _ in range(3):
        response = client.post(
            reverse("sign-up"),
            {"email": "victim@example.com", "login": "victim", "password": "password", "password_again": "password"},
        )
        assert response.status_code == 400
    response = client.post(reverse("sign-up"), {"email": "victim@example.com", "login": "victim"} | NEW_PASSWORD)
    assert response.status_code == 200, response.status_code


def test_a_refused_password_on_a_recovery_link_consumes_nothing(client):
    account = AccountFactory(login="jane", active=True)
    client.post(reverse("recover"), {"identifier": "jane"})
    deliver()
    token = live_token(account=account, action=TokenAction.PASSWORD_RECOVERY)
    response = client.post(landing_path(token), {"password": "password", "password_again": "password"})
    assert response.status_code == 400
    token.refresh_from_db()
    assert token.consumed_at is None


def test_a_recovery_secret_does_not_open_an_activation_page_or_another_account(client):
    victim = AccountFactory(login="victim", active=True)
    mallory = AccountFactory(login="mallory", active=True)
    victim_hash = AccountPassword.objects.filter(account=victim).values_list("password", flat=True).first()
    client.post(reverse("recover"), {"identifier": "mallory"})
    deliver()
    token = live_token(account=mallory, action=TokenAction.PASSWORD_RECOVERY)
    secret = landing_path(token).rsplit("/", 1)[-1]
    assert client.post(reverse("activate-link", args=[secret]), NEW_PASSWORD).status_code == 404
    # Mallory's code typed with the victim's login
    response = client.post(reverse("recover-code"), {"identifier": "victim", "code": token.code} | NEW_PASSWORD)
    assert response.status_code == 400
    assert AccountPassword.objects.filter(account=victim).values_list("password", flat=True).first() == victim_hash


@pytest.mark.parametrize("page", ["recover", "resend", "activate-code", "recover-code"])
def test_no_oracle_with_lookalikes_case_and_after_the_limit(page):
    """Every identifier kind, typed oddly, and the 4th/11th (limited) request: same status, page, headers."""
    AccountFactory(login="waiting", email="waiting@example.com")
    AccountFactory(login="living", email="living@example.com", active=True)
    AccountFactory(login="frozen", email="frozen@example.com", suspended=True)
    extra = {"code": "00000"} | NEW_PASSWORD if "code" in page else {}
    answers = {}
    for n, identifier in enumerate(["nobody", " LIVING ", "WAITING", "Frozen@Example.COM", "waiting@EXAMPLE.com"]):
        client = Client(REMOTE_ADDR=f"192.0.2.{n + 1}")
        seen = []
        for _ in range(12):
            response = client.post(reverse(page), {"identifier": identifier} | extra)
            # Different for every response whoever asks: the cookie, the length, the request's own id.
            headers = {
                k: v
                for k, v in response.headers.items()
                if k.lower() not in ("set-cookie", "content-length", "x-request-id")
            }
            headers = {k: ("(seconds)" if k == "Retry-After" else v) for k, v in headers.items()}
            seen.append((response.status_code, page_text(response, identifier), tuple(sorted(headers.items()))))
        answers[identifier] = seen
    distinct = {tuple((s, h) for s, _, h in seen) for seen in answers.values()}
    assert len(distinct) == 1
    bodies = {tuple(body for _, body, _ in seen) for seen in answers.values()}
    assert len(bodies) == 1


def test_sign_up_with_an_address_of_every_kind_answers_the_same():
    AccountFactory(login="waiting", email="waiting@example.com")
    AccountFactory(login="living", email="living@example.com", active=True)
    AccountFactory(login="frozen", email="frozen@example.com", suspended=True)
    answers = set()
    for n, email in enumerate(
        ["nobody@example.com", "WAITING@example.com", "living@EXAMPLE.com", "frozen@example.com"]
    ):
        client = Client(REMOTE_ADDR=f"192.0.2.{n + 1}")
        for _ in range(4):
            response = client.post(reverse("sign-up"), {"email": email, "login": f"fresh{n}"} | NEW_PASSWORD)
            answers.add((response.status_code, page_text(response, email).replace(f"fresh{n}", "(login)")))
    assert len({status for status, _ in answers}) == 2  # 200 then 429, for every address
    assert len(answers) == 2
