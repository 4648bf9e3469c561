"""Allocation claims slots from nodes: with several real sessions at once, out-of-order commits and a
session killed mid-way, no node goes over its capacity, no account gets two live rows, and the load
always equals the rows on the node."""

import threading

import psycopg
import pytest

from accounts.nodes.services import service_id
from lifecycle.demo.factories import AccountFactory
from tests.accounts.nodes.conftest import NODE_URL, SERVICE
from tests.support import connect, wait_until_blocked

pytestmark = pytest.mark.django_db(transaction=True)

ALLOCATE = "SELECT uid, node FROM node_allocate(%s, %s)"


@pytest.fixture
def small_nodes(nodes):
    """The default node plus two small ones, 20 slots in all, every slot released."""
    nodes.node_update(service=SERVICE, node=NODE_URL, capacity=5, available=5, actor=None)
    nodes.node_add(service=SERVICE, node="https://phx13", capacity=7, available=7, actor=None)
    nodes.node_add(service=SERVICE, node="https://phx14", capacity=8, available=8, actor=None)
    return service_id(SERVICE)


def consistent(conn):
    """Every node's load is its rows, within its capacity; one live row per account."""
    rows = conn.execute(
        "SELECT n.node, n.current_load, n.capacity, count(a.uid) FROM nodes n"
        " LEFT JOIN node_assignments a ON a.node = n.id GROUP BY n.id ORDER BY n.node"
    ).fetchall()
    for node, current_load, capacity, counted in rows:
        assert current_load == counted, node
        assert current_load <= capacity, node
    (doubled,) = conn.execute(
        "SELECT count(*) FROM (SELECT account FROM node_assignments WHERE replaced_at IS NULL"
        " GROUP BY service, account HAVING count(*) > 1) d"
    ).fetchone()
    assert doubled == 0
    return {node: current_load for node, current_load, _, _ in rows}


def test_concurrent_allocations_never_exceed_capacity(small_nodes):
    """Four sessions allocating 8 accounts each over 20 slots: exactly 20 succeed, the rest are told
    there is no capacity, every node ends full and no fuller."""
    accounts = [AccountFactory().id for _ in range(32)]
    outcomes = []
    start = threading.Barrier(4)

    def client(mine):
        with connect(autocommit=True) as conn:
            start.wait()
            for account in mine:
                try:
                    conn.execute(ALLOCATE, [small_nodes, account])
                    outcomes.append("ok")
                except psycopg.DatabaseError as error:
                    assert "no node of service" in str(error)
                    outcomes.append("full")

    threads = [threading.Thread(target=client, args=(accounts[i::4],)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes).count("ok") == 20
    with connect(autocommit=True) as conn:
        assert consistent(conn) == {NODE_URL: 5, "https://phx13": 7, "https://phx14": 8}


def test_two_allocations_of_one_account_leave_one_live_row(small_nodes):
    """The second of two overlapping allocations of one account waits for the first, then is refused by
    the live-row index; its node's slot is not taken."""
    account = AccountFactory().id
    with connect() as first, connect(autocommit=True) as observer:
        first.execute(ALLOCATE, [small_nodes, account])
        result = {}

        def second():
            with connect(autocommit=True) as conn:
                try:
                    conn.execute(ALLOCATE, [small_nodes, account])
                    result["second"] = "ok"
                except psycopg.errors.UniqueViolation:
                    result["second"] = "refused"

        thread = threading.Thread(target=second)
        thread.start()
        wait_until_blocked(observer, 1)
        first.commit()
        thread.join()
        assert result == {"second": "refused"}
        assert sum(consistent(observer).values()) == 1


def test_out_of_order_commits_spread_and_never_overfill(small_nodes):
    """An allocation holding the best node does not stop another: it takes the next node (SKIP LOCKED)
    and commits first; the first commits after. When the only candidate is held, the other waits and
    then sees the node as the first left it: full means no capacity, never one over."""
    a, b, c, d = (AccountFactory().id for _ in range(4))
    with connect() as slow, connect(autocommit=True) as fast:
        (_, slow_node) = slow.execute(ALLOCATE, [small_nodes, a]).fetchone()
        (_, fast_node) = fast.execute(ALLOCATE, [small_nodes, b]).fetchone()
        assert fast_node != slow_node
        slow.commit()
        assert sum(consistent(fast).values()) == 2
    with connect(autocommit=True) as admin:
        admin.execute("UPDATE nodes SET capacity = current_load + 1, available = 1 WHERE node = %s", [NODE_URL])
        admin.execute("UPDATE nodes SET downed = true WHERE node <> %s", [NODE_URL])
    with connect() as holder, connect(autocommit=True) as observer:
        holder.execute(ALLOCATE, [small_nodes, c])
        result = {}

        def waiter():
            with connect(autocommit=True) as conn:
                try:
                    conn.execute(ALLOCATE, [small_nodes, d])
                    result["waiter"] = "ok"
                except psycopg.DatabaseError as error:
                    result["waiter"] = str(error).splitlines()[0]

        thread = threading.Thread(target=waiter)
        thread.start()
        wait_until_blocked(observer, 1)
        holder.commit()
        thread.join()
        assert result["waiter"].startswith("nodes: no node of service")
        consistent(observer)


def test_a_killed_allocation_leaves_nothing_behind(small_nodes):
    """A session killed after allocating but before committing leaves no row and no slot taken, and the
    allocation waiting behind it goes on."""
    a, b = AccountFactory().id, AccountFactory().id
    with connect(autocommit=True) as admin:
        admin.execute("UPDATE nodes SET downed = true WHERE node <> %s", [NODE_URL])
    victim = connect()
    try:
        (victim_pid,) = victim.execute("SELECT pg_backend_pid()").fetchone()
        victim.execute(ALLOCATE, [small_nodes, a])
        result = {}

        def waiter():
            with connect(autocommit=True) as conn:
                result["uid"] = conn.execute(ALLOCATE, [small_nodes, b]).fetchone()[0]

        thread = threading.Thread(target=waiter)
        with connect(autocommit=True) as observer:
            # The only node up is the victim's: the waiter's SKIP LOCKED finds none, so it waits for it.
            thread.start()
            wait_until_blocked(observer, 1)
            observer.execute("SELECT pg_terminate_backend(%s)", [victim_pid])
            thread.join()
            assert result["uid"]
            loads = consistent(observer)
            assert loads[NODE_URL] == 1
            assert observer.execute("SELECT count(*) FROM node_assignments WHERE account = %s", [a]).fetchone() == (0,)
    finally:
        victim.close()
