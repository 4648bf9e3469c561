"""Attacks on the client API (/api/v1/: its problems, its rate, Idempotency-Keys, POST /sessions).

The first part holds attacks that each need a defence of their own: each docstring says what the
attack would get without it. The second holds attacks the API's ordinary rules withstand, kept where
they add something the API's own tests lack.
"""

import hashlib
import json
import logging
import secrets
import threading

import httpx
import pytest
from django.db import DatabaseError, transaction

from accounts.models import AccountStatus
from lifecycle.demo.factories import AccountFactory
from platform_events.api.clients import api_client_create
from platform_events.api.models import IdempotencyKey
from tests.lifecycle.api.conftest import Api, new_key
from tests.support import connect, connect_as_owner, wait_for, wait_until_blocked
from tokens.models import Token

PROBLEM = "application/problem+json"
EVERY_SCOPE = ["accounts:read", "accounts:write", "sessions"]

pytestmark = pytest.mark.attack


@pytest.fixture
def api(db, client):
    made, key = api_client_create(name=f"attacker {secrets.token_hex(3)}", scopes=EVERY_SCOPE, actor=None)
    api = Api(client, key)
    api.api_client = made
    return api


def _canonical(body: dict) -> bytes:
    """A JSON body as request_fingerprint() reads it (documented in its docstring)."""
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


# Attacks with a defence of their own -----------------------------------------------------------------


@pytest.mark.django_db
def test_a_provisioned_password_cannot_be_checked_offline_against_the_stored_request_hash(api):
    """POST /accounts with a password: the request's fingerprint (method, path and the canonical JSON
    body, password included) is kept in idempotency_keys.request_hash for 24 hours, and in every
    backup, beside the account's e-mail and login. As an unsalted SHA-256 it would confirm a guessed
    password with one hash: an offline dictionary attack at GPU speed, around the Argon2id hash that
    account_passwords keeps. The fingerprint is keyed with SECRET_KEY instead."""
    password = "cobol-compiler-1952"
    response = api.post("/accounts", {"email": "grace@example.com", "login": "grace", "password": password})
    assert response.status_code == 201
    stored = IdempotencyKey.objects.get(client_id=api.api_client.pk).request_hash

    def confirms(guess: str) -> bool:
        body = _canonical({"email": "grace@example.com", "login": "grace", "password": guess})
        return hashlib.sha256(b"POST\n/api/v1/accounts\n" + body).hexdigest() == stored

    assert not confirms("password123")
    assert not confirms(password), "the stored request hash confirms the password with one SHA-256"


@pytest.mark.django_db
def test_the_session_failure_limit_does_not_tell_whether_a_login_exists(api, settings):
    """POST /sessions answers a name nobody has as it answers a real one. Its per-account failure
    bucket is the account when the name finds one (PostgreSQL's lower() on both sides) and otherwise
    the name as typed (Python's lower()), and the two lower()s differ for U+0130 (İ): PostgreSQL gives
    'i', Python 'i̇'. Were such a name looked up, after the limit's failures on "iris" "İris" would
    name the same account (same bucket: 429), while after as many on "irina", nobody's, "İrina" would
    be a fresh bucket (a wrong password): a client with only the sessions scope would learn which
    logins exist. Names that are not plain ASCII are refused before any lookup, alike."""
    settings.API_SESSION_FAILURES_PER_NAME = 3
    AccountFactory(login="iris", email="iris@example.com", active=True)

    def check(identifier: str) -> int:
        return api.post("/sessions", {"identifier": identifier, "password": "not her password"}, key=None).status_code

    for name in ["iris", "irina"]:
        assert [check(name) for _ in range(3)] == [403, 403, 403]
    existing, unknown = check("\u0130ris"), check("\u0130rina")
    assert existing == unknown, f"İris (exists) answered {existing}, İrina (nobody) answered {unknown}"


@pytest.mark.django_db
@pytest.mark.parametrize("operation", ["activation-email", "recovery-email"])
def test_a_deeply_nested_body_is_not_a_server_error(api, operation):
    """No 500 for any input. These two operations take no body, so ninja never parses it; the
    fingerprint does (json.loads), and a nesting deeper than Python's recursion limit raises
    RecursionError, not ValueError: uncaught, 10 kB of '[' would be a 500 server-error with a
    traceback in the log."""
    account = AccountFactory(active=True)
    response = api.post(f"/accounts/{account.pk}/{operation}", raw=b"[" * 5000 + b"]" * 5000)
    assert response.status_code != 500, response.content
    assert response.status_code < 400 or response["Content-Type"] == PROBLEM


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/sessions", "/accounts/1/suspend"])
def test_a_malformed_content_length_is_not_a_server_error(api, path):
    """Content-Length: 14x (runserver, make run's web server, passes it on): the API's own size check
    reads it as 0, and Django's request.body would do int() on it: a ValueError, a 500 server-error.
    It is a 4xx problem."""
    body = json.dumps({"reason": "x"} if "suspend" in path else {"identifier": "x", "password": "y"}).encode()
    response = api.client.post(
        f"/api/v1{path}", body, content_type="application/json", headers=api.headers(new_key()), CONTENT_LENGTH="14x"
    )
    assert response.status_code != 500, response.content
    assert response["Content-Type"] == PROBLEM and 400 <= response.status_code < 500


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/v1/accounts/1/", "/api/v1/nothing", "/api/v1//accounts/1", "/api/v1/"])
def test_an_unknown_path_under_the_api_is_a_problem(api, path):
    """RFC 9457 problem+json everywhere: a path under /api/v1/ that no operation has (a trailing
    slash, a typo) gets the not-found problem, not Django's HTML 404 page (with DEBUG, the URL
    patterns too)."""
    response = api.client.get(path, headers=api.headers(None))
    assert response.status_code == 404
    assert response["Content-Type"] == PROBLEM, response["Content-Type"]
    assert json.loads(response.content)["type"] == "/api/v1/problems/not-found"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("method", "path"),
    [("PATCH", "/accounts/1"), ("DELETE", "/accounts"), ("GET", "/accounts/1/suspend"), ("PUT", "/accounts")],
)
def test_a_wrong_method_is_a_problem(api, method, path):
    """A method an operation does not take is the catalogue's method-not-allowed problem (405), not
    ninja's own HttpResponseNotAllowed, a text/html "Method not allowed"."""
    response = api.client.generic(method, f"/api/v1{path}", headers=api.headers(new_key()))
    assert response.status_code == 405
    assert response["Content-Type"] == PROBLEM, response["Content-Type"]
    assert json.loads(response.content)["type"] == "/api/v1/problems/method-not-allowed"


@pytest.mark.django_db
def test_a_wrong_password_answer_does_not_say_the_clients_key_failed(api):
    """POST /sessions answers a wrong password 403 invalid-credentials (as Auth0 does), not 401: RFC
    9110 (15.5.2) requires WWW-Authenticate of every 401, and a client library reads a 401 as "this
    API key is not accepted" (retry with another key, alert, open a circuit breaker), while here the
    key is fine and the end user's password is wrong."""
    AccountFactory(login="ada", email="ada@example.com", active=True)
    response = api.post("/sessions", {"identifier": "ada", "password": "not her password"}, key=None)
    assert response.status_code != 401, "a 401 says the API client's own key failed"
    assert (
        response.status_code == 403 and json.loads(response.content)["type"] == "/api/v1/problems/invalid-credentials"
    )


FORGERIES = {
    "reopened": "UPDATE idempotency_keys SET response_status = NULL, response_body = NULL,"
    " lease_claim = gen_random_uuid(), lease_until = now() - interval '1 second' WHERE key = %s",
    "forged answer": """UPDATE idempotency_keys SET response_body = '{"forged": true}' WHERE key = %s""",
    "deleted before it expired": "DELETE FROM idempotency_keys WHERE key = %s AND expires_at > now()",
}


@pytest.mark.django_db
@pytest.mark.parametrize("forgery", FORGERIES)
def test_a_finished_idempotency_key_cannot_be_rewritten_by_the_runtime_role(api, sql, forgery):
    """One effect per key, and the first answer replayed, hold against the runtime role too: it cannot
    reopen a finished key (a retry would run the work a second time: a second activation e-mail, the
    first link cancelled), change the answer a retry gets, or delete a key before it expires
    (retention needs only the expired ones). The table's trigger refuses each
    (platform_events/sql/0013_api.sql), as it does for the clients' table."""
    account = AccountFactory()
    key = new_key()
    first = api.post(f"/accounts/{account.pk}/activation-email", key=key)
    assert first.status_code == 202
    tokens_before = Token.objects.filter(account=account).count()
    try:
        with transaction.atomic():
            sql(FORGERIES[forgery], [key])
    except DatabaseError:
        pass  # refused: what should happen
    retry = api.post(f"/accounts/{account.pk}/activation-email", key=key)
    assert retry.get("Idempotent-Replayed") == "true", f"{forgery}: the retry ran the work again"
    assert retry.content == first.content, f"{forgery}: the retry got {retry.content!r}"
    assert Token.objects.filter(account=account).count() == tokens_before


@pytest.mark.django_db(transaction=True)
def test_a_retry_while_a_request_runs_long_is_answered_at_once(server):
    """Same key while the first still runs (held up by a lock, longer than its lease): 409
    request-in-progress, at once. A retry that waited for the first's uncommitted row (an INSERT on
    its unique key waits for the inserting transaction) would hold a server thread and a database
    connection for as long as the slow request runs: a client retrying every second behind one request
    stuck for minutes would open a connection a second, toward PostgreSQL's max_connections."""
    _, api_key = api_client_create(name="billing", scopes=EVERY_SCOPE, actor=None)
    api = server(API_IDEMPOTENCY_LEASE_SECONDS="1")
    key = new_key()
    headers = {"Authorization": f"Bearer {api_key}", "Idempotency-Key": key}
    body = {"email": "ada@example.com", "login": "ada"}
    answers = {}

    def first():
        answers["first"] = httpx.post(f"{api.url}/api/v1/accounts", json=body, headers=headers, timeout=60)

    with connect_as_owner() as blocker:
        blocker.execute("LOCK TABLE accounts IN SHARE ROW EXCLUSIVE MODE")
        thread = threading.Thread(target=first)
        thread.start()
        with connect(autocommit=True) as watcher:
            wait_until_blocked(watcher, 1)
            # Its lease has ended too (read from the database's clock: a bound on waiting, not a measured time).
            wait_for(
                lambda: watcher.execute(
                    "SELECT bool_and(now() - xact_start > interval '1 second') FROM pg_stat_activity"
                    " WHERE wait_event_type = 'Lock'"
                ).fetchone()[0],
                message="the first request's lease to end",
            )
        try:
            # Answered before the lock is released, or not at all: the bound is only there to end the test.
            retry = httpx.post(f"{api.url}/api/v1/accounts", json=body, headers=headers, timeout=30)
        except httpx.ReadTimeout:
            retry = None
        finally:
            blocker.rollback()
    thread.join(timeout=60)
    assert answers["first"].status_code == 201
    assert retry is not None, "the retry waited for the running request (no answer within 5 s)"
    assert retry.status_code == 409 and retry.json()["type"] == "/api/v1/problems/request-in-progress"


# Attacks the API's ordinary rules withstand ----------------------------------------------------------


@pytest.mark.django_db
def test_held_every_call_of_a_client_counts_against_its_rate_and_only_its_own(api, client, settings):
    """Refused calls (scope, body) count too; another client keeps its own allowance; 429 is a problem
    with Retry-After."""
    settings.API_REQUESTS_PER_MINUTE = 3
    made, read_only_key = api_client_create(name="reader", scopes=["accounts:read"], actor=None)
    reader = Api(client, read_only_key)
    account = AccountFactory()
    assert reader.get(f"/accounts/{account.pk}").status_code == 200
    assert reader.post("/accounts", {"email": "x@example.com", "login": "x"}).status_code == 403
    assert reader.get("/accounts", email="x@example.com", extra="1").status_code == 422
    limited = reader.get(f"/accounts/{account.pk}")
    assert limited.status_code == 429 and limited["Content-Type"] == PROBLEM
    assert json.loads(limited.content)["type"] == "/api/v1/problems/rate-limited"
    assert 1 <= int(limited["Retry-After"]) <= 60
    assert api.get(f"/accounts/{account.pk}").status_code == 200


@pytest.mark.django_db
def test_held_a_body_over_the_limit_is_refused_before_its_key_is_taken(api):
    account = AccountFactory()
    response = api.post(f"/accounts/{account.pk}/suspend", {"reason": "x" * 20_000})
    assert response.status_code == 413 and response["Content-Type"] == PROBLEM
    assert not IdempotencyKey.objects.exists()
    account.refresh_from_db()
    assert account.status == "provisioned"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "header",
    [
        "Bearer\t{key}",  # not a space
        "Bearer {key}x",
        "Bearer {key},Bearer lc_other",  # two Authorization headers, as a WSGI server joins them
        "Basic {key}",
        "{key}",
        "Bearer lc_" + "A" * 5000,
        "Bearer {key}\u00e9",
    ],
)
def test_held_only_the_exact_key_after_bearer_authenticates(api, header):
    response = api.client.get("/api/v1/accounts/1", HTTP_AUTHORIZATION=header.format(key=api.key))
    assert response.status_code == 401 and response["WWW-Authenticate"] == 'Bearer realm="lifecycle"'


@pytest.mark.django_db
def test_held_keys_and_passwords_reach_no_log_and_no_table(api, client, caplog, sql):
    """The key (right, with a suffix, revoked) and a password (provisioned, checked right and wrong)
    are in no log line and no table (nor is the password's Argon2 hash outside account_passwords);
    api_clients keeps the SHA-256 and 11 characters only."""
    caplog.set_level(logging.DEBUG)
    password = "cobol-compiler-1952"
    assert api.post("/accounts", {"email": "grace@example.com", "login": "grace", "password": password}).status_code
    for attempt in [password, password + "x"]:
        api.post("/sessions", {"identifier": "grace", "password": attempt}, key=None)
    client.get("/api/v1/accounts/1", HTTP_AUTHORIZATION=f"Bearer {api.key}x")
    client.get("/api/v1/accounts/1", HTTP_AUTHORIZATION=f"Basic {api.key}")
    api.post("/accounts/1/activation-email", raw=b"[" * 5000 + b"]" * 5000)  # whatever it logs of the request
    (stored_hash,) = sql("SELECT password FROM account_passwords")[0]
    secrets_ = [api.key, api.key[11:], password, stored_hash, stored_hash.split("$")[-1]]
    for table in ["audit_events", "idempotency_keys", "rate_limits", "api_clients", "accounts", "django_q_task"]:
        (text,) = sql(f"SELECT coalesce(string_agg(t::text, ' '), '') FROM {table} t")[0]
        for secret in secrets_:
            assert secret not in text, (table, secret[:6])
    for secret in secrets_:
        assert secret not in caplog.text


@pytest.mark.django_db
def test_only_the_accounts_delete_scope_deprovisions(make_api):
    """A client with every other scope tries DELETE: refused, the account as it was. accounts:delete
    deprovisions and does nothing else (no read, no other write)."""
    account = AccountFactory(active=True)
    others = [make_api("accounts:read"), make_api("accounts:write"), make_api("sessions")]

    for other in others:
        response = other.delete(f"/accounts/{account.pk}")
        assert (
            response.status_code == 403
            and json.loads(response.content)["type"] == "/api/v1/problems/insufficient-scope"
        )
    account.refresh_from_db()
    assert account.status == AccountStatus.ACTIVE

    deleter = make_api("accounts:delete")
    assert deleter.delete(f"/accounts/{account.pk}").status_code == 200
    # accounts:delete alone reads nothing and changes nothing else.
    assert deleter.get(f"/accounts/{account.pk}").status_code == 403
    assert deleter.post(f"/accounts/{account.pk}/suspend", {"reason": "r"}).status_code == 403
