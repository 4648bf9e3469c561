"""Attacks on the account pages' sign-in and session (lifecycle/my_account/views.py): guessing stops at
the limits, on the same counters as the client API's password check; no answer tells an account that
exists from one that does not, or from one that may not sign in; a session cannot be planted, forged,
posted across sites, or used where it does not belong (the admin, the API); bad input is never a 500."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

import lifecycle.my_account.views as my_account_views
from accounts.models import AccountSession
from accounts.services import account_deprovision, account_password_hash, account_set_password
from lifecycle.my_account.views import COOKIE, WRONG
from tests.lifecycle.api.conftest import Api
from tests.lifecycle.my_account.conftest import sign_in, with_password
from tests.support import PASSWORD, in_threads, page_text, staff_client

pytestmark = [pytest.mark.attack, pytest.mark.django_db]


def statuses(client: Client, name: str, password: str, times: int, **headers) -> list[int]:
    return [sign_in(client, name, password, **headers).status_code for _ in range(times)]


# No oracle


def refusal(name: str, password: str = PASSWORD) -> tuple[int, str]:
    response = sign_in(Client(), name, password, REMOTE_ADDR="203.0.113.50")
    return response.status_code, page_text(response, typed=name)


def test_unknown_wrong_password_suspended_deprovisioned_and_never_activated_look_the_same(db):
    with_password(login="wrongpw")
    with_password(login="suspended", suspended=True)
    with_password(login="neveractive", active=False)
    account_deprovision(account=with_password(login="deprovisioned"), actor=None)
    answers = {
        "unknown": refusal("nobodyhere"),
        "wrong password": refusal("wrongpw", "not the password"),
        "suspended, right password": refusal("suspended"),
        "deprovisioned, right password": refusal("deprovisioned"),
        "never activated, right password": refusal("neveractive"),
    }
    assert {status for status, _ in answers.values()} == {400}
    assert len({page for _, page in answers.values()}) == 1, answers.keys()
    assert WRONG in answers["unknown"][1]
    assert not AccountSession.objects.exists()


def test_a_right_password_of_an_account_that_may_not_sign_in_counts_as_a_failure(db, settings):
    """Else a guesser could tell it from a wrong one by the limits: it would never meet them."""
    settings.API_SESSION_FAILURES_PER_NAME_AND_ADDRESS = 2
    with_password(login="suspended", suspended=True)
    assert statuses(Client(), "suspended", PASSWORD, 3, REMOTE_ADDR="203.0.113.51") == [400, 400, 429]


# Guessing


def test_guesses_at_one_name_from_one_address_stop_for_the_hour_even_with_the_right_password(person, settings):
    settings.API_SESSION_FAILURES_PER_NAME_AND_ADDRESS = 3
    client = Client()
    assert statuses(client, person.login, "guess", 3, REMOTE_ADDR="198.51.100.7") == [400] * 3
    refused = sign_in(client, person.login, PASSWORD, REMOTE_ADDR="198.51.100.7")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert not AccountSession.objects.exists()
    # The person, from their own address, is not kept out.
    assert sign_in(Client(), person.login, PASSWORD, REMOTE_ADDR="203.0.113.9").status_code == 302


def test_guesses_at_one_name_spread_over_addresses_meet_its_delays(person, settings):
    settings.API_SESSION_FAILURES_PER_NAME = 2
    settings.API_SESSION_NEW_ADDRESS_FAILURES_PER_NAME = 2
    answers = [
        sign_in(Client(), person.login, f"guess {n}", REMOTE_ADDR=f"198.51.100.{n}").status_code for n in range(1, 7)
    ]
    assert answers[:4] == [400] * 4 and answers[-1] == 429
    assert sign_in(Client(), person.login, PASSWORD, REMOTE_ADDR="198.51.100.200").status_code == 429


def test_guesses_across_many_names_from_one_address_stop(db, settings):
    settings.API_SESSION_FAILURES_PER_ADDRESS = 5
    answers = [sign_in(Client(), f"made-up-{n}", "guess", REMOTE_ADDR="198.51.100.9").status_code for n in range(6)]
    assert answers == [400] * 5 + [429]


def test_strangers_failing_everywhere_do_not_keep_out_a_person_who_mistyped_once(person, settings):
    """The pages have no count of their own for all visitors (the client API's per-client limit): a
    stranger failing on made-up names from many addresses leaves a person's own address alone."""
    settings.API_SESSION_FAILURES_PER_CLIENT = 3
    for n in range(10):
        assert sign_in(Client(), f"made-up-{n}", "guess", REMOTE_ADDR=f"198.51.100.{n}").status_code == 400
    assert sign_in(Client(), person.login, "a typo", REMOTE_ADDR="203.0.113.9").status_code == 400
    assert sign_in(Client(), person.login, PASSWORD, REMOTE_ADDR="203.0.113.9").status_code == 302


def test_failures_through_the_api_count_on_the_page_too(person, settings, make_api):
    """One name's failures count once, whichever way they came: the API's (with the person's address)
    and the page's fill the same count."""
    settings.API_SESSION_FAILURES_PER_NAME_AND_ADDRESS = 4
    gateway = make_api("sessions", "sessions:client-address", name="gateway")
    for n in range(2):
        body = {"identifier": person.login, "password": f"guess {n}", "client_address": "198.51.100.77"}
        assert gateway.post("/sessions", body, key=None).status_code == 403
    assert statuses(Client(), person.login, "guess", 3, REMOTE_ADDR="198.51.100.77") == [400, 400, 429]
    body = {"identifier": person.login, "password": PASSWORD, "client_address": "198.51.100.77"}
    assert gateway.post("/sessions", body, key=None).status_code == 429


# The session


@pytest.mark.django_db(transaction=True)
def test_a_password_changed_while_a_sign_in_checks_the_old_one_leaves_no_live_session(monkeypatch):
    """Whoever knows the old password signs in again and again (successes are not limited); one
    sign-in is between its password check and its session when the owner sets a new password (a
    recovery link, in another request). The new password must end that session too; here the
    session starts after the change, live for ACCOUNT_SESSION_HOURS, with the old password."""
    person = with_password(login="patperson", email="pat.person@example.com")
    checked = my_account_views.password_checked

    def owner_changes_password_meanwhile(check, password, **kwargs):
        answer = checked(check, password, **kwargs)
        threads, results = in_threads(
            lambda: account_set_password(
                account=person, password_hash=account_password_hash("the owner's new one 42"), actor=None
            )
        )
        for thread in threads:
            thread.join()
        assert results == [(True, None)], results
        return answer

    monkeypatch.setattr(my_account_views, "password_checked", owner_changes_password_meanwhile)
    attacker = Client()
    sign_in(attacker, person.login, REMOTE_ADDR="198.51.100.23")
    assert not AccountSession.objects.filter(account=person, ended_at__isnull=True).exists()
    assert attacker.get(reverse("account")).status_code == 302


def test_a_password_removed_and_set_again_ends_the_sessions(person, signed_in, sql):
    """docs/rules.md: a new password ends every session, "whether it came from the account page, a
    recovery link, the API or psql". As the runtime role: DELETE the password row, then set a new one
    (the service's INSERT path, not an UPDATE): the trigger, AFTER UPDATE OF password only, never fires,
    and the browser that knew the old password stays signed in."""
    sql("DELETE FROM account_passwords WHERE account = %s", [person.pk])
    account_set_password(account=person, password_hash=account_password_hash("a brand new one 42"), actor=None)
    assert sql("SELECT count(*) FROM account_sessions WHERE ended_at IS NULL") == [(0,)]
    assert signed_in.get(reverse("account")).status_code == 302


def test_a_remote_addr_that_is_not_an_ip_address_is_never_a_500(person):
    """client_ip() passes REMOTE_ADDR on as the server put it (address_key's docstring expects "text that
    is not an address"), and the sign-in stores it in an inet column: the right password is a 500."""
    client = Client(raise_request_exception=False)
    response = sign_in(client, person.login, REMOTE_ADDR="unix:")
    assert response.status_code == 302


def test_a_planted_cookie_is_never_adopted_at_sign_in(person):
    """Session fixation: whatever cookie the browser held before, the sign-in mints a new secret."""
    attacker = with_password(login="attacker")
    planted = Client()
    sign_in(planted, attacker.login)
    planted_secret = planted.cookies[COOKIE].value
    victim = Client()
    victim.cookies[COOKIE] = planted_secret  # set by the attacker on the victim's browser
    sign_in(victim, person.login)
    assert victim.cookies[COOKIE].value != planted_secret
    # The planted session ended; it shows nobody's account, the victim's least of all.
    mallory = Client()
    mallory.cookies[COOKIE] = planted_secret
    assert mallory.get(reverse("account")).status_code == 302
    assert person.login in page_text(victim.get(reverse("account")))


def test_a_made_up_cookie_signs_nobody_in(person):
    sign_in(Client(), person.login)
    for value in ["x", "A" * 43, "", "' OR 1=1 --", "\u00e9" * 10, "A" * 10_000]:
        client = Client()
        client.cookies[COOKIE] = value
        assert client.get(reverse("account")).status_code == 302, value


def test_the_secret_is_not_the_stored_digest(person, sql):
    client = Client()
    sign_in(client, person.login)
    ((digest,),) = sql("SELECT encode(secret_digest, 'hex') FROM account_sessions")
    forged = Client()
    forged.cookies[COOKIE] = digest
    assert forged.get(reverse("account")).status_code == 302


def test_an_end_user_session_is_refused_by_the_admin_and_the_api(signed_in):
    response = signed_in.get("/admin/")
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    assert signed_in.get("/api/v1/accounts").status_code == 401


def test_a_staff_session_is_never_an_end_user_session(db):
    staff = staff_client("Support")
    assert staff.get(reverse("account")).status_code == 302
    get_user_model().objects.create_user("staffer", password=PASSWORD, is_staff=True)
    # Staff are not accounts: their name and password sign in to nothing here.
    assert sign_in(Client(), "staffer").status_code == 400


@pytest.mark.parametrize("page", ["account-sign-in", "account-sign-out"])
def test_every_post_needs_the_csrf_token(person, signed_in, page):
    client = Client(enforce_csrf_checks=True)
    client.cookies[COOKIE] = signed_in.cookies[COOKIE].value
    response = client.post(reverse(page), {"identifier": person.login, "password": PASSWORD})
    assert response.status_code == 403
    assert AccountSession.objects.count() == 1 and AccountSession.objects.get().ended_at is None


def test_a_get_changes_nothing(person, signed_in, sql):
    before = sql("SELECT count(*), count(ended_at) FROM account_sessions")
    for page in ["account", "account-sign-in"]:
        signed_in.get(reverse(page), {"identifier": person.login, "password": PASSWORD})
    assert signed_in.get(reverse("account-sign-out")).status_code == 405
    assert sql("SELECT count(*), count(ended_at) FROM account_sessions") == before


@pytest.mark.parametrize("value", ["\x00", "a\x00b", "x" * 100_000, "\u0130\u212a\U0001f600", "\n", "<script>", ""])
def test_nasty_values_are_never_a_500(person, value):
    client = Client(raise_request_exception=False)
    for data in ({"identifier": value, "password": PASSWORD}, {"identifier": person.login, "password": value}):
        assert client.post(reverse("account-sign-in"), data).status_code < 500
    if value.isascii():  # a header is bytes: a browser sends no character past Latin-1 in a cookie
        client.cookies[COOKIE] = value.replace("\n", "")
        assert client.get(reverse("account")).status_code < 500
        assert client.get(reverse("account-sign-in"), HTTP_USER_AGENT=value).status_code < 500


@pytest.mark.parametrize(
    "user_agent", ["<script>alert(1)</script>\x00", "Mozilla/5.0 <img src=x onerror=alert(1)>/1.0"]
)
def test_a_nasty_browser_name_is_kept_harmless(person, user_agent):
    client = Client()
    sign_in(client, person.login, HTTP_USER_AGENT=user_agent)
    page = page_text(client.get(reverse("account")))
    assert "<script>alert" not in page and "<img" not in page


def test_the_password_is_never_shown_again(person):
    response = sign_in(Client(), person.login, "my secret guess 42")
    assert "my secret guess 42" not in response.content.decode()


def test_the_api_key_header_does_not_sign_in_to_the_pages(make_api):
    api = make_api("accounts:read", name="reader")
    assert isinstance(api, Api)
    assert Client().get(reverse("account"), HTTP_AUTHORIZATION=f"Bearer {api.key}").status_code == 302
