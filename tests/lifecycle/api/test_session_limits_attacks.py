"""POST /api/v1/sessions against a stranger who wants to keep people out (lifecycle/api/session_limits.py)
rather than guess one password."""

import threading
import time

import pytest
from django.contrib.auth.hashers import Argon2PasswordHasher
from django.db import connection
from django.test import Client

from tests.lifecycle.api.conftest import ADA_PASSWORD, Api

pytestmark = [pytest.mark.attack, pytest.mark.django_db]

PASSWORD = ADA_PASSWORD


def check(api, identifier, password, address=None):
    body = {"identifier": identifier, "password": password}
    if address is not None:
        body["client_address"] = address
    return api.post("/sessions", body, key=None)


def test_a_strangers_failures_on_other_names_do_not_keep_a_person_out_for_the_hour(make_api, ada, settings):
    settings.API_SESSION_FAILURES_PER_CLIENT = 20
    settings.API_SESSION_FAILURES_PER_ADDRESS = 10
    gateway = make_api("sessions", "sessions:client-address", name="gateway")
    answers = {
        check(gateway, f"made-up-{n}", "guess", f"2001:db8:0:{n // 10}::{n}").status_code for n in range(20)
    }  # two /64s, ten made-up names each: no name and no address held
    assert answers == {403}

    assert check(gateway, "ada", PASSWORD, "203.0.113.9").status_code == 200


def test_addresses_that_failed_still_meet_the_clients_limit(make_api, ada, settings):
    """The client's limit lets through only addresses that have not failed this hour: a guesser
    spreading over addresses gets one try from each, then every one of them is refused."""
    settings.API_SESSION_FAILURES_PER_CLIENT = 3
    gateway = make_api("sessions", "sessions:client-address", name="gateway")
    addresses = ["198.51.100.1", "198.51.100.2", "198.51.100.3"]
    assert [check(gateway, f"made-up-{n}", "guess", a).status_code for n, a in enumerate(addresses)] == [403] * 3
    assert {check(gateway, "made-up-9", "guess", a).status_code for a in addresses} == {429}
    assert check(gateway, "made-up-9", "guess").status_code == 429  # no address: the client's limit holds
    assert check(gateway, "ada", PASSWORD, "203.0.113.9").status_code == 200


class SlowHasher(Argon2PasswordHasher):
    """Argon2 that takes as long as production's (the tests' own is at its least cost)."""

    algorithm = "argon2"

    def verify(self, password, encoded):
        time.sleep(0.3)
        return super().verify(password, encoded)


@pytest.mark.django_db(transaction=True)
def test_checks_sent_at_once_get_no_more_guesses_than_the_free_failures(make_api, ada, settings):
    settings.API_SESSION_FAILURES_PER_NAME = 1
    settings.PASSWORD_HASHERS = [f"{__name__}.SlowHasher"]
    api = make_api("sessions", name="gateway")
    start = threading.Barrier(8)
    answers = []

    def guess(n):
        try:
            start.wait()
            answers.append(check(Api(Client(), api.key), "ada", f"guess {n}").status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=guess, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert answers.count(403) <= 2  # the free failure, and at most one more racing it
