"""Whether the public pages' timing tells a real account from an unknown one (docs/public-pages.md,
"No oracle").

    .venv/bin/python bench/public_timing.py [--requests 200]

On a scratch database (``<name>_bench``, created and dropped), posts each public form ``--requests``
times, alternating an identifier that names an account (in the state the form is for) with one that
names nobody, in a random order per pair, through Django's test client (the whole request: middleware,
form, limits, queries, template). Prints the median time of each and their ratio; the aim is a
ratio within 0.90-1.10. The limits are raised for the run (every request comes from one address).
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

logging.getLogger("django.request").setLevel(logging.ERROR)  # one "Bad Request" line per wrong code otherwise

PASSWORD = "seven quiet harbours 1874"


def forms(serial):
    """(page, known data, unknown data) per form; ``serial`` makes each sign-up's login new."""
    return [
        ("/recover/", lambda: {"identifier": "living@example.com"}, lambda: {"identifier": "nobody@example.com"}),
        ("/resend/", lambda: {"identifier": "waiting"}, lambda: {"identifier": "nobody"}),
        (
            "/activate/",
            lambda: {"identifier": "waiting", "code": "00000"},
            lambda: {"identifier": "nobody", "code": "00000"},
        ),
        (
            "/recover/code/",
            lambda: {"identifier": "living", "code": "00000", "password": PASSWORD, "password_again": PASSWORD},
            lambda: {"identifier": "nobody", "code": "00000", "password": PASSWORD, "password_again": PASSWORD},
        ),
        (
            "/signup/ (claimed vs new address)",
            lambda: {"email": "living@example.com", "login": f"k{next(serial)}", "password": PASSWORD,
                     "password_again": PASSWORD},
            lambda: {"email": f"new{next(serial)}@example.com", "login": f"u{next(serial)}", "password": PASSWORD,
                     "password_again": PASSWORD},
        ),
    ]  # fmt: skip


def timed(client: Client, path: str, data: dict) -> tuple[float, int]:
    started = time.perf_counter()
    response = client.post(path, data)
    return time.perf_counter() - started, response.status_code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200, help="requests per kind of identifier and form")
    options = parser.parse_args()
    setup_test_environment()
    settings.PUBLIC_LIMITS_PER_HOUR = dict.fromkeys(settings.PUBLIC_LIMITS_PER_HOUR, 10**9)
    with scratch_database():
        from lifecycle.demo.factories import AccountFactory

        AccountFactory(login="waiting", email="waiting@example.com")
        AccountFactory(login="living", email="living@example.com", active=True)
        client, serial = Client(), iter(range(10**9))
        print(f"{'form':36} {'known ms':>9} {'unknown ms':>10} {'ratio':>6}  statuses")
        for label, known, unknown in forms(serial):
            path = label.split()[0]
            for _ in range(5):  # warm up: connections, templates, the first Argon2 hash
                timed(client, path, known())
            times = {"known": [], "unknown": []}
            statuses = set()
            for _ in range(options.requests):
                pair = [("known", known), ("unknown", unknown)]
                random.shuffle(pair)
                for kind, data in pair:
                    seconds, status = timed(client, path, data())
                    times[kind].append(seconds)
                    statuses.add((kind, status))
            medians = {kind: statistics.median(values) * 1000 for kind, values in times.items()}
            ratio = medians["known"] / medians["unknown"]
            print(
                f"{label:36} {medians['known']:9.2f} {medians['unknown']:10.2f} {ratio:6.3f}  "
                + ", ".join(f"{kind} {status}" for kind, status in sorted(statuses))
            )


if __name__ == "__main__":
    main()
