"""Attacks on the public pages (tokens/views.py): bad input is never a 500 and changes nothing; the
limits hold (docs/public-pages.md, "Limits"); passwords are never stored raw or copied where they do
not belong; no page tells whether an account exists."""

import logging
import re

import pytest
from django.core import mail
from django.db import connection
from django.test import Client
from django.urls import reverse

from accounts.models import Account, AccountPassword
from lifecycle.demo.factories import AccountFactory
from tests.support import NEW_PASSWORD, PASSWORD, page_text, run_queued_tasks
from tokens.links import landing_path
from tokens.mailroom.drain import drain
from tokens.models import TokenAction
from tokens.selectors import live_token

pytestmark = [pytest.mark.attack, pytest.mark.django_db]

FORMS = ["sign-up", "activate-code", "recover", "resend", "recover-code"]
NASTY = ["\x00", "a\x00b", "x" * 100_000, "\u0130\u212a\U0001f600", "\n", "<script>", "%00", ""]
SECOND = "another horse battery staple 9"


def deliver() -> int:
    """Run the queued public requests, then the mailroom; how many e-mails left."""
    before = len(mail.outbox)
    run_queued_tasks()
    drain()
    return len(mail.outbox) - before


def mailed_link_and_code() -> tuple[str, str]:
    """The link (as a path) and the code of the last e-mail: a mailed token's row keeps only digests."""
    body = mail.outbox[-1].body
    link = re.search(r"https?://[^/\s]+(/(?:activate|recover)/[A-Za-z0-9_-]{43})", body).group(1)
    return link, re.search(r"enter this code [^:]*: (\d{5})", body).group(1)


# Bad input: never a 500, and nothing changes


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


# The limits


def test_login_and_address_of_one_account_each_get_the_mail_allowance(client):
    """docs/public-pages.md, "Limits": three e-mails an hour "caps a mailbox bombing at three". The attack types the login and
    then the address of the same account, for two allowances: six e-mails in one mailbox within the
    hour. The queued task counts per account too."""
    AccountFactory(login="victim", email="victim@example.com", active=True)
    delivered = 0
    for identifier in ["victim", "victim", "victim", "victim@example.com", "victim@example.com", "victim@example.com"]:
        response = client.post(reverse("recover"), {"identifier": identifier})
        assert response.status_code in (200, 429)
        delivered += deliver()
    assert {message.to[0] for message in mail.outbox} <= {"victim@example.com"}
    assert delivered <= 3, f"{delivered} e-mails reached victim@example.com in one hour"


def test_dotted_capital_i_lookalike_does_not_bypass_the_per_identifier_limit(client):
    """The attack: the limit's key is Python's lower() of what was typed, the account lookup PostgreSQL's
    lower(). They differ for U+0130 (İ): Python gives 'i̇' (two code points), PostgreSQL (C.UTF-8) gives
    'i'. So 'İAN' would be a new bucket, yet name the account 'ian'. Identifiers are plain ASCII: the
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
    account = AccountFactory(login="jane", email="jane@example.com")
    path = landing_path(live_token(account=account))
    for page in ["resend", "resend", "recover"]:
        client.post(reverse(page), {"identifier": "jane@example.com"})
    deliver()
    assert client.get(path).status_code == 200


# Passwords never stored raw or copied where they do not belong; no oracle


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
    link, _ = mailed_link_and_code()
    client.post(link, {"password": SECOND, "password_again": SECOND})
    second_hash = AccountPassword.objects.get(account=account).password
    assert first_hash != second_hash and first_hash.startswith("argon2$argon2id$")
    for table in ["audit_events", "django_q_task", "django_q_ormq", "accounts", "tokens", "rate_limits"]:
        text = _table_text(table)
        for secret in [PASSWORD, SECOND, first_hash, second_hash, first_hash.split("$")[-1]]:
            assert secret not in text, (table, secret)
    for secret in [PASSWORD, SECOND, first_hash, second_hash]:
        assert secret not in caplog.text


def test_a_weak_password_at_sign_up_does_not_use_up_the_address_allowance(client):
    """A refused password consumes nothing: were /signup/'s limit counted before the password is
    checked, three refused (weak) passwords would lock the address out of signing up for an hour, and
    anyone could block a victim's address this way without a single e-mail being sent."""
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
    link, _ = mailed_link_and_code()
    response = client.post(link, {"password": "password", "password_again": "password"})
    assert response.status_code == 400
    token.refresh_from_db()
    assert token.consumed_at is None


def test_a_recovery_secret_does_not_open_an_activation_page_or_another_account(client):
    victim = AccountFactory(login="victim", active=True)
    AccountFactory(login="mallory", active=True)
    victim_hash = AccountPassword.objects.filter(account=victim).values_list("password", flat=True).first()
    client.post(reverse("recover"), {"identifier": "mallory"})
    deliver()
    link, code = mailed_link_and_code()
    secret = link.rsplit("/", 1)[-1]
    assert client.post(reverse("activate-link", args=[secret]), NEW_PASSWORD).status_code == 404
    # Mallory's code typed with the victim's login
    response = client.post(reverse("recover-code"), {"identifier": "victim", "code": code} | NEW_PASSWORD)
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


# Restoring a deprovisioned account (tokens/views.py, restore_link)


def test_sign_ups_with_a_closed_accounts_address_send_it_at_most_the_per_account_limit_of_restore_e_mails(settings):
    """A stranger who knows the address cannot flood its mailbox by signing up with it again and again."""
    settings.PUBLIC_LIMITS_PER_HOUR = {**settings.PUBLIC_LIMITS_PER_HOUR, "mail-per-account": 2}
    AccountFactory(email="jane@example.com", deprovisioned=True)
    client = Client()
    mails = 0
    for number in range(5):
        client.post(reverse("sign-up"), {"email": "jane@example.com", "login": f"intruder{number}"} | NEW_PASSWORD)
        mails += deliver()
    assert mails == 2
    assert not Account.objects.filter(login__startswith="intruder").exists()


def test_a_restore_link_is_not_a_way_in_for_anyone_but_its_mailbox():
    """Guessed, cut short, another account's, or used twice: the unknown link's page, nothing restored."""
    closed = AccountFactory(email="jane@example.com", deprovisioned=True)
    other = AccountFactory(email="ann@example.com", deprovisioned=True)
    client = Client()
    client.post(reverse("sign-up"), {"email": "ann@example.com", "login": "ann2"} | NEW_PASSWORD)
    assert deliver() == 1
    link = re.search(r"https?://[^/\s]+(/restore/[A-Za-z0-9_-]{43})", mail.outbox[-1].body).group(1)
    unknown = client.post("/restore/" + "A" * 43)
    # One character changed: the second last (the last one's low bits are padding, which base64
    # ignores: changed there, the link would still be the same secret).
    changed = link[:-2] + ("A" if link[-2] != "A" else "B") + link[-1]
    for forged in ("/restore/" + "B" * 43, link[:-1], changed):
        response = client.post(forged)
        assert (response.status_code, page_text(response)) == (unknown.status_code, page_text(unknown))
    closed.refresh_from_db()
    assert closed.status == "deprovisioned"
    # The real link restores its own account only, once.
    assert client.post(link).status_code == 200
    other.refresh_from_db()
    closed.refresh_from_db()
    assert (other.status, closed.status) == ("provisioned", "deprovisioned")
    assert client.post(link).status_code == 409


def test_a_restore_post_without_the_csrf_token_is_refused():
    AccountFactory(email="jane@example.com", deprovisioned=True)
    Client().post(reverse("sign-up"), {"email": "jane@example.com", "login": "jane2"} | NEW_PASSWORD)
    deliver()
    link = re.search(r"https?://[^/\s]+(/restore/[A-Za-z0-9_-]{43})", mail.outbox[-1].body).group(1)
    response = Client(enforce_csrf_checks=True).post(link)
    assert response.status_code == 403
    assert Account.objects.get(email="jane@example.com").status == "deprovisioned"
