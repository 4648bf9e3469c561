"""What an erasure costs, per account, against a deprovisioning of the same kind of account in the same run.

    .venv/bin/python bench/erasure.py [--accounts 200000] [--each 40]

Runs on a scratch database (``<name>_bench``, created and dropped) of the configured server: the
embedded one unless DATABASE_URL is set. Provisions ``--accounts`` accounts in one statement (each
with its audit rows and event, as the triggers write them) and activates them, so that the trail holds
several rows per account; then, through the services as the admin calls them (one transaction each):
deprovisions ``--each`` accounts (the baseline), erases them, and prints the median time of each
and their ratio. Then the one part of an erasure that reads the whole trail, the sweep of every audit
row's reason for the account's addresses, timed alone.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench.django_setup  # noqa: F401 (Django set up before any model is imported)

# isort: split
from django.db import connections

from accounts.erasure import account_erase
from accounts.models import Account
from accounts.services import account_deprovision
from bench.scratch import scratch_database


def seed(count: int) -> None:
    """``count`` accounts, activated, as the triggers write them (the owner's bulk statements)."""
    with connections["owner"].cursor() as cursor:
        cursor.execute(
            "INSERT INTO accounts (email, login) SELECT 'user' || n || '@example.com', 'user' || n"
            " FROM generate_series(1, %s) n",
            [count],
        )
        cursor.execute("UPDATE tokens SET consumed_at = now() WHERE action = 'activation'")
        cursor.execute("VACUUM ANALYZE audit_events, accounts, tokens, outbox_events")


def timed(call) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accounts", type=int, default=200_000)
    parser.add_argument("--each", type=int, default=40)
    options = parser.parse_args()
    with scratch_database():
        started = time.perf_counter()
        seed(options.accounts)
        with connections["owner"].cursor() as cursor:
            cursor.execute("SELECT count(*) FROM audit_events")
            (rows,) = cursor.fetchone()
        print(f"{options.accounts} accounts, {rows} audit rows, seeded in {time.perf_counter() - started:.0f} s")
        chosen = list(Account.objects.order_by("?")[: options.each])
        deprovisioned = [timed(lambda a=a: account_deprovision(account=a, actor=None)) for a in chosen]
        erased = [timed(lambda a=a: account_erase(account=a, actor=None, reason="bench")) for a in chosen]
        base, cost = statistics.median(deprovisioned), statistics.median(erased)
        print(f"deprovision (baseline): median {base * 1000:.1f} ms per account")
        print(f"erase:                  median {cost * 1000:.1f} ms per account, {cost / base:.1f}x the baseline")
        with connections["owner"].cursor() as cursor:
            sweep = [
                timed(
                    lambda: cursor.execute(
                        "SELECT count(*) FROM audit_events WHERE reason IS NOT NULL AND EXISTS"
                        " (SELECT FROM unnest(ARRAY['user1@example.com']) a WHERE strpos(lower(reason), a) > 0)"
                    )
                )
                for _ in range(5)
            ]
        print(f"of which the sweep of every reason: median {statistics.median(sweep) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
