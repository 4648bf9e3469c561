"""Attacks on the account pages' sign-in and session (lifecycle/my_account/views.py): guessing stops at
the limits, on the same counters as the client API's password check; no answer tells an account that
exists from one that does not, or from one that may not sign in; a session cannot be planted, forged,
posted across sites, or used where it does not belong (the admin, the API); bad input is never a 500."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

import lifecycle.my_account.views as my_account_views
from accounts.models import Account, AccountSession, AccountStatus
from accounts.services import account_deprovision, account_password_hash, account_set_password
from lifecycle.demo.factories import AccountFactory
from lifecycle.my_account.views import COOKIE, WRONG
from platform_events.db.history import history_rewrite
from tests.lifecycle.api.conftest import Api
from tests.lifecycle.my_account.conftest import sign_in, with_password
from tests.support import NEW_PASSWORD, PASSWORD, in_threads, page_text, run_queued_tasks, staff_client
from tokens.links import landing_path
from tokens.mailroom.drain import drain
from tokens.models import Token, TokenAction
from tokens.selectors import live_token
from tokens.services import token_request_email_change

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


@pytest.mark.parametrize(
    "page", ["account-sign-in", "account-sign-out", "account-password", "account-email", "account-delete"]
)
def test_every_post_needs_the_csrf_token(person, signed_in, page):
    client = Client(enforce_csrf_checks=True)
    client.cookies[COOKIE] = signed_in.cookies[COOKIE].value
    data = {"identifier": person.login, "password": PASSWORD, "current_password": PASSWORD}
    data |= {"password_again": PASSWORD, "email": "elsewhere@example.net"}
    response = client.post(reverse(page), data)
    assert response.status_code == 403
    assert AccountSession.objects.count() == 1 and AccountSession.objects.get().ended_at is None
    person.refresh_from_db()
    assert (person.status, person.email) == ("active", "Pat.Person@example.com")
    assert not Token.objects.filter(action__in=[TokenAction.EMAIL_CHANGE, TokenAction.DELETION]).exists()


@pytest.mark.parametrize("action", [TokenAction.EMAIL_CHANGE, TokenAction.EMAIL_CHANGE_UNDO])
def test_the_address_links_need_the_csrf_token_too(person, action):
    token = token_request_email_change(account=person, email="pat.new@example.net", actor=None)
    if action == TokenAction.EMAIL_CHANGE_UNDO:
        Client().post(landing_path(token))
        token = Token.objects.get(account=person, action=action)
    assert Client(enforce_csrf_checks=True).post(landing_path(token)).status_code == 403
    assert Token.objects.get(pk=token.pk).consumed_at is None


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
    assert "<script>alert" not in page and "<img src=x" not in page


def test_the_password_is_never_shown_again(person):
    response = sign_in(Client(), person.login, "my secret guess 42")
    assert "my secret guess 42" not in response.content.decode()


def test_the_api_key_header_does_not_sign_in_to_the_pages(make_api):
    api = make_api("accounts:read", name="reader")
    assert isinstance(api, Api)
    assert Client().get(reverse("account"), HTTP_AUTHORIZATION=f"Bearer {api.key}").status_code == 302


# Taking the address, the password or the account: an independent look's attacks

VICTIM = "Pat.Person@example.com"  # the ``person`` fixture's address
EVIL = "evil@attacker.example"


def change_email(client: Client, email: str, password: str = PASSWORD):
    return client.post(reverse("account-email"), {"email": email, "password": password})


def link_in(smtp_server, to: str, path: str) -> str:
    """The path of the newest link under ``path`` mailed to ``to``."""
    drain()
    bodies = [m.get_body(("plain",)).get_content() for m in smtp_server.messages if m["To"] == to]
    found = [re.search(rf"https?://[^/\s]+({re.escape(path)}[A-Za-z0-9_-]{{43}})", body) for body in bodies]
    found = [match.group(1) for match in found if match]
    assert found, (to, path, bodies)
    return found[-1]


def take_over_address(signed_in, smtp_server) -> str:
    """The attacker holding the person's session and password moves the address to theirs; the path of
    the undo link the person's old address got."""
    assert change_email(signed_in, EVIL).status_code == 200
    confirm = link_in(smtp_server, EVIL, "/email/")
    assert "Your address is changed" in page_text(Client().post(confirm))
    return link_in(smtp_server, VICTIM, "/email/undo/")


def test_deleting_and_restoring_does_not_take_the_undo_away(person, signed_in, smtp_server):
    """The attack: with a stolen session and the password, change the address to the attacker's, then
    delete the account by password and restore it from the restore e-mail (which goes to the attacker's
    address), and activate it again. The undo the old address got must still put it back (the rules say
    whoever changed the address cannot take the undo away)."""
    undo = take_over_address(signed_in, smtp_server)
    refused = signed_in.post(reverse("account-delete"), {"password": PASSWORD})
    assert refused.status_code == 409 and "Your address changed lately" in page_text(refused)
    Client().post(reverse("delete-account"), {"identifier": EVIL})  # nor by the mailed link
    run_queued_tasks()
    drain()
    assert not [
        m for m in smtp_server.messages if m["To"] == EVIL and "/delete/" in m.get_body(("plain",)).get_content()
    ]
    person.refresh_from_db()
    assert person.status == AccountStatus.ACTIVE
    response = Client().post(undo)
    person.refresh_from_db()
    assert person.email == VICTIM, (response.status_code, page_text(response))


def test_the_undo_voids_the_recovery_link_mailed_to_the_attackers_address(person, signed_in, smtp_server):
    """The attack: after moving the address, ask /recover/ for the attacker's address; the person undoes
    the change (which signs everyone out); the recovery link mailed to the attacker's address must no
    longer set a password for the account it was sent for."""
    undo = take_over_address(signed_in, smtp_server)
    Client().post(reverse("recover"), {"identifier": EVIL})
    run_queued_tasks()
    recover = link_in(smtp_server, EVIL, "/recover/")
    assert "Your address is back" in page_text(Client().post(undo))
    Client().post(
        recover, {"password": "a password of the attacker 42", "password_again": "a password of the attacker 42"}
    )
    attacker = Client()
    response = sign_in(attacker, person.login, "a password of the attacker 42")
    assert response.status_code != 302, "the recovery link mailed to the attacker's address still set the password"


def test_another_persons_address_typed_on_the_email_page_does_not_spend_their_recovery_allowance(
    person, signed_in, smtp_server
):
    """The attack: a signed-in stranger (their own account and password) types the victim's address as
    their new address 3 times; the victim's own /recover/ with that address must still be answered,
    not 429 (the pages share mail-per-identifier)."""
    victim = AccountFactory(active=True, email="victim@example.org", login="victim")
    for _ in range(3):
        change_email(signed_in, victim.email)
    response = Client(REMOTE_ADDR="198.51.100.77").post(reverse("recover"), {"identifier": victim.email})
    assert response.status_code == 200, page_text(response)


def test_the_undo_after_the_old_address_was_claimed_is_an_answer_not_a_500(person, signed_in, smtp_server):
    """The old address, freed by the change, taken by a new account meanwhile: the undo answers, never
    a 500, and the address stays the other account's."""
    undo = take_over_address(signed_in, smtp_server)
    AccountFactory(active=True, email=VICTIM.lower(), login="newcomer")
    response = Client(raise_request_exception=False).post(undo)
    assert response.status_code < 500


def test_a_get_on_the_delete_and_email_pages_changes_nothing(person, signed_in, sql):
    signed_in.get(reverse("account-delete"), {"password": PASSWORD})
    signed_in.get(reverse("account-email"), {"email": "x@example.net", "password": PASSWORD})
    signed_in.get(reverse("account-password"), {"current_password": PASSWORD, **NEW_PASSWORD})
    person.refresh_from_db()
    assert person.status == AccountStatus.ACTIVE
    assert sql("SELECT count(*) FROM tokens WHERE action IN ('email_change', 'deletion', 'password_changed')") == [(0,)]


@pytest.mark.parametrize("page", ["account-delete", "account-email", "account-password"])
def test_the_account_forms_refuse_a_post_without_the_csrf_token(person, page):
    client = Client(enforce_csrf_checks=True)
    sign_in_page = client.get(reverse("account-sign-in"))
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', sign_in_page.content.decode()).group(1)
    client.post(
        reverse("account-sign-in"), {"identifier": person.login, "password": PASSWORD, "csrfmiddlewaretoken": token}
    )
    response = client.post(
        reverse(page),
        {"password": PASSWORD, "email": "x@example.net", "current_password": PASSWORD, "password_again": PASSWORD},
    )
    assert response.status_code == 403
    person.refresh_from_db()
    assert person.status == AccountStatus.ACTIVE


BAD = ["", " ", "\x00", "a" * 300, "a@b", "é@example.com", "x@example.com\r\nBcc: y@example.com", "=?utf-8?q?x?=@a.com"]


@pytest.mark.parametrize("value", BAD)
def test_bad_input_on_the_email_form_is_a_form_again(person, signed_in, value, sql):
    response = signed_in.post(reverse("account-email"), {"email": value, "password": value or "x"})
    assert response.status_code in (400, 429)
    assert sql("SELECT count(*) FROM tokens WHERE action = 'email_change'") == [(0,)]


@pytest.mark.parametrize("value", BAD)
def test_bad_input_on_the_password_and_delete_forms_is_a_form_again(person, signed_in, value):
    for page, data in (
        ("account-password", {"current_password": value, "password": value, "password_again": value}),
        ("account-delete", {"password": value}),
    ):
        assert signed_in.post(reverse(page), data).status_code in (400, 429)
    person.refresh_from_db()
    assert person.status == AccountStatus.ACTIVE


def test_the_password_notice_goes_once_per_change_and_holds_no_usable_secret(person, signed_in, smtp_server):
    response = signed_in.post(
        reverse("account-password"),
        {
            "current_password": PASSWORD,
            "password": "a brand new pass phrase 88",
            "password_again": "a brand new pass phrase 88",
        },
    )
    assert response.status_code == 200
    drain()
    drain()
    notices = [m for m in smtp_server.messages if "password" in m["Subject"].lower()]
    assert [m["To"] for m in notices] == [VICTIM]
    body = notices[0].get_body(("plain",)).get_content()
    notice = Token.objects.get(account=person, action=TokenAction.PASSWORD_CHANGED)
    assert not re.search(r"/(activate|recover|delete|restore|email)/[A-Za-z0-9_-]{43}", body)
    assert not re.search(r"\b\d{5}\b", body.replace(str(notice.expires_at.year), ""))


def test_a_secret_of_an_email_change_opens_no_other_page(person, signed_in, smtp_server):
    change_email(signed_in, EVIL)
    confirm = link_in(smtp_server, EVIL, "/email/")
    secret = confirm.rsplit("/", 1)[1]
    client = Client()
    for prefix in ("/activate/", "/recover/", "/delete/", "/restore/", "/email/undo/"):
        assert client.post(prefix + secret).status_code == 404, prefix
    assert Account.objects.get(pk=person.pk).email == VICTIM
    assert live_token(account=person, action=TokenAction.EMAIL_CHANGE) is not None


PENDING = "pending.address@example.org"


def test_an_erased_account_leaves_no_copy_of_any_address_it_had_or_asked_for(person, signed_in, smtp_server, sql):
    """Changed from its first address to a second, a third asked for and never confirmed, then closed
    and erased: no row of the trail, the outbox, the tokens or the rate limits keeps any of the three."""
    from accounts.erasure import account_erase
    from platform_events.limits.counters import key_digest

    undo = take_over_address(signed_in, smtp_server)
    Client().post(undo)  # the old address back: the address may change again
    signed_in = Client()
    sign_in(signed_in, person.login)
    assert change_email(signed_in, PENDING).status_code == 200
    drain()
    assert signed_in.post(reverse("account-delete"), {"password": PASSWORD}).status_code == 200
    drain()
    person.refresh_from_db()
    account_erase(account=person, actor=None)
    left = {}
    for address in (VICTIM, EVIL, PENDING):
        left[address] = sql(
            "SELECT 'audit', id::text FROM audit_events e WHERE strpos(lower(to_jsonb(e)::text), %s) > 0"
            " UNION ALL SELECT 'outbox', id::text FROM outbox_events o WHERE strpos(lower(to_jsonb(o)::text), %s) > 0"
            " UNION ALL SELECT 'token', id::text FROM tokens t WHERE strpos(lower(to_jsonb(t)::text), %s) > 0"
            " UNION ALL SELECT 'rate_limit', bucket FROM rate_limits WHERE split_part(bucket, ':', 2) = %s",
            [address.lower()] * 3 + [key_digest(address)],
        )
    assert left == {VICTIM: [], EVIL: [], PENDING: []}


def test_a_closed_accounts_address_cannot_be_taken_by_a_change(person, signed_in, smtp_server):
    """An activated account closed (deprovisioned, restorable) still holds its address: another account's
    change to it is refused when used, and the closed account can still be restored with it."""
    from accounts.services import account_deprovision

    closed = AccountFactory(active=True, email="closed@example.org", login="closed")
    account_deprovision(account=closed, actor=None)
    assert change_email(signed_in, "Closed@Example.org").status_code == 200
    confirm = link_in(smtp_server, "Closed@Example.org", "/email/")
    Client().post(confirm)
    person.refresh_from_db()
    assert person.email == VICTIM


def test_a_pending_change_dies_with_the_password_that_asked_for_it(person, signed_in, smtp_server):
    """The attack: with a stolen session and the password, ask for the attacker's address (the old
    address is told nothing yet). The person, worried, recovers a new password, which signs every
    browser out; the link already at the attacker's address must no longer take the address."""
    assert change_email(signed_in, EVIL).status_code == 200
    confirm = link_in(smtp_server, EVIL, "/email/")
    Client().post(reverse("recover"), {"identifier": person.login})
    run_queued_tasks()
    recover = link_in(smtp_server, VICTIM, "/recover/")
    Client().post(
        recover, {"password": "the persons new pass phrase 9", "password_again": "the persons new pass phrase 9"}
    )
    assert sign_in(Client(), person.login, "the persons new pass phrase 9").status_code == 302
    Client().post(confirm)
    person.refresh_from_db()
    assert person.email == VICTIM


def test_a_password_removed_and_set_again_by_hand_still_sends_the_notice(person, sql):
    """As the runtime role (psql): DELETE the password row, INSERT a new one. The account is active and its
    password changed: the notice must be issued, as for an UPDATE."""
    with history_rewrite():  # activated in an earlier transaction than this change, as a person's account is
        sql("UPDATE accounts SET activated_at = now() - interval '1 day' WHERE id = %s", [person.pk])
    sql("DELETE FROM account_passwords WHERE account = %s", [person.pk])

    sql(
        "INSERT INTO account_passwords (account, password) VALUES (%s, %s)",
        [person.pk, account_password_hash("forged pass 12345")],
    )
    assert sql("SELECT count(*) FROM tokens WHERE account = %s AND action = 'password_changed'", [person.pk]) != [(0,)]


@pytest.fixture
def api(make_api):
    """A client application with every scope."""
    from platform_events.api.models import ApiScope

    return make_api(*ApiScope.values, name="billing")


@pytest.mark.parametrize(
    "body",
    [
        {"email": "\x00"},
        {"email": "a" * 5000 + "@example.com"},
        {"email": ["x@example.com"]},
        {"email": {"$ne": 1}},
        {"email": 12},
        {"email": None},
        {},
        {"email": "x@example.com", "extra": 1},
        {"email": "X@EXAMPLE.COM\r\nBcc: y@example.com"},
        {"email": "é@example.com"},
    ],
)
def test_bad_input_on_the_email_change_api_is_a_problem_never_a_500(api, body, sql):
    account = AccountFactory(active=True, email="ada@example.com")
    response = api.post(f"/accounts/{account.pk}/email-change", body)
    assert 400 <= response.status_code < 500, response.content
    assert sql("SELECT count(*) FROM tokens WHERE action = 'email_change'") == [(0,)]


def test_the_email_change_api_for_an_account_that_is_not_there_or_not_active(api):
    for account_id in (999999, 0, -1, 2**63):
        assert 400 <= api.post(f"/accounts/{account_id}/email-change", {"email": "x@example.com"}).status_code < 500
    closed = AccountFactory(active=True)
    from accounts.services import account_deprovision

    account_deprovision(account=closed, actor=None)
    assert api.post(f"/accounts/{closed.pk}/email-change", {"email": "x@example.com"}).status_code == 409


def test_a_change_soon_after_a_change_waits_for_the_undo(person, signed_in, smtp_server):
    """The person moves from their old address (one they are leaving) to a new one; days later, within the
    first undo's 7 days, an attacker with the session and password tries to move it on to theirs. The
    address in use would not be told (one undo is live at a time), so the change waits for the undo."""
    current = "pat.current@example.net"
    assert change_email(signed_in, current).status_code == 200
    Client().post(link_in(smtp_server, current, "/email/"))
    signed_in = Client()
    sign_in(signed_in, person.login)
    refused = change_email(signed_in, EVIL)
    assert refused.status_code == 409 and "Your address changed lately" in page_text(refused)
    person.refresh_from_db()
    assert person.email == current
