"""Accounts provisioned per second with the lifecycle triggers, against a bare table of the same shape.

    .venv/bin/python bench/provision.py [--single 2000] [--bulk 50000] [--repeat 3] [--index-costs]

Runs on a scratch database (``<name>_bench``, created and dropped) of the configured server: the
embedded one unless DATABASE_URL is set. Prints rows/s for single-row transactions (one INSERT,
one commit each) and for one bulk INSERT ... SELECT, and the ratio to a bare table of the seed
schema's shape (bench/seed_schema.sql) measured in the same run; then that schema with its own
triggers, and ours with the triggers added one at a time, to show what costs what. Then the whole trigger chain
against the same rows written by plain set-based SQL (checked to be the same rows), the chain with 1
and 5 webhook endpoints, and with ``--index-costs`` the chain with each index of the audit trail and
the outbox dropped in turn.
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

from bench.scratch import scratch_database

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
    ("the seed's schema and triggers (bench/seed_schema.sql)", "seed.accounts", []),
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
    INSERT INTO tokens (account, action, secret, secret_digest)
    SELECT id, 'activation', secret, sha256(secret)
    FROM (SELECT id, sha256(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid())) AS secret FROM a) s
    RETURNING id, account, action, expires_at
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
ORDER BY a.id  -- seq in id order, as outbox_append_many() takes it (plain "id" is the text output column)
"""

# What a run wrote, table by table: counts, and a digest of every column that is not random or the
# clock (a token's secret and code, ids of events and deliveries, times; an expiry is checked against
# its token instead), so the chain and PLAIN_SQL can be shown to write the same rows.
WRITTEN = """
SELECT (SELECT count(*) FROM accounts),
       (SELECT md5(string_agg(row(id, email, login, status, status_changed_at = created_at, activated_at,
                                  suspended_at, unsuspended_at)::text, ',' ORDER BY id)) FROM accounts),
       (SELECT count(*) FROM tokens),
       (SELECT md5(string_agg(row(id, account, action, expires_at - created_at, consumed_at, failed_attempts,
                                  superseded_at, mail_state, mail_attempts, mail_next_attempt_at = created_at,
                                  mailed_at, consumed_with, length(secret), code ~ '^[0-9]{5}$')::text,
                              ',' ORDER BY id)) FROM tokens),
       (SELECT count(*) FROM audit_events WHERE action = 'account.created'),
       (SELECT count(*) FROM audit_events WHERE action = 'token.issued'),
       (SELECT md5(string_agg(row(actor_type, actor_id, actor_display, actor_ip, actor_user_agent, action,
                                  resource_type, resource_id, result, reason, correlation_id, request_id, method,
                                  path, status_code, db_user, diff_before, diff_after - 'expires_at')::text,
                              ',' ORDER BY action, resource_id)) FROM audit_events),
       (SELECT count(*) FROM audit_events e JOIN tokens t ON e.resource_id = t.id::text
        WHERE e.action = 'token.issued' AND e.diff_after -> 'expires_at' = to_jsonb(t.expires_at)),
       (SELECT count(*) FROM outbox_events),
       (SELECT md5(string_agg(row(seq, aggregate_type, aggregate_id, event_type, payload - 'timestamp',
                                  payload ->> 'timestamp' ~ '^[-0-9]{10}T[:.0-9]{15}Z$')::text, ',' ORDER BY seq))
        FROM outbox_events),
       (SELECT count(*) FROM webhook_deliveries)
"""
WRITTEN_COUNTS = {
    "accounts": 0,
    "tokens": 2,
    "account.created": 4,
    "token.issued": 5,
    "expiries as the token's": 7,
    "outbox_events": 8,
    "webhook_deliveries": 10,
}


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


def on_cpu(cursor) -> float | None:
    """Seconds this connection's server process has run on a CPU (Linux's /proc/<pid>/schedstat; None
    when the server is on another machine): unlike the wall clock, not stretched by other work sharing
    the cores."""
    cursor.execute("SELECT pg_backend_pid()")
    try:
        return int(Path(f"/proc/{cursor.fetchone()[0]}/schedstat").read_text().split()[0]) / 1e9
    except (OSError, ValueError):
        return None


def timed(cursor, sql: str, params, rows: int) -> tuple[float, float | None]:
    """rows/s by the wall clock, and the server's CPU µs a row (None if unknown)."""
    cpu_before = on_cpu(cursor)
    started = time.perf_counter()
    cursor.execute(sql, params)
    rate = rows / (time.perf_counter() - started)
    cpu_after = on_cpu(cursor)
    return rate, None if cpu_before is None or cpu_after is None else (cpu_after - cpu_before) * 1e6 / rows


def bulk_timed(cursor, table: str, rows: int) -> tuple[float, float | None]:
    insert = f"INSERT INTO {table} (email, login) SELECT 'user' || g || '@example.com', 'user' || g FROM generate_series(1, %s) g"
    return timed(cursor, insert, [rows], rows)


def bulk(cursor, table: str, rows: int) -> float:
    return bulk_timed(cursor, table, rows)[0]


def written(cursor) -> tuple:
    cursor.execute(WRITTEN)
    return cursor.fetchone()


def plain_sql(cursor, rows: int) -> tuple[float, float | None, tuple]:
    """PLAIN_SQL's rate and CPU µs a row (``timed``), every trigger of accounts and tokens off, and what
    it wrote (``written``)."""
    prepare(cursor, "accounts", [])
    cursor.execute("ALTER TABLE accounts DISABLE TRIGGER USER")
    cursor.execute("ALTER TABLE tokens DISABLE TRIGGER USER")
    try:
        rate, cpu = timed(cursor, PLAIN_SQL, {"rows": rows}, rows)
    finally:
        cursor.execute("ALTER TABLE accounts ENABLE TRIGGER USER")
        cursor.execute("ALTER TABLE tokens ENABLE TRIGGER USER")
    return rate, cpu, written(cursor)


def endpoints(cursor, count: int) -> None:
    """``count`` webhook endpoints taking account.created: each new account is one delivery per endpoint."""
    cursor.execute("DELETE FROM webhook_subscriptions")
    cursor.execute(
        "INSERT INTO webhook_subscriptions (owner_id, url, events, secret_encrypted, secret_key_id)"
        " SELECT 'bench', 'https://hooks.example.com/' || g, '{account.created}', '\\x00', 'k' FROM generate_series(1, %s) g",
        [count],
    )


def index_costs(cursor, rows: int, repeat: int) -> None:
    """The whole chain's bulk rate with each secondary index of audit_events and outbox_events dropped
    in turn (and put back), interleaved with the chain with all of them, ``repeat`` rounds."""
    cursor.execute(
        "SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
        " WHERE i.indrelid IN ('audit_events'::regclass, 'outbox_events'::regclass) AND NOT i.indisprimary"
        " ORDER BY i.indrelid, c.relname"
    )
    # An index of the partitioned table reads "ON ONLY audit_events": made so, it would not reach the partitions.
    definitions = {name: definition.replace(" ON ONLY ", " ON ") for name, definition in cursor.fetchall()}
    rates = {name: [] for name in [None, *definitions]}
    cpus = {name: [] for name in rates}
    for _ in range(repeat):
        for name in rates:
            prepare(cursor, "accounts", TRIGGERS)
            if name:
                cursor.execute(f"DROP INDEX {name}")
            rate, cpu = bulk_timed(cursor, "accounts", rows)
            rates[name].append(rate)
            cpus[name].append(cpu or 0.0)
            if name:
                prepare(cursor, "accounts", TRIGGERS)  # empty again: the index comes back at once
                cursor.execute(definitions[name])
    every, every_cpu = statistics.median(rates[None]), statistics.median(cpus[None])
    print(
        f"the whole chain with one index dropped ({repeat} rounds, medians; what the index costs an account,"
        " by the wall clock and by the server's CPU time):"
    )
    print(f"  {'all indexes':40} {every:10,.0f} rows/s {'':16} {every_cpu:6.1f} µs CPU")
    for name in definitions:
        rate, cpu = statistics.median(rates[name]), statistics.median(cpus[name])
        print(
            f"  {'without ' + name:40} {rate:10,.0f} rows/s {rate / every:5.2f}x {1e6 / every - 1e6 / rate:5.1f} µs"
            f" {cpu:6.1f} µs CPU {every_cpu - cpu:5.1f} µs   (CPU each: {', '.join(f'{c:.0f}' for c in cpus[name])})"
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
    parser.add_argument(
        "--index-costs", action="store_true", help="also the chain with each audit and outbox index dropped in turn"
    )
    args = parser.parse_args()

    with scratch_database() as bench_name:
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

            chain, plain, chain_cpu, plain_cpu = [], [], [], []
            for _ in range(args.repeat):
                prepare(cursor, "accounts", TRIGGERS)
                rate, cpu = bulk_timed(cursor, "accounts", args.bulk)
                chain.append(rate)
                chain_cpu.append(cpu)
                by_chain = written(cursor)
                rate, cpu, by_plain = plain_sql(cursor, args.bulk)
                plain.append(rate)
                plain_cpu.append(cpu)
                assert by_chain == by_plain, f"the chain wrote {by_chain}, plain SQL {by_plain}"
            print(
                "rows written by each, the same (counts, and digests of accounts, tokens, audit rows and events): "
                + ", ".join(f"{name} {by_chain[i]:,}" for name, i in WRITTEN_COUNTS.items())
            )
            chain_rate, plain_rate = statistics.median(chain), statistics.median(plain)
            print(
                f"the whole chain (account, token, 2 audit rows, event) {chain_rate:12,.0f} rows/s in bulk; the same rows"
                f" by plain set-based SQL {plain_rate:,.0f}: chain / plain = {chain_rate / plain_rate:.2f}x (aim >= 0.7x)"
            )
            print(
                "  each pair, chain / plain: " + ", ".join(f"{c / p:.2f}x" for c, p in zip(chain, plain, strict=True))
            )
            if None not in chain_cpu + plain_cpu:
                print(
                    f"  server CPU an account: chain {statistics.median(chain_cpu):.0f} µs, plain SQL"
                    f" {statistics.median(plain_cpu):.0f} µs; plain / chain (as a rate ratio) "
                    + ", ".join(f"{p / c:.2f}x" for c, p in zip(chain_cpu, plain_cpu, strict=True))
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
            if args.index_costs:
                index_costs(cursor, args.bulk, args.repeat)


if __name__ == "__main__":
    main()
