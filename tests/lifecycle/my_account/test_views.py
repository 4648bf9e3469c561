"""The account pages (lifecycle/my_account/views.py): sign in, the account and its sign-ins, sign out."""

import pytest
from django.conf import settings
from django.contrib.auth.hashers import check_password
from django.test import Client
from django.urls import reverse

from accounts.models import AccountPassword, AccountSession, AccountStatus, SessionEnd
from accounts.services import account_suspend
from lifecycle.demo.factories import AccountFactory
from lifecycle.my_account.views import COOKIE, WRONG
from platform_events.audit.models import AuditEvent
from platform_events.outbox.models import OutboxEvent
from tests.lifecycle.my_account.conftest import sign_in
from tests.support import PASSWORD, page_text
from tokens.mailroom.drain import drain
from tokens.models import Token, TokenAction
from tokens.views import DELETION_REASON

pytestmark = pytest.mark.django_db

FIREFOX = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0"
NEW = "a brand new pass phrase 88"
CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/131.0 Safari/537.36"


@pytest.mark.parametrize("name", ["patperson", "PATPERSON", "pat.person@example.com", "Pat.Person@EXAMPLE.com"])
def test_a_person_signs_in_with_login_or_address_in_any_case(person, name):
    client = Client()
    response = sign_in(client, name, HTTP_USER_AGENT=CHROME, REMOTE_ADDR="203.0.113.5")
    assert response.status_code == 302 and response["Location"] == reverse("account")
    session = AccountSession.objects.get()
    assert (session.account, session.client_address, session.user_agent) == (person, "203.0.113.5", CHROME)


def test_the_cookie_is_the_account_pages_own(person, settings):
    settings.SESSION_COOKIE_SECURE = True
    response = sign_in(Client(), person.login)
    cookie = response.cookies[COOKIE]
    assert cookie["path"] == "/account/" and cookie["httponly"] and cookie["secure"]
    assert cookie["samesite"] == "Lax" and int(cookie["max-age"]) == settings.ACCOUNT_SESSION_HOURS * 3600
    assert settings.SESSION_COOKIE_NAME not in response.cookies  # no admin session is made


def test_the_account_page_shows_the_account_and_its_sign_ins(person, signed_in):
    sign_in(Client(), person.login, HTTP_USER_AGENT=FIREFOX, REMOTE_ADDR="198.51.100.4")
    response = signed_in.get(reverse("account"))
    page = page_text(response)
    assert response.status_code == 200
    for shown in (
        "patperson",
        "Pat.Person@example.com",
        "Active",
        "this browser",
        "198.51.100.4",
        "Firefox 133 on Windows",
    ):
        assert shown in page, shown
    assert "no-store" in response["Cache-Control"]


def test_an_ended_sign_in_is_listed_with_why(person, signed_in):
    other = Client()
    sign_in(other, person.login)
    other.post(reverse("account-sign-out"))
    assert "signed out" in page_text(signed_in.get(reverse("account")))


def test_without_a_session_the_account_page_leads_to_sign_in():
    response = Client().get(reverse("account"))
    assert response.status_code == 302 and response["Location"] == reverse("account-sign-in")


def test_a_dead_cookie_is_forgotten_on_the_way_to_sign_in(person, signed_in):
    account_suspend(account=person, actor=None)
    response = signed_in.get(reverse("account"))
    assert response["Location"] == reverse("account-sign-in")
    assert response.cookies[COOKIE].value == "" and response.cookies[COOKIE]["path"] == "/account/"


def test_a_signed_in_browser_going_to_sign_in_goes_to_its_account(signed_in):
    assert signed_in.get(reverse("account-sign-in"))["Location"] == reverse("account")


def test_the_sign_in_form_links_to_recovery_and_sign_up(settings):
    page = page_text(Client().get(reverse("account-sign-in")))
    assert reverse("recover") in page and reverse("sign-up") in page
    settings.PUBLIC_SIGN_UP = False
    assert reverse("sign-up") not in page_text(Client().get(reverse("account-sign-in")))


def test_a_wrong_password_is_one_sentence_and_the_form_again(person):
    response = sign_in(Client(), person.login, "not it at all")
    assert response.status_code == 400 and WRONG in page_text(response)
    assert not AccountSession.objects.exists()


@pytest.mark.parametrize(
    "data", [{}, {"identifier": "patperson"}, {"password": PASSWORD}, {"identifier": "İan", "password": "x"}]
)
def test_an_incomplete_form_is_said_and_counts_nothing(person, data, sql):
    response = Client().post(reverse("account-sign-in"), data)
    assert response.status_code == 400
    assert sql("SELECT count(*) FROM rate_limits") == [(0,)]


def test_sign_out_ends_the_session_and_forgets_the_cookie(signed_in):
    response = signed_in.post(reverse("account-sign-out"))
    assert response.status_code == 200 and "You are signed out" in page_text(response)
    assert response.cookies[COOKIE].value == ""
    assert AccountSession.objects.get().ended_by == SessionEnd.SIGN_OUT


def test_sign_out_without_a_session_says_the_same():
    response = Client().post(reverse("account-sign-out"))
    assert response.status_code == 200 and "You are signed out" in page_text(response)


def test_sign_out_is_a_post_only(signed_in):
    assert signed_in.get(reverse("account-sign-out")).status_code == 405
    assert AccountSession.objects.get().ended_at is None


def test_signing_in_again_ends_the_browsers_earlier_session(person, signed_in):
    earlier = signed_in.cookies[COOKIE].value
    sign_in(signed_in, person.login)
    assert signed_in.cookies[COOKIE].value != earlier
    assert sorted(AccountSession.objects.values_list("ended_by", flat=True), key=str) == [None, "sign-out"]


def test_after_activation_sign_in_leads_here_unless_a_product_page_is_set(settings):
    from tokens.pages import sign_in as sign_in_step

    settings.SIGN_IN_URL = ""
    assert [str(step.url) for step in sign_in_step()] == [reverse("account-sign-in")]
    settings.SIGN_IN_URL = "https://app.example.com/login"
    assert [step.url for step in sign_in_step()] == ["https://app.example.com/login"]


# Changing the password


def change(client: Client, current: str = PASSWORD, new: str = NEW, again: str | None = None, **headers):
    data = {"current_password": current, "password": new, "password_again": new if again is None else again}
    return client.post(reverse("account-password"), data, **headers)


def test_a_new_password_replaces_the_old_and_this_browser_stays_signed_in(person, signed_in, smtp_server):
    other = Client()
    sign_in(other, person.login)
    earlier = signed_in.cookies[COOKIE].value
    response = change(signed_in)
    assert response.status_code == 200 and "Your password is changed" in page_text(response)
    assert check_password(NEW, AccountPassword.objects.get(account=person).password)
    # Every session ended, this browser's with them; it holds a new one.
    assert signed_in.cookies[COOKIE].value != earlier
    assert signed_in.get(reverse("account")).status_code == 200
    assert other.get(reverse("account")).status_code == 302
    assert sorted(AccountSession.objects.values_list("ended_by", flat=True), key=str) == [None, "password", "password"]
    # The notice goes to the account's address, by the mailroom; the trail and the outbox say so.
    drain()
    (notice,) = smtp_server.messages
    assert notice["To"] == person.email and notice["Subject"] == "Your password was changed"
    assert f"{settings.PUBLIC_BASE_URL}{reverse('recover')}" in notice.get_body(("plain",)).get_content()
    audit = AuditEvent.objects.filter(action="account.password_set", resource_id=str(person.pk)).latest("occurred_at")
    assert (audit.actor_type, audit.actor_id, audit.actor_ip) == ("USER", f"account:{person.pk}", "127.0.0.1")
    assert OutboxEvent.objects.filter(event_type="account.password_changed", aggregate_id=str(person.pk)).exists()


def test_a_wrong_current_password_is_said_and_changes_nothing(person, signed_in):
    response = change(signed_in, current="not it at all")
    assert response.status_code == 400 and "This is not your current password." in page_text(response)
    assert check_password(PASSWORD, AccountPassword.objects.get(account=person).password)
    assert AccountSession.objects.get().ended_at is None


def test_a_new_password_the_validators_refuse_is_said_and_counts_no_try(person, signed_in, sql):
    response = change(signed_in, new="patperson")
    assert response.status_code == 400 and "too similar" in page_text(response)
    assert sql("SELECT count(*) FROM rate_limits") == [(0,)]
    assert check_password(PASSWORD, AccountPassword.objects.get(account=person).password)


def test_the_two_new_passwords_must_match(signed_in):
    response = change(signed_in, again="something else 42")
    assert response.status_code == 400 and "The two passwords differ." in page_text(response)


def test_the_password_page_needs_a_session():
    assert Client().get(reverse("account-password"))["Location"] == reverse("account-sign-in")
    assert change(Client())["Location"] == reverse("account-sign-in")


# Deleting the account


def test_deleting_with_the_password_closes_the_account_and_mails_the_restore_link(person, signed_in, smtp_server):
    assert "Your password confirms it is you." in page_text(signed_in.get(reverse("account-delete")))
    response = signed_in.post(reverse("account-delete"), {"password": PASSWORD})
    assert response.status_code == 200 and "Your account is closed" in page_text(response)
    assert response.cookies[COOKIE].value == ""
    person.refresh_from_db()
    assert person.status == AccountStatus.DEPROVISIONED
    assert AccountSession.objects.get().ended_by == SessionEnd.DEPROVISIONED
    deletion = Token.objects.get(account=person, action=TokenAction.DELETION)
    assert deletion.consumed_with == "password" and deletion.mail_state == "skipped"
    audit = AuditEvent.objects.get(action="account.deprovisioned", resource_id=str(person.pk))
    assert (audit.actor_id, audit.reason) == (f"account:{person.pk}", DELETION_REASON)
    drain()
    (restore,) = smtp_server.messages
    assert restore["To"] == person.email and "/restore/" in restore.get_body(("plain",)).get_content()
    assert "was closed at your request" in restore.get_body(("plain",)).get_content()
    assert signed_in.get(reverse("account")).status_code == 302


def test_a_wrong_password_deletes_nothing(person, signed_in):
    response = signed_in.post(reverse("account-delete"), {"password": "not it at all"})
    assert response.status_code == 400 and "This is not your password." in page_text(response)
    person.refresh_from_db()
    assert person.status == AccountStatus.ACTIVE and not Token.objects.filter(action=TokenAction.DELETION).exists()


def test_deleting_needs_a_session_and_a_post(signed_in):
    assert Client().post(reverse("account-delete"), {"password": PASSWORD})["Location"] == reverse("account-sign-in")
    signed_in.get(reverse("account-delete"), {"password": PASSWORD})
    assert AccountSession.objects.get().ended_at is None


# Changing the address


def change_email(client: Client, email: str, password: str = PASSWORD):
    return client.post(reverse("account-email"), {"email": email, "password": password})


def test_a_new_address_gets_a_link_and_the_old_one_stays_until_it_is_used(person, signed_in, smtp_server):
    response = change_email(signed_in, "pat.new@example.net")
    assert response.status_code == 200 and "Check your new address" in page_text(response)
    person.refresh_from_db()
    assert person.email == "Pat.Person@example.com"
    drain()
    (message,) = smtp_server.messages
    assert message["To"] == "pat.new@example.net" and "/email/" in message.get_body(("plain",)).get_content()


def test_the_same_answer_whether_or_not_another_account_holds_the_address(person, signed_in):
    AccountFactory(active=True, email="taken@example.net")
    taken = page_text(change_email(signed_in, "taken@example.net"), typed="taken@example.net")
    free = page_text(change_email(signed_in, "free@example.net"), typed="free@example.net")
    assert taken.replace("taken@", "X@") == free.replace("free@", "X@")


@pytest.mark.parametrize(
    ("email", "said"),
    [
        ("not-an-address", "E-mail is not a valid address"),
        ("Pat.Person@example.com", "This is your address already."),
    ],
)
def test_an_address_that_cannot_be_the_new_one_is_said_and_costs_no_try(person, signed_in, sql, email, said):
    response = change_email(signed_in, email)
    assert response.status_code == 400 and said in page_text(response)
    assert sql("SELECT count(*) FROM tokens WHERE action = 'email_change'") == [(0,)]
    assert sql("SELECT count(*) FROM rate_limits") == [(0,)]


def test_a_wrong_password_sends_nothing(person, signed_in, sql):
    response = change_email(signed_in, "pat.new@example.net", "not it at all")
    assert response.status_code == 400 and "This is not your password." in page_text(response)
    assert sql("SELECT count(*) FROM tokens WHERE action = 'email_change'") == [(0,)]


def test_asking_for_links_stops_at_the_accounts_mail_limit_whatever_the_addresses(person, signed_in, settings):
    settings.PUBLIC_LIMITS_PER_HOUR = {**settings.PUBLIC_LIMITS_PER_HOUR, "mail-per-account": 2}
    answers = [change_email(signed_in, f"pat.new{n}@example.net").status_code for n in range(3)]
    assert answers == [200, 200, 429]
