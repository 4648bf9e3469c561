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
    """Every node's load is its live rows, within its capacity; one live row per account."""
    rows = conn.execute(
        "SELECT n.node, n.current_load, n.capacity, count(a.uid) FILTER (WHERE a.replaced_at IS NULL) FROM nodes n"
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


def allocate_together(service: int, accounts: list[int], sessions: int) -> tuple[list[str], list[str]]:
    """``sessions`` connections allocating ``accounts`` (dealt round-robin) at once, each call its own
    transaction: the outcomes ("ok", or "full" for the capacity refusal, LN002), and every other error
    as "SQLSTATE: message" (a thread's failure would otherwise only be a warning)."""
    outcomes, errors = [], []
    start = threading.Barrier(sessions)

    def client(mine):
        try:
            with connect(autocommit=True) as conn:
                start.wait(timeout=30)
                for account in mine:
                    try:
                        conn.execute(ALLOCATE, [service, account])
                        outcomes.append("ok")
                    except psycopg.Error as error:
                        if error.sqlstate != "LN002":
                            raise
                        outcomes.append("full")
        except Exception as error:  # reported by the main thread
            errors.append(f"{getattr(error, 'sqlstate', None)}: {str(error).splitlines()[0]}")

    threads = [threading.Thread(target=client, args=(accounts[i::sessions],)) for i in range(sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes, errors


def test_concurrent_allocations_never_exceed_capacity(small_nodes):
    """Four sessions allocating 8 accounts each over 20 slots: exactly 20 succeed, the rest are told
    there is no capacity, every node ends full and no fuller."""
    accounts = [AccountFactory().id for _ in range(32)]
    outcomes, errors = allocate_together(small_nodes, accounts, 4)
    assert errors == []
    assert outcomes.count("ok") == 20
    assert outcomes.count("full") == 12
    with connect(autocommit=True) as conn:
        assert consistent(conn) == {NODE_URL: 5, "https://phx13": 7, "https://phx14": 8}


def test_concurrent_allocations_releasing_slots_never_deadlock(nodes):
    """Eight sessions racing over small nodes that release one slot at a time, so that most calls
    release slots while others wait for a node: in every round each slot is taken once, every other
    call is told there is no capacity, and no call fails otherwise (a deadlock among them would)."""
    accounts = [AccountFactory().id for _ in range(32)]
    errors, counts = [], []
    for round_ in range(12):
        service = f"race-{round_}"
        nodes.service_add(service=service)
        for number, capacity in enumerate((2, 3, 4, 5)):
            nodes.node_add(service=service, node=f"https://race{number}", capacity=capacity, available=1, actor=None)
        outcomes, failures = allocate_together(service_id(service), accounts, 8)
        errors += failures
        counts.append((outcomes.count("ok"), outcomes.count("full")))
    assert errors == []
    assert counts == [(14, 18)] * 12
    with connect(autocommit=True) as conn:
        consistent(conn)


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


def test_an_allocation_waits_for_a_replacement_of_its_account_before_taking_a_node(small_nodes):
    """A transaction replacing an account's row and allocating it anew, and another allocation of the
    same account meanwhile, with one node up: the second waits for the first before holding the node
    (not at the live-row index holding it, while the first waits for the node: a deadlock), then is
    refused by the index; the account has one live row."""
    account = AccountFactory().id
    with connect(autocommit=True) as admin:
        admin.execute("UPDATE nodes SET downed = true WHERE node <> %s", [NODE_URL])
        admin.execute(ALLOCATE, [small_nodes, account])
    with connect() as replacing, connect(autocommit=True) as observer:
        replacing.execute(
            "UPDATE node_assignments SET replaced_at = clock_timestamp() WHERE account = %s AND replaced_at IS NULL",
            [account],
        )
        result = {}

        def second():
            with connect(autocommit=True) as conn:
                try:
                    conn.execute(ALLOCATE, [small_nodes, account])
                    result["second"] = "ok"
                except psycopg.Error as error:
                    result["second"] = error.sqlstate

        thread = threading.Thread(target=second)
        thread.start()
        wait_until_blocked(observer, 1)
        (_, node) = replacing.execute(ALLOCATE, [small_nodes, account]).fetchone()
        replacing.commit()
        thread.join()
        assert result == {"second": "23505"}
        assert consistent(observer)[NODE_URL] == 1  # the new live row; the replaced one holds no slot
        live = observer.execute(
            "SELECT node FROM node_assignments WHERE account = %s AND replaced_at IS NULL", [account]
        ).fetchall()
        assert live == [(node,)]
