"""SCIM's look-ups at a million accounts: how an identity provider finds a user before it creates or
changes one.

    .venv/bin/python bench/scim.py [--accounts 1000000] [--requests 200]

Seeds a scratch database (``<name>_bench``, created and dropped) with bench/admin.py's accounts
through the real triggers, makes every one of them the identity provider's User (userName
``userN@corp.example``, as Okta's and Entra ID's are addresses), then times, through Django's test
client with DEBUG off, random look-ups of existing Users: ``GET /scim/v2/Users?filter=userName eq
"userN@corp.example"`` and ``emails.value eq "userN@example.com"``, and, as the baseline in the same
run, the client API's ``GET /api/v1/accounts?login=userN`` (the same account, found through the
accounts' login index). Prints p50 and p95 of
each and the ratio of the p95s to the baseline's. The aim is a p95 under 50 ms on a quiet machine.
"""

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench.django_setup  # noqa: F401 (Django set up before any model is imported)

# isort: split
from django.test import Client
from django.test.utils import override_settings

from bench.admin import seed
from bench.scratch import scratch_database


def api_url(login: str) -> str:
    return f"/api/v1/accounts?{urlencode({'login': login})}"


def scim_url(expression: str) -> str:
    return f"/scim/v2/Users?{urlencode({'filter': expression})}"


def timed(client: Client, urls: list[str], headers: dict) -> tuple[float, float]:
    client.get(urls[0], **headers)  # warm-up
    times = []
    for url in urls:
        started = time.perf_counter()
        response = client.get(url, **headers)
        times.append(time.perf_counter() - started)
        assert response.status_code == 200, (url, response.status_code, response.content[:200])
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]


def link_all(provider) -> None:
    """Every account the provider's User, through the real triggers (each writes its trail row), in
    batches of 100,000; then the statistics the planner reads."""
    from django.db import connection, transaction

    with connection.cursor() as cursor:
        cursor.execute("SELECT max(id) FROM accounts")
        (last,) = cursor.fetchone()
        for start in range(0, last + 1, 100_000):
            with transaction.atomic():
                cursor.execute(
                    "INSERT INTO scim_users (account, client, user_name)"
                    " SELECT id, %s, login || '@corp.example' FROM accounts WHERE id >= %s AND id < %s",
                    [provider.pk, start, start + 100_000],
                )
        cursor.execute("ANALYZE scim_users")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accounts", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()

    with scratch_database():
        started = time.perf_counter()
        seed(args.accounts, 0)
        print(f"  seeding took {time.perf_counter() - started:.0f} s")
        from platform_events.api.clients import api_client_create

        provider, scim_key = api_client_create(name="identity provider", scopes=["scim"], actor=None)
        _, api_key = api_client_create(name="service", scopes=["accounts:read"], actor=None)
        started = time.perf_counter()
        link_all(provider)
        print(f"  making them the identity provider's Users took {time.perf_counter() - started:.0f} s")
        picks = [random.randint(1, args.accounts) for _ in range(args.requests)]
        kinds = {
            "api: ?login= (baseline)": (api_key, [api_url(f"user{n}") for n in picks]),
            "scim: userName eq": (scim_key, [scim_url(f'userName eq "user{n}@corp.example"') for n in picks]),
            "scim: emails.value eq": (scim_key, [scim_url(f'emails.value eq "user{n}@example.com"') for n in picks]),
        }
        # The per-client rate limit is raised for the run: every request comes from one client.
        with override_settings(DEBUG=False, ALLOWED_HOSTS=["testserver"], API_REQUESTS_PER_MINUTE=10**9):
            client = Client()
            results = {
                label: timed(client, urls, {"HTTP_AUTHORIZATION": f"Bearer {key}"})
                for label, (key, urls) in kinds.items()
            }
        baseline = results["api: ?login= (baseline)"][1]
        print(f"{'look-up':28} {'p50':>9} {'p95':>9} {'p95 / baseline':>15}")
        for label, (p50, p95) in results.items():
            print(f"{label:28} {p50 * 1000:7.2f}ms {p95 * 1000:7.2f}ms {p95 / baseline:14.2f}x")


if __name__ == "__main__":
    main()
