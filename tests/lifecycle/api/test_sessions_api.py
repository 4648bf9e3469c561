"""POST /api/v1/sessions: a login or e-mail and a password give the account's id and status; the
same answer, after the same work, for a wrong password and for a name nobody has; failures limited
per name (as typed, by growing delays), per name and the person's address when the client may give
it, per address and per client, all before the password is hashed."""

import re

import pytest
from django.contrib.auth.hashers import Argon2PasswordHasher
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.services import account_deprovision, account_password_hash, account_set_password
from lifecycle.demo.factories import AccountFactory
from platform_events.api.models import IdempotencyKey
from tests.lifecycle.api.conftest import ADA_PASSWORD

pytestmark = pytest.mark.django_db

PASSWORD = ADA_PASSWORD


def check(api, identifier, password):
    return api.post("/sessions", {"identifier": identifier, "password": password}, key=None)


def test_the_right_password_by_login_or_e_mail_gives_the_account(api, ada):
    for identifier in ("ada", "ADA@example.com"):
        response = check(api, identifier, PASSWORD)
        assert response.status_code == 200
        assert response.json() == {"account_id": ada.pk, "status": "active"}
    assert not IdempotencyKey.objects.exists()  # the body, a password, is never stored


def test_a_suspended_account_is_answered_with_its_status(api, ada):
    api.post(f"/accounts/{ada.pk}/suspend", {"reason": "chargeback"})

    assert check(api, "ada", PASSWORD).json() == {"account_id": ada.pk, "status": "suspended"}


@pytest.mark.parametrize(
    "attempts",
    [
        [("ada", "wrong"), ("nobody", "wrong"), ("nopass", "x"), ("gone", PASSWORD)],
        [
            ("ada@example.com", "wrong"),
            ("nobody@example.com", PASSWORD),
            ("nopass@example.com", "x"),
            ("gone@example.com", PASSWORD),
        ],
    ],
    ids=["by login", "by e-mail"],
)
def test_a_wrong_password_a_name_nobody_has_and_an_account_without_a_password_look_the_same(api, ada, attempts):
    """... and the right password of a deprovisioned account ("gone"): it is nobody's now."""
    AccountFactory(login="nopass", email="nopass@example.com")
    gone = AccountFactory(active=True, login="gone", email="gone@example.com")
    account_set_password(account=gone, password_hash=account_password_hash(PASSWORD), actor=None)
    account_deprovision(account=gone, actor=None)
    answers, statements = [], []
    for identifier, password in attempts:
        with CaptureQueriesContext(connection) as queries:
            response = check(api, identifier, password)
        answers.append((response.status_code, response.json()))
        # The statements, not their values: the same work for each (the API client's own lookup aside).
        statements.append(
            [
                re.sub(r"'[^']*'|\b\d+\b|\"s\d+_x\d+\"", "?", q["sql"])  # values, and savepoints' names
                for q in queries.captured_queries
                if "api_clients" not in q["sql"]
            ]
        )
    assert answers[0][0] == 403 and answers[0][1]["type"] == "/api/v1/problems/invalid-credentials"
    assert all(answer == answers[0] for answer in answers)
    assert all(s == statements[0] for s in statements)


def end_holds(sql):
    """End the names' holds, as waiting them out would (a test's transaction has one now())."""
    sql("DELETE FROM rate_limits WHERE bucket LIKE 'api-session-name.held:%'")


def test_failures_past_the_free_ones_hold_the_name_as_typed(api, ada, settings):
    """After the free failures on a name (any case), the next failure holds it: a check meanwhile is
    refused with 429 and Retry-After, even with the right password."""
    settings.API_SESSION_FAILURES_PER_NAME = 2
    for identifier in ("ada", "ADA", "aDa"):
        assert check(api, identifier, "wrong").status_code == 403

    held = check(api, "Ada", PASSWORD)

    assert held.status_code == 429 and held.json()["type"] == "/api/v1/problems/rate-limited"
    assert held["Retry-After"] == "1"
    # The address is another name: counted apart, so that a 429 on it never says that the two belong
    # together (a name nobody has would answer 403).
    assert check(api, "ada@example.com", PASSWORD).status_code == 200


def test_the_delays_double_up_to_the_longest_and_then_the_name_signs_in(api, ada, settings, sql):
    """Each failure past the free ones holds the name twice as long as the one before, never longer
    than API_SESSION_LONGEST_DELAY_SECONDS; no failure locks it for longer: once the hold ends, the
    right password signs in."""
    settings.API_SESSION_FAILURES_PER_NAME = 1
    settings.API_SESSION_LONGEST_DELAY_SECONDS = 5
    waits = []
    for _ in range(6):
        assert check(api, "ada", "wrong").status_code == 403
        held = check(api, "ada", PASSWORD)
        waits.append(int(held["Retry-After"]) if held.status_code == 429 else 0)
        end_holds(sql)

    assert waits == [0, 1, 2, 4, 5, 5]
    assert check(api, "ada", PASSWORD).status_code == 200


def test_a_name_nobody_has_is_held_as_any_name_is(api, settings):
    settings.API_SESSION_FAILURES_PER_NAME = 2
    answers = [check(api, "nobody", "wrong").status_code for _ in range(4)]

    assert answers == [403, 403, 403, 429]


def test_a_non_ascii_name_is_refused_before_any_lookup(api, ada):
    for name in ("\u0130da", "ad\u0430"):  # a dotted capital I; a Cyrillic a
        response = check(api, name, PASSWORD)
        assert response.status_code == 422 and response.json()["type"] == "/api/v1/problems/validation-failed"


def test_failures_are_limited_per_client(api, make_api, ada, settings):
    settings.API_SESSION_FAILURES_PER_CLIENT = 2
    for name in ("x1", "x2"):
        check(api, name, "wrong")

    refused = check(api, "ada", PASSWORD)
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    other_client = make_api("sessions")
    assert check(other_client, "ada", PASSWORD).status_code == 200


def test_successes_cost_no_count(api, ada, settings):
    settings.API_SESSION_FAILURES_PER_NAME = 0
    for _ in range(3):
        assert check(api, "ada", PASSWORD).status_code == 200


class CountingHasher(Argon2PasswordHasher):
    """Django's Argon2 hasher, counting the hashes it computes (a check or a new hash: the same work)."""

    computed = 0

    def encode(self, password, salt):
        CountingHasher.computed += 1
        return super().encode(password, salt)  # "counting$argon2id$...": Argon2's, under this algorithm's name

    def verify(self, password, encoded):
        CountingHasher.computed += 1
        return super().verify(password, encoded)

    algorithm = "counting"


def test_every_answer_costs_one_password_hash(api, settings):
    settings.PASSWORD_HASHERS = [f"{__name__}.CountingHasher"]
    ada = AccountFactory(active=True, login="ada", email="ada@example.com")
    account_set_password(account=ada, password_hash=account_password_hash(PASSWORD), actor=None)
    AccountFactory(login="nopass", email="nopass@example.com")
    gone = AccountFactory(active=True, login="gone", email="gone@example.com")
    account_set_password(account=gone, password_hash=account_password_hash(PASSWORD), actor=None)
    account_deprovision(account=gone, actor=None)
    attempts = [("ada", PASSWORD), ("ada", "wrong"), ("nobody", "wrong"), ("nopass", "x"), ("gone", PASSWORD)]
    for identifier, password in attempts:
        before = CountingHasher.computed
        response = check(api, identifier, password)
        assert CountingHasher.computed - before == 1, identifier
        assert response.status_code == (200 if identifier == "ada" and password == PASSWORD else 403)


@pytest.fixture
def counting_hasher(settings):
    settings.PASSWORD_HASHERS = [f"{__name__}.CountingHasher"]

    def hashes_during(work) -> int:
        before = CountingHasher.computed
        work()
        return CountingHasher.computed - before

    return hashes_during


@pytest.mark.parametrize("spent", ["a held name", "a spent client", "a spent name and address"])
def test_a_refused_check_costs_no_password_hash(make_api, counting_hasher, settings, spent):
    """A check a limit refuses answers 429 before any password is hashed: a stranger's flood of
    refused checks costs no Argon2 work."""
    settings.API_SESSION_FAILURES_PER_NAME = 0
    settings.API_SESSION_FAILURES_PER_CLIENT = 1000 if spent != "a spent client" else 1
    settings.API_SESSION_FAILURES_PER_NAME_AND_ADDRESS = 1
    api = make_api("sessions", "sessions:client-address")
    ada = AccountFactory(active=True, login="ada", email="ada@example.com")
    account_set_password(account=ada, password_hash=account_password_hash(PASSWORD), actor=None)
    body = {"identifier": "ada", "password": "wrong"}
    if spent == "a spent name and address":
        body["client_address"] = "198.51.100.7"
    assert counting_hasher(lambda: api.post("/sessions", body, key=None)) == 1

    responses = []
    assert counting_hasher(lambda: responses.append(api.post("/sessions", body, key=None))) == 0
    assert responses[0].status_code == 429


def with_address(api, identifier, password, address):
    body = {"identifier": identifier, "password": password, "client_address": address}
    return api.post("/sessions", body, key=None)


@pytest.fixture
def gateway(make_api):
    """A client trusted to give the person's address."""
    return make_api("sessions", "sessions:client-address", name="gateway")


def test_the_person_signs_in_from_another_address_while_a_stranger_hammers_from_one(gateway, ada, settings):
    """A stranger's failures from one address lock that address out of the name for the hour, and
    hold nobody else, even past the name's free failures: the person, from their own address, signs
    in at once."""
    settings.API_SESSION_FAILURES_PER_NAME = 3
    answers = [with_address(gateway, "ada", f"guess {n}", "198.51.100.7").status_code for n in range(40)]

    assert answers[:4] == [403] * 4  # the 4th failure holds the name for 1 s
    assert set(answers[4:]) == {429}
    locked = with_address(gateway, "ada", PASSWORD, "198.51.100.7")
    assert locked.status_code == 429 and int(locked["Retry-After"]) >= 1
    assert with_address(gateway, "ada", PASSWORD, "203.0.113.9").status_code == 200


def test_a_stranger_from_many_addresses_holds_only_the_addresses_that_failed(gateway, ada, settings, sql):
    """Failures from many addresses past the name's free ones hold the name for the addresses that
    failed on it and for checks that give no address; an address that never failed on it is not held."""
    settings.API_SESSION_FAILURES_PER_NAME = 3
    for n in range(5):
        assert with_address(gateway, "ada", "guess", f"198.51.100.{n}").status_code in (403, 429)

    assert with_address(gateway, "ada", PASSWORD, "198.51.100.1").status_code == 429
    assert check(gateway, "ada", PASSWORD).status_code == 429
    assert with_address(gateway, "ada", PASSWORD, "203.0.113.9").status_code == 200


def test_past_the_new_addresses_failures_the_delays_hold_every_address(gateway, ada, settings):
    """Many addresses failing on a name (a botnet, or a client passing on addresses a guesser chose)
    each get through its delays once, until API_SESSION_NEW_ADDRESS_FAILURES_PER_NAME in the hour;
    then the delays hold every address, the person's too, for at most the longest delay."""
    settings.API_SESSION_FAILURES_PER_NAME = 1
    settings.API_SESSION_NEW_ADDRESS_FAILURES_PER_NAME = 3
    settings.API_SESSION_LONGEST_DELAY_SECONDS = 60
    answers = [with_address(gateway, "ada", "guess", f"198.51.100.{n}").status_code for n in range(8)]

    # The first is free and the second holds the name; three new addresses come through; then none.
    assert answers == [403, 403, 403, 403, 403, 429, 429, 429]
    held = with_address(gateway, "ada", PASSWORD, "203.0.113.9")
    assert held.status_code == 429 and 1 <= int(held["Retry-After"]) <= 60


def test_an_ipv6_64_is_one_address(gateway, ada, settings):
    """Addresses of one IPv6 /64 share one count: a host cannot take fresh addresses for fresh tries."""
    settings.API_SESSION_FAILURES_PER_NAME_AND_ADDRESS = 3
    for n in range(3):
        assert with_address(gateway, "ada", "guess", f"2001:db8:1:2::{n + 1:x}").status_code == 403

    assert with_address(gateway, "ada", PASSWORD, "2001:db8:1:2:ffff::1").status_code == 429
    assert with_address(gateway, "ada", PASSWORD, "2001:db8:1:3::1").status_code == 200


def test_failures_from_one_address_are_limited_whatever_the_names(gateway, ada, settings):
    """One address guessing many names is refused after API_SESSION_FAILURES_PER_ADDRESS, so that it
    cannot spend the client's own limit and lock everyone out of it."""
    settings.API_SESSION_FAILURES_PER_ADDRESS = 3
    for name in ("x1", "x2", "x3"):
        assert with_address(gateway, name, "guess", "198.51.100.7").status_code == 403

    assert with_address(gateway, "ada", PASSWORD, "198.51.100.7").status_code == 429
    assert with_address(gateway, "ada", PASSWORD, "203.0.113.9").status_code == 200


def test_the_address_from_a_client_without_the_scope_is_refused_before_any_hash(make_api, ada, counting_hasher):
    """Only a client with sessions:client-address may say whose address a check comes from; another
    gets 403 with a sentence, and no password is hashed."""
    api = make_api("sessions")
    responses = []

    hashes = counting_hasher(lambda: responses.append(with_address(api, "ada", PASSWORD, "203.0.113.9")))

    problem = responses[0].json()
    assert responses[0].status_code == 403 and problem["type"] == "/api/v1/problems/insufficient-scope"
    assert problem["detail"] == "client_address needs the scope sessions:client-address; this client has sessions"
    assert hashes == 0


@pytest.mark.parametrize("address", ["", "203.0.113", "203.0.113.07", "fe80::1%eth0", "localhost", "2001:db8::1/64"])
def test_an_address_that_is_not_one_is_refused_with_a_sentence(gateway, ada, address):
    response = with_address(gateway, "ada", PASSWORD, address)

    assert response.status_code == 422 and response.json()["type"] == "/api/v1/problems/validation-failed"
    assert response.json()["detail"].startswith("client_address must be an ")
