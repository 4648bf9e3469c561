"""Accounts provisioned per second with the lifecycle triggers, against a bare table of the same shape.

    .venv/bin/python bench/provision.py [--single 2000] [--bulk 50000] [--repeat 3]

Runs on a scratch database (``<name>_bench``, created and dropped) of the configured server: the
embedded one unless DATABASE_URL is set. Prints rows/s for single-row transactions (one INSERT,
one commit each) and for one bulk INSERT ... SELECT, and the ratio to a bare table of the seed's
shape measured in the same run; then the seed's own schema and triggers (bench/seed_schema.sql),
and ours with the triggers added one at a time, to show what costs what.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lifecycle.settings")
os.environ.setdefault("DEBUG", "true")

import django  # noqa: E402

django.setup()

import scratch  # noqa: E402
from django.db import connections  # noqa: E402

# Tables of its own, seeded history: the bench works as the owner role.
connection = connections["owner"]

SEED_SCHEMA = Path(__file__).resolve().parent / "seed_schema.sql"
# (table, trigger), in the order the steps below add them.
TRIGGERS = [
    ("accounts", "before_account_validate"),
    ("accounts", "before_account_insert_timestamps"),
    ("accounts", "before_account_write_claim_email"),
    ("accounts", "after_account_insert"),
    ("accounts", "after_account_insert_audit"),
    ("tokens", "after_token_insert_audit"),
    ("accounts", "after_account_insert_outbox"),
]

# (label, table, our triggers enabled). Ratios are to the first two rows ("/bare", "/indexed").
STEPS = [
    ("bare: the seed's columns, primary key only", "seed.accounts_bare", []),
    ("indexed: the seed's columns and indexes, no triggers", "seed.accounts_indexed", []),
    ("the seed's schema and triggers (seeds/000)", "seed.accounts", []),
    ("ours: indexes only (all triggers disabled)", "accounts", []),
    ("ours: + validation (e-mail, login)", "accounts", TRIGGERS[:1]),
    ("ours: + insert timestamps and e-mail claim (WHEN false)", "accounts", TRIGGERS[:3]),
    ("ours: + activation token (no audit)", "accounts", TRIGGERS[:4]),
    ("ours: + audit rows (account.created, token.issued)", "accounts", TRIGGERS[:6]),
    ("ours: + outbox event (account.created): all", "accounts", TRIGGERS),
]

# The rows the whole chain writes for a bulk INSERT, written by one set-based statement with every
# trigger of accounts and tokens off: what the triggers cost over the same work done by hand.
PLAIN_SQL = """
WITH a AS (
    INSERT INTO accounts (email, login)
    SELECT 'user' || g || '@example.com', 'user' || g FROM generate_series(1, %(rows)s) g
    RETURNING id, email, login, status
), t AS (
    INSERT INTO tokens (account, action) SELECT id, 'activation' FROM a RETURNING id, account, action, expires_at
), audit_accounts AS (
    INSERT INTO audit_events (actor_type, actor_id, actor_display, action, resource_type, resource_id, diff_after)
    SELECT 'SYSTEM', session_user, session_user, 'account.created', 'account', id::text,
           jsonb_build_object('email', email, 'login', login, 'status', status)
    FROM a
), audit_tokens AS (
    INSERT INTO audit_events (actor_type, actor_id, actor_display, action, resource_type, resource_id, diff_after)
    SELECT 'SYSTEM', session_user, session_user, 'token.issued', 'token', id::text,
           jsonb_build_object('account', account, 'action', action, 'expires_at', expires_at)
    FROM t
)
INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload)
SELECT 'account', id::text, 'account.created',
       jsonb_build_object('type', 'account.created',
                          'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                          'data', jsonb_build_object('id', id, 'login', login, 'email', email, 'status', status))
FROM a
"""


def prepare(cursor, table: str, triggers: list[tuple[str, str]]) -> None:
    # Audit rows refuse TRUNCATE; the scratch database lets the bench start each step empty.
    cursor.execute("ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_truncate")
    cursor.execute("TRUNCATE audit_events")
    cursor.execute("ALTER TABLE audit_events ENABLE TRIGGER audit_events_no_truncate")
    cursor.execute(
        "TRUNCATE accounts, tokens, outbox_events, webhook_deliveries, seed.accounts, seed.tokens, seed.accounts_bare,"
        " seed.accounts_indexed RESTART IDENTITY CASCADE"
    )
    for table, trigger in TRIGGERS:
        state = "ENABLE" if (table, trigger) in triggers else "DISABLE"
        cursor.execute(f"ALTER TABLE {table} {state} TRIGGER {trigger}")
    cursor.execute("CHECKPOINT")


def single_rows(cursor, table: str, rows: int) -> float:
    started = time.perf_counter()
    for n in range(rows):
        cursor.execute(f"INSERT INTO {table} (email, login) VALUES (%s, %s)", [f"user{n}@example.com", f"user{n}"])
    return rows / (time.perf_counter() - started)


def bulk(cursor, table: str, rows: int) -> float:
    started = time.perf_counter()
    cursor.execute(
        f"INSERT INTO {table} (email, login) SELECT 'user' || g || '@example.com', 'user' || g FROM generate_series(1, %s) g",
        [rows],
    )
    return rows / (time.perf_counter() - started)


def plain_sql(cursor, rows: int) -> float:
    """PLAIN_SQL's rate, triggers off; checks it wrote what the chain writes (one token, two audit rows
    and one event per account)."""
    prepare(cursor, "accounts", [])
    cursor.execute("ALTER TABLE accounts DISABLE TRIGGER USER")
    cursor.execute("ALTER TABLE tokens DISABLE TRIGGER USER")
    try:
        started = time.perf_counter()
        cursor.execute(PLAIN_SQL, {"rows": rows})
        rate = rows / (time.perf_counter() - started)
        cursor.execute(
            "SELECT (SELECT count(*) FROM tokens), (SELECT count(*) FROM audit_events), (SELECT count(*) FROM outbox_events)"
        )
        assert cursor.fetchone() == (rows, 2 * rows, rows)
    finally:
        cursor.execute("ALTER TABLE accounts ENABLE TRIGGER USER")
        cursor.execute("ALTER TABLE tokens ENABLE TRIGGER USER")
    return rate


def endpoints(cursor, count: int) -> None:
    """``count`` webhook endpoints taking account.created: each new account is one delivery per endpoint."""
    cursor.execute("DELETE FROM webhook_subscriptions")
    cursor.execute(
        "INSERT INTO webhook_subscriptions (owner_id, url, events, secret_encrypted, secret_key_id)"
        " SELECT 'bench', 'https://hooks.example.com/' || g, '{account.created}', '\\x00', 'k' FROM generate_series(1, %s) g",
        [count],
    )


def measure(cursor, table, triggers, single, rows, repeat) -> tuple[float, float]:
    single_rates, bulk_rates = [], []
    for _ in range(repeat):
        prepare(cursor, table, triggers)
        single_rates.append(single_rows(cursor, table, single))
        prepare(cursor, table, triggers)
        bulk_rates.append(bulk(cursor, table, rows))
    return statistics.median(single_rates), statistics.median(bulk_rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--single", type=int, default=2000, help="single-row transactions per measurement")
    parser.add_argument("--bulk", type=int, default=50000, help="rows in the bulk INSERT")
    parser.add_argument("--repeat", type=int, default=3, help="measurements per step (the median is shown)")
    args = parser.parse_args()

    bench_name = scratch.create()
    try:
        connection.set_autocommit(True)  # single-row figures: one transaction (and commit) per INSERT
        with connection.cursor() as cursor:
            cursor.execute("SELECT version()")
            print(cursor.fetchone()[0].split(" on ")[0], f"- database {bench_name}")
            cursor.execute(SEED_SCHEMA.read_text())
            print(f"{'':58} {'single-row transactions':>30} {'one bulk INSERT':>30}")
            print(f"{'':58} {'rows/s   /bare /indexed':>30} {'rows/s   /bare /indexed':>30}")
            rates = {
                label: measure(cursor, table, triggers, args.single, args.bulk, args.repeat)
                for label, table, triggers in STEPS
            }
            bare, indexed = rates[STEPS[0][0]], rates[STEPS[1][0]]
            for label, row in rates.items():
                columns = [f"{row[i]:12,.0f} {row[i] / bare[i]:7.2f}x {row[i] / indexed[i]:7.2f}x" for i in (0, 1)]
                print(f"{label:58} {columns[0]} {columns[1]}")
            ours, seed = rates[STEPS[-1][0]], rates[STEPS[2][0]]
            print(f"ours / the seed's triggers: single-row {ours[0] / seed[0]:.2f}x, bulk {ours[1] / seed[1]:.2f}x")

            chain, plain = [], []
            for _ in range(args.repeat):
                prepare(cursor, "accounts", TRIGGERS)
                chain.append(bulk(cursor, "accounts", args.bulk))
                plain.append(plain_sql(cursor, args.bulk))
            chain_rate, plain_rate = statistics.median(chain), statistics.median(plain)
            print(
                f"the whole chain (account, token, 2 audit rows, event) {chain_rate:12,.0f} rows/s in bulk; the same rows"
                f" by plain set-based SQL {plain_rate:,.0f}: chain / plain = {chain_rate / plain_rate:.2f}x (aim >= 0.7x)"
            )
            for count in (1, 5):
                endpoints(cursor, count)
                rates_with = []
                for _ in range(args.repeat):
                    prepare(cursor, "accounts", TRIGGERS)
                    rates_with.append(bulk(cursor, "accounts", args.bulk))
                print(
                    f"  with {count} webhook endpoint(s) taking account.created (a delivery each):"
                    f" {statistics.median(rates_with):12,.0f} rows/s ({statistics.median(rates_with) / chain_rate:.2f}x)"
                )
            endpoints(cursor, 0)
    finally:
        scratch.destroy(bench_name)


if __name__ == "__main__":
    main()
