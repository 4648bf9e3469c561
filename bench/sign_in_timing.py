"""Whether the account pages' sign-in tells its refusals apart by time (docs/public-pages.md, "Your
account"): a name nobody has, a wrong password, and a right password for a suspended, a deprovisioned
and a never-activated account.

    .venv/bin/python bench/sign_in_timing.py [--requests 200]

On a scratch database (``<name>_bench``, created and dropped), posts /account/sign-in/ ``--requests``
times per kind, the kinds in a random order in each round, through Django's test client (the whole
request: middleware, form, limits, password hash, template), with the product's own Argon2 cost.
Prints each kind's median and its ratio to the unknown name's (the baseline, in the same run); the
aim is every ratio within 0.90-1.10. The limits are raised for the run (every request comes from one
address).
"""

import argparse
import logging
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench.django_setup  # noqa: F401 (Django set up before any model is imported)

# isort: split
from django.conf import settings
from django.test import Client
from django.test.utils import setup_test_environment

from bench.scratch import scratch_database

logging.getLogger("django.request").setLevel(logging.ERROR)  # one "Bad Request" line per refusal otherwise
logging.getLogger("lifecycle.requests").setLevel(logging.WARNING)  # one line per request

PASSWORD = "seven quiet harbours 1874"

KINDS = {
    "unknown name": ("nobody", PASSWORD),
    "wrong password": ("living", "not the password at all"),
    "suspended, right password": ("held", PASSWORD),
    "deprovisioned, right password": ("closed", PASSWORD),
    "never activated, right password": ("waiting", PASSWORD),
}


def timed(client: Client, identifier: str, password: str) -> tuple[float, int]:
    started = time.perf_counter()
    response = client.post("/account/sign-in/", {"identifier": identifier, "password": password})
    return time.perf_counter() - started, response.status_code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200, help="requests per kind")
    options = parser.parse_args()
    setup_test_environment()
    for name in (
        "API_SESSION_FAILURES_PER_NAME",
        "API_SESSION_FAILURES_PER_NAME_AND_ADDRESS",
        "API_SESSION_FAILURES_PER_ADDRESS",
        "API_SESSION_NEW_ADDRESS_FAILURES_PER_NAME",
        "API_SESSION_FAILURES_PER_CLIENT",
    ):
        setattr(settings, name, 10**9)
    with scratch_database():
        from accounts.services import account_deprovision, account_password_hash, account_set_password
        from lifecycle.demo.factories import AccountFactory

        for login, traits in [("living", {"active": True}), ("held", {"suspended": True}), ("waiting", {})]:
            account = AccountFactory(login=login, email=f"{login}@example.com", **traits)
            account_set_password(account=account, password_hash=account_password_hash(PASSWORD), actor=None)
        closed = AccountFactory(login="closed", email="closed@example.com", active=True)
        account_set_password(account=closed, password_hash=account_password_hash(PASSWORD), actor=None)
        account_deprovision(account=closed, actor=None)

        client = Client()
        for identifier, password in KINDS.values():  # warm up: connections, templates, the first hash
            timed(client, identifier, password)
        times = {kind: [] for kind in KINDS}
        statuses = {kind: set() for kind in KINDS}
        for _ in range(options.requests):
            order = list(KINDS.items())
            random.shuffle(order)
            for kind, (identifier, password) in order:
                seconds, status = timed(client, identifier, password)
                times[kind].append(seconds)
                statuses[kind].add(status)
        baseline = statistics.median(times["unknown name"])
        print(f"{'kind':34} {'median ms':>10} {'ratio':>6}  statuses")
        for kind, values in times.items():
            median = statistics.median(values)
            print(f"{kind:34} {median * 1000:10.2f} {median / baseline:6.3f}  {sorted(statuses[kind])}")


if __name__ == "__main__":
    main()
