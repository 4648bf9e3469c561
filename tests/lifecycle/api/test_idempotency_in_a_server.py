"""Idempotency keys against a real server in its own process (manage.py runserver, threaded): real
concurrent requests with one key, a server killed in the middle of a request, and a replay after a
restart. The key's first request is held inside its work by a lock taken from another session, so
that the others really arrive while it runs."""

import threading

import httpx
import pytest

from platform_events.api.clients import api_client_create
from tests.lifecycle.api.conftest import new_key
from tests.support import connect, connect_as_owner, wait_for, wait_until_blocked

pytestmark = pytest.mark.django_db(transaction=True)

BODY = {"email": "ada@example.com", "login": "ada"}


@pytest.fixture
def key_of_client():
    _, key = api_client_create(name="billing", scopes=["accounts:write", "accounts:read"], actor=None)
    return key


def post(url: str, api_key: str, idempotency_key: str, body=BODY) -> httpx.Response:
    headers = {"Authorization": f"Bearer {api_key}", "Idempotency-Key": idempotency_key}
    return httpx.post(f"{url}/api/v1/accounts", json=body, headers=headers, timeout=60)


def accounts_named(login: str) -> int:
    with connect(autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM accounts WHERE login = %s", [login]).fetchone()[0]


def key_row(key: str):
    with connect(autocommit=True) as conn:
        return conn.execute(
            "SELECT response_status, lease_until IS NOT NULL FROM idempotency_keys WHERE key = %s", [key]
        ).fetchone()


def in_parallel(count: int, call) -> tuple[list[threading.Thread], list]:
    answers = [None] * count

    def run(index):
        try:
            answers[index] = call()
        except httpx.TransportError as error:
            answers[index] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    return threads, answers


def test_concurrent_requests_with_one_key_have_one_effect(server, key_of_client):
    api = server()
    key = new_key()
    with connect_as_owner() as blocker:
        # Whoever takes the key first waits here, inside its work, holding the key.
        blocker.execute("LOCK TABLE accounts IN SHARE ROW EXCLUSIVE MODE")
        first_threads, first = in_parallel(1, lambda: post(api.url, key_of_client, key))
        with connect(autocommit=True) as watcher:
            wait_until_blocked(watcher, 1)
        threads, answers = in_parallel(6, lambda: post(api.url, key_of_client, key))
        for thread in threads:
            thread.join(timeout=60)
        blocker.rollback()
    for thread in first_threads:
        thread.join(timeout=60)

    assert [a.status_code for a in answers] == [409] * 6  # answered at once, not queued behind the first
    assert all(a.json()["type"] == "/api/v1/problems/request-in-progress" for a in answers)
    assert first[0].status_code == 201 and "Idempotent-Replayed" not in first[0].headers
    retry = post(api.url, key_of_client, key)
    assert retry.status_code == 201 and retry.headers["Idempotent-Replayed"] == "true"
    assert retry.content == first[0].content
    assert accounts_named("ada") == 1


def test_a_free_race_on_one_key_makes_one_account(server, key_of_client):
    api = server()
    key = new_key()

    threads, answers = in_parallel(8, lambda: post(api.url, key_of_client, key))
    for thread in threads:
        thread.join(timeout=60)

    made = [a for a in answers if a.status_code == 201 and "Idempotent-Replayed" not in a.headers]
    assert len(made) == 1
    assert all(a.status_code in (201, 409) for a in answers)
    assert accounts_named("ada") == 1


def test_a_request_killed_mid_way_leaves_nothing_not_even_its_key_and_a_retry_runs_it(server, key_of_client):
    key = new_key()
    api = server()
    with connect_as_owner() as blocker:
        blocker.execute("LOCK TABLE accounts IN SHARE ROW EXCLUSIVE MODE")
        threads, answers = in_parallel(1, lambda: post(api.url, key_of_client, key))
        with connect(autocommit=True) as watcher:
            wait_until_blocked(watcher, 1)
        api.kill()  # in the middle of the request: the key taken, the account not yet made
        blocker.rollback()
    threads[0].join(timeout=60)
    assert isinstance(answers[0], httpx.TransportError)
    # The dead request's transaction, its key's row and lock with it, is rolled back once its session notices.
    wait_for(lambda: not advisory_locks_held(), message="the rollback")
    assert accounts_named("ada") == 0 and key_row(key) is None

    retry = post(server().url, key_of_client, key)

    assert retry.status_code == 201 and "Idempotent-Replayed" not in retry.headers
    assert accounts_named("ada") == 1


def advisory_locks_held() -> bool:
    with connect(autocommit=True) as conn:
        return conn.execute("SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory')").fetchone()[0]


def test_a_replay_after_a_restart_returns_the_stored_response(server, key_of_client):
    key = new_key()
    first_server = server()
    first = post(first_server.url, key_of_client, key)
    first_server.kill()

    second_server = server()
    again = post(second_server.url, key_of_client, key)

    assert first.status_code == again.status_code == 201
    assert again.content == first.content and again.headers["Idempotent-Replayed"] == "true"
    assert again.headers["Content-Type"] == first.headers["Content-Type"] == "application/json; charset=utf-8"
    assert accounts_named("ada") == 1
