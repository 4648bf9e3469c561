"""Idempotency keys (IETF draft "The Idempotency-Key HTTP Header Field"): one effect per
key, the first response replayed, and the answers for a reused, running, missing or malformed key."""

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import Account
from accounts.services import account_provision
from lifecycle.api import views
from lifecycle.api.refusals import as_problem
from lifecycle.demo.factories import AccountFactory
from platform_events.api.idempotency import Outcome, request_fingerprint, run_once
from platform_events.api.models import IdempotencyKey
from platform_events.api.problems import Problem
from tests.lifecycle.api.conftest import new_key

pytestmark = pytest.mark.django_db

BODY = {"email": "ada@example.com", "login": "ada"}


def kind(response) -> str:
    return response.json()["type"].removeprefix("/api/v1/problems/")


def test_a_retry_with_the_same_key_and_body_gets_the_first_response_and_makes_nothing(api):
    key = new_key()

    first = api.post("/accounts", BODY, key=key)
    again = api.post("/accounts", BODY, key=key)

    assert first.status_code == again.status_code == 201
    assert again.content == first.content
    assert again["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first
    assert Account.objects.count() == 1


def test_the_same_object_in_other_spacing_and_key_order_is_the_same_request(api):
    key = new_key()
    api.post("/accounts", raw=b'{"email": "ada@example.com", "login": "ada"}', key=key)

    again = api.post("/accounts", raw=b'{ "login":"ada",\n "email":"ada@example.com" }', key=key)

    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"


def test_the_key_as_the_drafts_quoted_string_or_bare_is_one_key(api):
    key = new_key()
    api.post("/accounts", BODY, key=f'"{key}"')

    assert api.post("/accounts", BODY, key=key)["Idempotent-Replayed"] == "true"


def test_the_same_key_with_another_body_or_path_is_refused(api):
    account = AccountFactory(active=True)
    key = new_key()
    api.post("/accounts", BODY, key=key)

    other_body = api.post("/accounts", {**BODY, "login": "ada2"}, key=key)
    other_path = api.post(f"/accounts/{account.pk}/suspend", {"reason": "x"}, key=key)

    for response in (other_body, other_path):
        assert response.status_code == 422
        assert kind(response) == "idempotency-key-reused"  # not validation-failed: another type
    assert Account.objects.filter(login="ada2").count() == 0
    account.refresh_from_db()
    assert account.status == "active"


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (None, "idempotency-key-missing"),
        ("", "idempotency-key-missing"),
        ("a" * 31, "idempotency-key-malformed"),
        ("a" * 129, "idempotency-key-malformed"),
        ("a" * 31 + "!", "idempotency-key-malformed"),
        ('"' + "a" * 32, "idempotency-key-malformed"),
        ("é" * 32, "idempotency-key-malformed"),
    ],
)
def test_a_missing_or_malformed_key_is_a_bad_request_and_changes_nothing(api, key, expected):
    response = api.post("/accounts", BODY, key=key)

    assert response.status_code == 400
    assert kind(response) == expected
    assert not Account.objects.exists() and not IdempotencyKey.objects.exists()


def test_keys_belong_to_their_client(make_api):
    one, two = make_api("accounts:write"), make_api("accounts:write")
    key = new_key()

    assert one.post("/accounts", BODY, key=key).status_code == 201
    other = two.post("/accounts", {**BODY, "login": "bob"}, key=key)

    assert other.status_code == 201 and "Idempotent-Replayed" not in other
    assert IdempotencyKey.objects.filter(key=key).count() == 2


def test_a_refusal_of_the_rules_is_stored_and_replayed(api):
    account = AccountFactory(suspended=True)
    key = new_key()

    first = api.post(f"/accounts/{account.pk}/suspend", {"reason": "x"}, key=key)
    api.post(f"/accounts/{account.pk}/unsuspend", {"reason": "y"})
    again = api.post(f"/accounts/{account.pk}/suspend", {"reason": "x"}, key=key)

    assert first.status_code == again.status_code == 409
    assert again.content == first.content and again["Idempotent-Replayed"] == "true"
    account.refresh_from_db()
    assert account.status == "active"  # the retry did not suspend it


def test_a_request_refused_before_its_work_leaves_no_key_so_a_corrected_retry_runs(api):
    key = new_key()

    refused = api.post("/accounts", {**BODY, "password": "123"}, key=key)
    corrected = api.post("/accounts", {**BODY, "password": "a long Passphrase 7"}, key=key)

    assert refused.status_code == 422 and kind(refused) == "password-rejected"
    assert corrected.status_code == 201 and "Idempotent-Replayed" not in corrected


def test_a_refusal_after_part_of_the_work_keeps_none_of_it_and_is_stored(api, monkeypatch):
    key = new_key()

    def provision_then_refuse(**kwargs):
        real_provision(**kwargs)
        raise Problem("login-taken", "refused after the account's INSERT")

    real_provision = views.account_provision
    monkeypatch.setattr(views, "account_provision", provision_then_refuse)
    refused = api.post("/accounts", BODY, key=key)
    monkeypatch.setattr(views, "account_provision", real_provision)
    again = api.post("/accounts", BODY, key=key)

    assert refused.status_code == 409 and kind(refused) == "login-taken"
    assert not Account.objects.exists()
    assert again.content == refused.content and again["Idempotent-Replayed"] == "true"


def test_a_server_error_rolls_back_the_work_and_the_key_so_the_retry_runs_it(api, monkeypatch):
    key = new_key()

    def provision_then_fail(**kwargs):
        real_provision(**kwargs)
        raise RuntimeError("the server failed after the account's INSERT")

    real_provision = views.account_provision
    monkeypatch.setattr(views, "account_provision", provision_then_fail)
    failed = api.post("/accounts", BODY, key=key)
    assert failed.status_code == 500 and kind(failed) == "server-error"
    assert not Account.objects.exists() and not IdempotencyKey.objects.exists()
    monkeypatch.setattr(views, "account_provision", real_provision)

    retry = api.post("/accounts", BODY, key=key)

    assert retry.status_code == 201 and "Idempotent-Replayed" not in retry
    assert Account.objects.get().login == "ada"


def _held(api, key: str, *, body: dict, lease_seconds: int, sql) -> None:
    """The row a request with ``key`` leaves when it dies after taking the key: no response, a lease."""
    fingerprint = request_fingerprint(method="POST", path="/api/v1/accounts", body=json.dumps(body).encode())
    sql(
        "INSERT INTO idempotency_keys (client_id, key, request_hash, lease_claim, lease_until)"
        " VALUES (%s, %s, %s, gen_random_uuid(), now() + make_interval(secs => %s))",
        [api.api_client.pk, key, fingerprint, lease_seconds],
    )


def test_while_the_first_request_holds_the_key_a_retry_is_told_it_is_in_progress(api, sql):
    key = new_key()
    _held(api, key, body=BODY, lease_seconds=30, sql=sql)

    response = api.post("/accounts", BODY, key=key)

    assert response.status_code == 409 and kind(response) == "request-in-progress"
    assert 1 <= int(response["Retry-After"]) <= 30
    assert not Account.objects.exists()


def test_once_a_dead_requests_lease_ends_a_retry_takes_the_key_over(api, sql):
    key = new_key()
    _held(api, key, body=BODY, lease_seconds=-1, sql=sql)

    response = api.post("/accounts", BODY, key=key)
    other = api.post("/accounts", {**BODY, "login": "ada2"}, key=new_key())

    assert response.status_code == 201 and "Idempotent-Replayed" not in response
    assert other.status_code == 201
    assert Account.objects.filter(login="ada").count() == 1


def test_a_dead_requests_key_is_not_taken_over_by_another_request(api, sql):
    key = new_key()
    _held(api, key, body=BODY, lease_seconds=-1, sql=sql)

    response = api.post("/accounts", {**BODY, "login": "ada2"}, key=key)

    assert response.status_code == 422 and kind(response) == "idempotency-key-reused"


def test_an_expired_key_is_a_new_key(api, sql):
    key = new_key()
    sql(
        "INSERT INTO idempotency_keys (client_id, key, request_hash, response_status, response_body, created_at,"
        " expires_at) VALUES (%s, %s, repeat('a', 64), 201, '{}', now() - interval '25 hours',"
        " now() - interval '1 hour')",
        [api.api_client.pk, key],
    )

    response = api.post("/accounts", {**BODY, "login": "ada2"}, key=key)

    assert response.status_code == 201 and "Idempotent-Replayed" not in response


def test_the_database_refuses_a_malformed_key_or_a_row_both_running_and_finished(api, refused):
    client = api.api_client.pk
    refused(
        f"INSERT INTO idempotency_keys (client_id, key, request_hash, lease_claim, lease_until)"
        f" VALUES ({client}, 'short', repeat('a', 64), gen_random_uuid(), now())",
        match="idempotency_keys_key_check",
    )
    refused(
        f"INSERT INTO idempotency_keys (client_id, key, request_hash, response_status, response_body, lease_claim,"
        f" lease_until) VALUES ({client}, repeat('k', 32), repeat('a', 64), 201, '{{}}', gen_random_uuid(), now())",
        match="ck_idempotency_keys_state",
    )


def test_a_finished_key_cannot_be_reopened_changed_or_deleted_before_it_expires(api, sql, refused):
    key = new_key()
    api.post("/accounts", BODY, key=key)

    for statement in [
        "UPDATE idempotency_keys SET response_status = NULL, response_body = NULL, lease_claim = gen_random_uuid(),"
        " lease_until = now() WHERE key = %s",
        "UPDATE idempotency_keys SET response_body = '{}' WHERE key = %s",
        "UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key = %s",
        "DELETE FROM idempotency_keys WHERE key = %s",
    ]:
        refused(statement, [key], match="a finished Idempotency-Key is kept as it is until it expires")
    assert api.post("/accounts", BODY, key=key)["Idempotent-Replayed"] == "true"


@pytest.mark.django_db(transaction=True)
def test_a_provisioning_is_one_transaction_without_savepoints(api):
    """POST /accounts runs the provisioning service in the key's transaction without a savepoint: the key,
    the account and the stored response commit together."""
    with CaptureQueriesContext(connection) as queries:
        response = api.post("/accounts", BODY)

    statements = [query["sql"].split()[0].upper() for query in queries.captured_queries]
    assert response.status_code == 201
    assert "SAVEPOINT" not in statements and "RELEASE" not in statements
    assert statements.count("BEGIN") == statements.count("COMMIT") == 1
    assert IdempotencyKey.objects.get().response_body == response.json()


@pytest.mark.django_db(transaction=True)
def test_a_provisioning_the_database_refuses_is_stored_and_keeps_nothing(api):
    """A login the database finds taken (past the form's checks) is refused inside the service; without a
    savepoint the key's transaction rolls back whole, and the refusal is stored and replayed."""
    AccountFactory(login="eve", email="eve@example.com")
    key = new_key()

    refused = api.post("/accounts", {"email": "other@example.com", "login": "EVE"}, key=key)
    again = api.post("/accounts", {"email": "other@example.com", "login": "EVE"}, key=key)

    assert refused.status_code == 409 and kind(refused) == "login-taken"
    assert again.content == refused.content and again["Idempotent-Replayed"] == "true"
    assert list(Account.objects.values_list("login", flat=True)) == ["eve"]
    assert IdempotencyKey.objects.get().response_status == 409


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "email, login",
    [
        ("not an address", "fine1"),
        ("ok@example.com", "bad login"),
        ("ok@example.com", "a@b"),
        ("ok@example.com", "EVE"),
        ("claimed@example.com", "x1"),
        ("ok@example.com", "l" * 300),
        ("ok@example.com", "l\x00"),
    ],
)
def test_each_refusal_inside_a_provisioning_without_savepoints_is_stored_and_replayed(make_api, email, login):
    """Every way the database refuses a provisioning, reached inside the service with no savepoint (the
    API's pre-checks bypassed), is a problem stored under the key and replayed, and keeps nothing: no
    code on the service's way runs a statement after a refused one."""
    AccountFactory(login="eve", email="eve@example.com")
    AccountFactory(login="holder", email="claimed@example.com", active=True)
    client = make_api("accounts:write").api_client
    key = new_key()

    def provision() -> Outcome:
        with as_problem():
            account_provision(email=email, login=login, actor=client, password_hash=None)
        return Outcome(201, {})

    def once():
        return run_once(
            client_id=client.pk,
            key=key,
            fingerprint="a" * 64,
            work=provision,
            lease=timedelta(seconds=30),
            ttl=timedelta(hours=1),
            savepoints=False,
        )

    first, again = once(), once()

    assert first.status_code in (409, 422) and "Idempotent-Replayed" not in first
    assert again.content == first.content and again["Idempotent-Replayed"] == "true"
    assert sorted(Account.objects.values_list("login", flat=True)) == ["eve", "holder"]
    assert IdempotencyKey.objects.get().response_status == first.status_code
