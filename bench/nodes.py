"""Node assignment: allocations per second through node_allocate() against a naive SELECT ... ORDER BY +
UPDATE in the same run, at 1, 2 and 4 concurrent clients; and purge_old_records' deletes per second.

    .venv/bin/python bench/nodes.py [--accounts 1000000] [--allocations N] [--rounds 3] [--purge-rows N]

Runs on a scratch database (``<name>_bench``, created and dropped) of the configured server: the
embedded one unless DATABASE_URL is set (``LIFECYCLE_PGDATA`` chooses its data directory).

Set-up (timed and printed): one service; 100 nodes, capacities spread over 0.5-1.5x of accounts / 50
(10,000-30,000 for a million accounts: twice the accounts in all); ``--accounts`` accounts inserted in
bulk, in batches, with their triggers (activation token, audit rows, outbox event); all but a pool of
them assigned in bulk (INSERT ... SELECT, the owner's, with the audit triggers set aside), in proportion to the
nodes' capacities, created 30 days ago; ``available`` then set as a release would (10% of the capacity).

Measured, each client a process of its own with its own connection (autocommit, one allocation per
transaction), ``--allocations`` each, at 1, 2 and 4 clients, for the same accounts: the naive
allocation (tokenserver's get_best_node and _ADD_USER_TO_NODE: SELECT the node by
log(load)/log(capacity), UPDATE its load, INSERT the row) on copies of ``nodes`` and
``node_assignments``, and ``node_routine_allocate()`` as ``assignment_allocate()`` calls it, in ``--rounds``
rounds that take turns at going first (others share this machine's cores: their load falls on both
alike). Before each measurement five empty nodes with little room (capacities 1-5) are added to both:
tokenserver's order puts an empty node first, so concurrent clients meet there, and the naive one can
put a node over its capacity. Then the checks (nodes over capacity, each node's load against its
rows, one live row per account, the spread of load / capacity), and the purge: ``--purge-rows`` rows
replaced 29 days ago, deleted as purge_old_records does per row (old_assignment_records() pages,
assignment_delete() per row: accounts/nodes/purge.py's loop without its DELETE to the node), then as
many again by one set-based DELETE per 1,000 rows, for comparison. Nothing here asserts on a time.
"""

import argparse
import multiprocessing
import random
import sys
import threading
import time
from dataclasses import dataclass
from decimal import Decimal
from math import log
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench.django_setup  # noqa: F401 (Django set up before any model is imported)

# isort: split
import psycopg
from django.conf import settings
from django.db import connections

from accounts.nodes.selectors import old_assignment_records
from accounts.nodes.services import ROUTINE_ALLOCATE, assignment_delete, service_add
from bench.figures import percentiles
from bench.scratch import scratch_database

# The set-up writes as the owner (bulk history, the naive tables); the clients and the purge connect
# as the runtime role, as the product does.
owner = connections["owner"]

SERVICE = "sync-1.5"
NODES = 100
CONCURRENCIES = (1, 2, 4)
# Empty nodes with little room, added to both before each measurement (see the docstring).
SMALL_CAPACITIES = (1, 2, 3, 4, 5)
ACCOUNT_BATCH = 50_000
PURGE_BATCH = 1_000
RELEASE_RATE = Decimal(str(settings.NODE_CAPACITY_RELEASE_RATE))

# The set-up's bulk writes are the owner's, on a scratch database where nothing is anyone's act: the
# audit triggers are set aside for them (the owner may; inside the transaction, which restores them).
UNAUDITED = [
    "ALTER TABLE nodes DISABLE TRIGGER after_node_audit",
    "ALTER TABLE node_assignments DISABLE TRIGGER after_node_assignment_insert_audit",
    "ALTER TABLE node_assignments DISABLE TRIGGER after_node_assignment_update_audit",
    "ALTER TABLE node_assignments DISABLE TRIGGER after_node_assignment_delete_audit",
]
AUDITED = [statement.replace("DISABLE", "ENABLE") for statement in UNAUDITED]


def unaudited(cursor) -> None:
    for statement in UNAUDITED:
        cursor.execute(statement)


def audited(cursor) -> None:
    for statement in AUDITED:
        cursor.execute(statement)


# tokenserver's get_best_node and _ADD_USER_TO_NODE (GREATEST keeps available >= 0, its CHECK here),
# then the row, on copies without triggers: this UPDATE is the naive's own load-keeping.
NAIVE_PICK = """
SELECT id, node FROM naive_nodes
WHERE service = %s AND available > 0 AND current_load < capacity AND NOT downed AND NOT backoff
ORDER BY ln(nullif(current_load, 0)) / ln(capacity) NULLS FIRST LIMIT 1
"""
NAIVE_TAKE = (
    "UPDATE naive_nodes SET current_load = current_load + 1, available = greatest(available - 1, 0) WHERE id = %s"
)
NAIVE_INSERT = "INSERT INTO naive_assignments (service, account, node) VALUES (%s, %s, %s) RETURNING uid"

# Per node: its load, its live and total rows; for the checks.
NODE_ROWS = """
SELECT n.id, n.node, n.capacity, n.current_load, coalesce(a.rows, 0)
FROM {nodes} n LEFT JOIN (SELECT node, count(*) AS rows FROM {assignments} GROUP BY node) a ON a.node = n.id
WHERE n.service = %s ORDER BY n.id
"""
TABLES = {"ours": ("nodes", "node_assignments"), "naive": ("naive_nodes", "naive_assignments")}


def allocate_ours(conn: psycopg.Connection, sid: int, account: int) -> None:
    """assignment_allocate()'s transaction: node_routine_allocate() with its node's URL."""
    with conn.transaction():
        conn.execute(ROUTINE_ALLOCATE, [sid, account, 0, "", None, RELEASE_RATE, None]).fetchone()


def allocate_naive(conn: psycopg.Connection, sid: int, account: int) -> None:
    with conn.transaction():
        picked = conn.execute(NAIVE_PICK, [sid]).fetchone()
        if picked is None:
            raise RuntimeError("naive: no node with a released slot left")
        conn.execute(NAIVE_TAKE, [picked[0]])
        conn.execute(NAIVE_INSERT, [sid, account, picked[0]]).fetchone()


ALLOCATORS = {"ours": allocate_ours, "naive": allocate_naive}


def client(conninfo: str, kind: str, sid: int, accounts: list[int], ready, results) -> None:
    """One client process: its connection made before the start, then one allocation per account."""
    try:
        allocate = ALLOCATORS[kind]
        durations = []
        with psycopg.connect(conninfo, autocommit=True) as conn:
            ready.wait()
            for account in accounts:
                started = time.perf_counter()
                allocate(conn, sid, account)
                durations.append(time.perf_counter() - started)
        results.put(durations)
    except BaseException as error:  # reported by the parent
        ready.abort()
        results.put(f"{kind} client: {error!r}")


@dataclass(frozen=True)
class Figures:
    allocations: int
    elapsed: float  # seconds by the wall clock, all clients together
    durations: list[float]

    @property
    def rate(self) -> float:
        return self.allocations / self.elapsed


def combined(runs: list[Figures]) -> Figures:
    return Figures(
        sum(run.allocations for run in runs),
        sum(run.elapsed for run in runs),
        [d for run in runs for d in run.durations],
    )


def in_processes(conninfo: str, kind: str, sid: int, accounts: list[int], concurrency: int) -> Figures:
    """Allocate for ``accounts``, shared among ``concurrency`` client processes (forked: two cores)."""
    context = multiprocessing.get_context("fork")
    ready, results = context.Barrier(concurrency + 1), context.Queue()
    connections.close_all()  # no Django connection crosses the fork
    processes = [
        context.Process(target=client, args=(conninfo, kind, sid, accounts[n::concurrency], ready, results))
        for n in range(concurrency)
    ]
    for process in processes:
        process.start()
    try:
        ready.wait()
    except threading.BrokenBarrierError:
        pass  # a client failed before the start; its error is raised below
    started = time.perf_counter()
    answers = [results.get() for _ in processes]
    elapsed = time.perf_counter() - started
    for process in processes:
        process.join()
    failures = [answer for answer in answers if isinstance(answer, str)]
    if failures:
        raise RuntimeError("; ".join(failures))
    return Figures(len(accounts), elapsed, [d for durations in answers for d in durations])


def conninfo_of(alias: str) -> str:
    conf = connections[alias].settings_dict
    return psycopg.conninfo.make_conninfo(
        host=conf["HOST"] or None,
        port=conf["PORT"] or None,
        dbname=conf["NAME"],
        user=conf["USER"],
        password=conf.get("PASSWORD") or None,
    )


def add_nodes(cursor, sid: int, capacities: list[int]) -> None:
    """Nodes with their capacity released whole (loads come from the bulk assignment below)."""
    cursor.execute(
        "INSERT INTO nodes (service, node, capacity, available)"
        " SELECT %s, 'https://node' || n || '.example.com', c, c FROM unnest(%s::int[]) WITH ORDINALITY AS t(c, n)",
        [sid, capacities],
    )


def insert_accounts(cursor, count: int) -> None:
    """``count`` accounts in batches, each a bulk INSERT ... SELECT firing the accounts' triggers."""
    started = time.perf_counter()
    for first in range(1, count + 1, ACCOUNT_BATCH):
        last = min(first + ACCOUNT_BATCH - 1, count)
        batch_started = time.perf_counter()
        cursor.execute(
            "INSERT INTO accounts (email, login) SELECT 'user' || g || '@example.com', 'user' || g"
            " FROM generate_series(%s, %s) g",
            [first, last],
        )
        batch = time.perf_counter() - batch_started
        print(
            f"  accounts {last:>11,} of {count:,}   {(last - first + 1) / batch:8,.0f} rows/s this batch",
            flush=True,
        )
    elapsed = time.perf_counter() - started
    print(f"accounts inserted: {count:,} in {elapsed:.1f} s, {count / elapsed:,.0f} rows/s (token, audit, outbox)")


def assign_in_bulk(cursor, sid: int, assigned: int) -> None:
    """The first ``assigned`` accounts spread over the nodes in proportion to their capacities, one
    INSERT ... SELECT per node (the load trigger counts each statement's rows), not audited."""
    cursor.execute("SELECT id, capacity FROM nodes WHERE service = %s ORDER BY id", [sid])
    nodes = cursor.fetchall()
    total = sum(capacity for _, capacity in nodes)
    cursor.execute("SELECT min(id), max(id), count(*) FROM accounts")
    low, high, count = cursor.fetchone()
    if high - low + 1 != count:
        raise RuntimeError("the accounts' ids are not contiguous")
    started = time.perf_counter()
    first = low
    for n, (node, capacity) in enumerate(nodes):
        share = round(assigned * capacity / total) if n < len(nodes) - 1 else low + assigned - first
        with owner.cursor() as each:
            each.execute("BEGIN")
            unaudited(each)
            each.execute(
                "INSERT INTO node_assignments (service, account, node, created_at)"
                " SELECT %s, g, %s, now() - interval '30 days' FROM generate_series(%s::bigint, %s::bigint) g",
                [sid, node, first, first + share - 1],
            )
            audited(each)
            each.execute("COMMIT")
        first += share
        if (n + 1) % 20 == 0:
            done = first - low
            print(f"  assignments {done:>11,} of {assigned:,}   {done / (time.perf_counter() - started):8,.0f} rows/s")
    elapsed = time.perf_counter() - started
    print(f"assigned in bulk: {assigned:,} in {elapsed:.1f} s, {assigned / elapsed:,.0f} rows/s")
    # As a release would leave them (tokenserver's NODE_CAPACITY_RELEASE_RATE), not audited.
    cursor.execute("BEGIN")
    unaudited(cursor)
    cursor.execute(
        "UPDATE nodes SET available = least(ceil(capacity * %s)::int, capacity - current_load) WHERE service = %s",
        [RELEASE_RATE, sid],
    )
    audited(cursor)
    cursor.execute("COMMIT")


def naive_copies(cursor) -> None:
    """The naive's tables: same columns, defaults, CHECKs and indexes (logged, as ours), same rows; no
    triggers and no foreign keys. The runtime role may use them as it uses ours."""
    started = time.perf_counter()
    role = owner.ops.quote_name(settings.DATABASE_RUNTIME_ROLE)
    for copy, table, key in (("naive_nodes", "nodes", "id"), ("naive_assignments", "node_assignments", "uid")):
        cursor.execute(f"CREATE TABLE {copy} (LIKE {table} INCLUDING ALL)")
        cursor.execute(f"INSERT INTO {copy} SELECT * FROM {table}")
        cursor.execute(f"SELECT setval(pg_get_serial_sequence('{copy}', '{key}'), max({key})) FROM {copy}")
        cursor.execute(f"GRANT SELECT, INSERT, UPDATE ON {copy} TO {role}")
        cursor.execute(f"GRANT USAGE ON SEQUENCE {copy}_{key}_seq TO {role}")
    print(f"naive tables copied: {time.perf_counter() - started:.1f} s")


def add_small_nodes(cursor, sid: int, label: str) -> None:
    """Empty nodes with little room, to both tables (the same ids: the copies follow ours)."""
    cursor.execute("BEGIN")
    unaudited(cursor)
    cursor.execute(
        "INSERT INTO nodes (service, node, capacity, available)"
        " SELECT %s, 'https://small-' || %s || '-' || c || '.example.com', c, c FROM unnest(%s::int[]) c",
        [sid, label, list(SMALL_CAPACITIES)],
    )
    cursor.execute("INSERT INTO naive_nodes SELECT * FROM nodes WHERE id NOT IN (SELECT id FROM naive_nodes)")
    audited(cursor)
    cursor.execute("COMMIT")


@dataclass(frozen=True)
class NodeState:
    over: int  # nodes holding more rows than their capacity
    excess: int  # rows beyond the capacity, all nodes
    miscounted: int  # nodes whose current_load is not their row count
    low: float  # load / capacity, lowest and highest, over the 100 nodes
    high: float
    ratio_low: float  # tokenserver's ln(load) / ln(capacity), lowest and highest
    ratio_high: float


def node_state(cursor, kind: str, sid: int) -> NodeState:
    nodes, assignments = TABLES[kind]
    cursor.execute(NODE_ROWS.format(nodes=nodes, assignments=assignments), [sid])
    rows = cursor.fetchall()
    main = [(capacity, load) for _, url, capacity, load, _ in rows if "//small-" not in url]
    ratios = [(load / capacity, _ln_ratio(load, capacity)) for capacity, load in main]
    return NodeState(
        over=sum(1 for *_, capacity, _, count in rows if count > capacity),
        excess=sum(max(count - capacity, 0) for *_, capacity, _, count in rows),
        miscounted=sum(1 for *_, load, count in rows if load != count),
        low=min(r for r, _ in ratios),
        high=max(r for r, _ in ratios),
        ratio_low=min(r for _, r in ratios),
        ratio_high=max(r for _, r in ratios),
    )


def _ln_ratio(load: int, capacity: int) -> float:
    return log(load) / log(capacity) if load > 0 and capacity > 1 else 0.0


def duplicate_live_rows(cursor, kind: str) -> int:
    _, assignments = TABLES[kind]
    cursor.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM {assignments} WHERE replaced_at IS NULL"
        " GROUP BY service, account HAVING count(*) > 1) d"
    )
    return cursor.fetchone()[0]


def make_old(cursor, sid: int, rows: int, assigned: int, offset: int) -> None:
    """``rows`` live bulk rows, spread over the nodes (every k-th uid), replaced 29 days ago."""
    step = max(assigned // (2 * rows), 2)
    cursor.execute("BEGIN")
    unaudited(cursor)
    cursor.execute(
        "UPDATE node_assignments SET replaced_at = created_at + interval '1 day'"
        " WHERE uid IN (SELECT uid FROM node_assignments WHERE service = %s AND replaced_at IS NULL"
        " AND created_at < now() - interval '8 days' AND uid %% %s = %s ORDER BY uid LIMIT %s)",
        [sid, step, offset, rows],
    )
    made = cursor.rowcount
    audited(cursor)
    cursor.execute("COMMIT")
    if made != rows:
        raise RuntimeError(f"only {made} of {rows} rows made old")
    cursor.execute("ANALYZE node_assignments")  # as autovacuum would after such an update


def purge_per_row() -> tuple[int, float, float]:
    """purge_old_records' loop, less the node's own data deletion (an HTTP call in tokenserver):
    old rows a page at a time, each deleted by assignment_delete(). Returns rows, seconds, and the
    seconds spent reading the pages."""
    settings.DEBUG = False  # as in production: DEBUG on wraps every query in a logging cursor
    started = time.perf_counter()
    after, done, reading = 0, 0, 0.0
    while True:
        page_started = time.perf_counter()
        records = old_assignment_records(service=SERVICE, after_uid=after)
        reading += time.perf_counter() - page_started
        if not records:
            break
        for record in records:
            assignment_delete(uid=record.uid)
        after, done = records[-1].uid, done + len(records)
    return done, time.perf_counter() - started, reading


def purge_set_based(sid: int) -> tuple[int, float]:
    """The same old rows, one DELETE per batch of 1,000, unaudited as assignment_delete's of a replaced
    row (the owner's, with the audit triggers set aside: the runtime role has no set-based routine)."""
    started = time.perf_counter()
    done = 0
    with psycopg.connect(conninfo_of("owner"), autocommit=True) as conn:
        while True:
            with conn.transaction():
                for statement in UNAUDITED:
                    conn.execute(statement)
                deleted = conn.execute(
                    "DELETE FROM node_assignments WHERE uid IN (SELECT uid FROM node_assignments"
                    " WHERE service = %s AND replaced_at < now() - interval '7 days' ORDER BY uid LIMIT %s)",
                    [sid, PURGE_BATCH],
                ).rowcount
                for statement in AUDITED:
                    conn.execute(statement)
            if not deleted:
                break
            done += deleted
    return done, time.perf_counter() - started


def show(label: str, concurrency: int, figures: Figures, state: NodeState, ratio: str = "") -> None:
    over = f"{state.over} nodes, {state.excess} rows over" if state.over else "none"
    print(
        f"{label:44} {concurrency:7} {figures.rate:9,.0f}   {percentiles(figures.durations)}   {ratio:>12}   {over}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--accounts", type=int, default=1_000_000, help="accounts in all (default 1,000,000)")
    parser.add_argument(
        "--allocations",
        type=int,
        help="allocations per client per measurement (default accounts / 100, at most 2,000)",
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds per measurement, naive and ours taking turns first (default 3)"
    )
    parser.add_argument("--purge-rows", type=int, help="old rows per purge (default accounts / 20, at most 20,000)")
    args = parser.parse_args()
    allocations = args.allocations or max(min(2_000, args.accounts // 100), 10)
    purge_rows = args.purge_rows or max(min(20_000, args.accounts // 20), 10)
    pool = sum(CONCURRENCIES) * allocations
    assigned = args.accounts - pool
    if assigned < max(args.accounts // 2, 4 * purge_rows):
        parser.error(
            f"{pool:,} allocations leave {assigned:,} accounts to assign in bulk: fewer than half the accounts"
            f" or four times --purge-rows; lower --allocations or --purge-rows"
        )

    with scratch_database():
        with owner.cursor() as cursor:
            cursor.execute("SELECT version()")
            version = cursor.fetchone()[0].split(" on ")[0]
            print(
                f"{version} - {args.accounts:,} accounts, {NODES} nodes, {assigned:,} assigned in bulk,"
                f" {allocations:,} allocations per client per measurement",
                flush=True,
            )
            service_add(service=SERVICE)
            cursor.execute("SELECT id FROM services WHERE service = %s", [SERVICE])
            (sid,) = cursor.fetchone()
            rng = random.Random(14)
            capacities = [round(args.accounts / 50 * rng.uniform(0.5, 1.5)) for _ in range(NODES)]
            add_nodes(cursor, sid, capacities)
            print(f"nodes: capacities {min(capacities):,}-{max(capacities):,}, {sum(capacities):,} in all")
            insert_accounts(cursor, args.accounts)
            assign_in_bulk(cursor, sid, assigned)
            started = time.perf_counter()
            cursor.execute("VACUUM ANALYZE nodes")
            cursor.execute("VACUUM ANALYZE node_assignments")
            cursor.execute("ANALYZE accounts")
            print(f"vacuum and analyze: {time.perf_counter() - started:.1f} s")
            naive_copies(cursor)
            cursor.execute("VACUUM ANALYZE naive_nodes")
            cursor.execute("VACUUM ANALYZE naive_assignments")
            before = node_state(cursor, "ours", sid)
        print(
            f"before: load / capacity {before.low:.3f}-{before.high:.3f},"
            f" ln(load) / ln(capacity) {before.ratio_low:.4f}-{before.ratio_high:.4f}"
        )
        print(
            "naive: its SELECT, UPDATE and INSERT on copies of nodes and node_assignments (same columns, CHECKs and"
            " indexes, logged)\n  without triggers: its UPDATE keeps its load. Ours pays in its figure for the insert"
            " triggers (the account checked\n  and KEY SHARE-locked, its history read, the load counted). Before each"
            " measurement, 5 empty nodes of capacity 1-5 added to both."
        )

        conninfo = conninfo_of("default")
        pool_accounts = list(range(assigned + 1, args.accounts + 1))
        ratios = {}
        print(
            f"{'':44} {'clients':>7} {'allocs/s':>9}   {'per allocation':44}   {'ours / naive':>12}   nodes over capacity so far"
        )
        for concurrency in CONCURRENCIES:
            accounts, pool_accounts = (
                pool_accounts[: concurrency * allocations],
                pool_accounts[concurrency * allocations :],
            )
            with owner.cursor() as cursor:
                add_small_nodes(cursor, sid, f"c{concurrency}")
            # Rounds taking turns at going first: the load others put on the machine falls on both alike.
            runs: dict[str, list[Figures]] = {"naive": [], "ours": []}
            size = -(-len(accounts) // args.rounds)
            for turn, start in enumerate(range(0, len(accounts), size)):
                for kind in ("naive", "ours") if turn % 2 == 0 else ("ours", "naive"):
                    runs[kind].append(in_processes(conninfo, kind, sid, accounts[start : start + size], concurrency))
            naive, ours = combined(runs["naive"]), combined(runs["ours"])
            each = [o.rate / n.rate for o, n in zip(runs["ours"], runs["naive"], strict=True)]
            ratios[concurrency] = ours.rate / naive.rate
            with owner.cursor() as cursor:
                naive_state, ours_state = node_state(cursor, "naive", sid), node_state(cursor, "ours", sid)
            show("naive SELECT ... ORDER BY + UPDATE + INSERT", concurrency, naive, naive_state)
            show("node_allocate()", concurrency, ours, ours_state, f"{ratios[concurrency]:.2f}x")
            print(f"  {'':42} rounds ours / naive: {', '.join(f'{r:.2f}x' for r in each)}")
        print("ours / naive: " + ", ".join(f"{c} client{'s' if c > 1 else ''} {r:.2f}x" for c, r in ratios.items()))

        with owner.cursor() as cursor:
            for kind in ("ours", "naive"):
                state = node_state(cursor, kind, sid)
                print(
                    f"after, {kind + ':':6} nodes over capacity {state.over} ({state.excess} rows over),"
                    f" nodes whose load is not their row count {state.miscounted},"
                    f" accounts with more than one live row {duplicate_live_rows(cursor, kind)};"
                    f" load / capacity over the {NODES} nodes {state.low:.3f}-{state.high:.3f},"
                    f" ln(load) / ln(capacity) {state.ratio_low:.4f}-{state.ratio_high:.4f}"
                )
            cursor.execute("SELECT count(*) FROM node_assignments WHERE replaced_at IS NULL")
            live = cursor.fetchone()[0]
            print(f"live assignments: {live:,} (expected {assigned + sum(CONCURRENCIES) * allocations:,})")

            make_old(cursor, sid, purge_rows, assigned, offset=0)
        rows, elapsed, reading = purge_per_row()
        per_row = rows / elapsed
        print(
            f"purge, per row: old_assignment_records() + assignment_delete()   {rows:,} rows {per_row:9,.0f} rows/s"
            f"   ({reading / elapsed:.0%} of it reading the pages of 100)"
        )
        with owner.cursor() as cursor:
            make_old(cursor, sid, purge_rows, assigned, offset=1)
        rows, elapsed = purge_set_based(sid)
        set_based = rows / elapsed
        print(
            f"purge, set-based: DELETE ... LIMIT {PURGE_BATCH:,} a transaction        {rows:,} rows {set_based:9,.0f} rows/s"
            f"   per row / set-based = {per_row / set_based:.2f}x"
        )
        with owner.cursor() as cursor:
            state = node_state(cursor, "ours", sid)
            print(f"after the purge: nodes whose load is not their row count {state.miscounted}")


if __name__ == "__main__":
    main()
