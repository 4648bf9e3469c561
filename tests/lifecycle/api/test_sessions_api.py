"""POST /api/v1/sessions: a login or e-mail and a password give the account's id and status; the
same answer, after the same work, for a wrong password and for a name nobody has; failures limited
per name (as typed) and per client."""

import re

import pytest
from django.contrib.auth.hashers import Argon2PasswordHasher
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.services import account_password_hash, account_set_password
from lifecycle.demo.factories import AccountFactory
from platform_events.api.models import IdempotencyKey

pytestmark = pytest.mark.django_db

PASSWORD = "a long Passphrase 7"


@pytest.fixture
def ada():
    account = AccountFactory(active=True, login="ada", email="ada@example.com")
    account_set_password(account=account, password_hash=account_password_hash(PASSWORD), actor=None)
    return account


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
        [("ada", "wrong"), ("nobody", "wrong"), ("nopass", "x")],
        [("ada@example.com", "wrong"), ("nobody@example.com", PASSWORD), ("nopass@example.com", "x")],
    ],
    ids=["by login", "by e-mail"],
)
def test_a_wrong_password_a_name_nobody_has_and_an_account_without_a_password_look_the_same(api, ada, attempts):
    AccountFactory(login="nopass", email="nopass@example.com")
    answers, statements = [], []
    for identifier, password in attempts:
        with CaptureQueriesContext(connection) as queries:
            response = check(api, identifier, password)
        answers.append((response.status_code, response.json()))
        # The statements, not their values: the same work for each (the API client's own lookup aside).
        statements.append(
            [
                re.sub(r"'[^']*'|\b\d+\b", "?", q["sql"])
                for q in queries.captured_queries
                if "api_clients" not in q["sql"]
            ]
        )
    assert answers[0][0] == 403 and answers[0][1]["type"] == "/api/v1/problems/invalid-credentials"
    assert all(answer == answers[0] for answer in answers)
    assert all(s == statements[0] for s in statements)


def test_failures_are_limited_per_name_as_typed(api, ada, settings):
    settings.API_SESSION_FAILURES_PER_NAME = 3
    for identifier in ("ada", "ADA", "aDa"):
        assert check(api, identifier, "wrong").status_code == 403

    spent = check(api, "Ada", PASSWORD)

    assert spent.status_code == 429 and spent.json()["type"] == "/api/v1/problems/rate-limited"
    assert int(spent["Retry-After"]) >= 1
    # The address is another name: counted apart, so that a 429 on it never says that the two belong
    # together (a name nobody has would answer 403).
    assert check(api, "ada@example.com", PASSWORD).status_code == 200


def test_a_non_ascii_name_is_refused_before_any_lookup(api, ada):
    for name in ("\u0130da", "ad\u0430"):  # a dotted capital I; a Cyrillic a
        response = check(api, name, PASSWORD)
        assert response.status_code == 422 and response.json()["type"] == "/api/v1/problems/validation-failed"


def test_a_name_nobody_has_is_limited_as_any_name_is(api, settings):
    settings.API_SESSION_FAILURES_PER_NAME = 2
    answers = [check(api, "nobody", "wrong").status_code for _ in range(3)]

    assert answers == [403, 403, 429]


def test_failures_are_limited_per_client(api, make_api, ada, settings):
    settings.API_SESSION_FAILURES_PER_CLIENT = 2
    for name in ("x1", "x2"):
        check(api, name, "wrong")

    assert check(api, "ada", PASSWORD).status_code == 429
    other_client = make_api("sessions")
    assert check(other_client, "ada", PASSWORD).status_code == 200


def test_successes_cost_no_count(api, ada, settings):
    settings.API_SESSION_FAILURES_PER_NAME = 1
    for _ in range(3):
        assert check(api, "ada", PASSWORD).status_code == 200


class CountingHasher(Argon2PasswordHasher):
    """Django's Argon2 hasher, counting the hashes it computes (a check or a new hash: the same work)."""

    computed = 0

    def encode(self, password, salt):
        CountingHasher.computed += 1
        return super().encode(password, salt).replace("argon2$", "counting$", 1)

    def verify(self, password, encoded):
        CountingHasher.computed += 1
        return super().verify(password, encoded.replace("counting$", "argon2$", 1))

    algorithm = "counting"


def test_every_answer_costs_one_password_hash(api, settings):
    settings.PASSWORD_HASHERS = [f"{__name__}.CountingHasher"]
    ada = AccountFactory(active=True, login="ada", email="ada@example.com")
    account_set_password(account=ada, password_hash=account_password_hash(PASSWORD), actor=None)
    AccountFactory(login="nopass", email="nopass@example.com")
    for identifier, password in [("ada", PASSWORD), ("ada", "wrong"), ("nobody", "wrong"), ("nopass", "x")]:
        before = CountingHasher.computed
        check(api, identifier, password)
        assert CountingHasher.computed - before == 1, identifier
