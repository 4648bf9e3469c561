"""The node-assignment rules hold for a change typed in psql (accounts/sql/0014_nodes.sql): one live
row, numbers that only go forwards, no reused client state, no assignment for a missing account, the
load kept by the database, and what is audited."""

import psycopg
import pytest

from accounts.nodes.services import service_id
from platform_events.audit.models import AuditEvent
from tests.accounts.nodes.conftest import NODE_URL, SERVICE
from tests.support import connect, connect_as_owner

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def psql(nodes):
    with connect(autocommit=True) as conn:
        yield conn


def insert(conn, account, **values):
    row = {"service": service_id(SERVICE), "account": account, "generation": 0, "client_state": "", **values}
    if "node" not in row:
        row["node"] = conn.execute("SELECT id FROM nodes WHERE node = %s", [NODE_URL]).fetchone()[0]
    columns = ", ".join(row)
    return conn.execute(
        f"INSERT INTO node_assignments ({columns}) VALUES ({', '.join(['%s'] * len(row))}) RETURNING uid",
        list(row.values()),
    ).fetchone()[0]


def load(conn):
    return conn.execute("SELECT current_load, available FROM nodes WHERE node = %s", [NODE_URL]).fetchone()


def test_a_second_live_row_is_refused(psql, account):
    """Two live rows for one service and account: the live-row index refuses the second."""
    a = account()
    insert(psql, a)
    with pytest.raises(psycopg.errors.UniqueViolation, match="node_assignments_live_key"):
        insert(psql, a)


def test_an_assignment_needs_an_account_that_exists(psql):
    """A row for an account that does not exist is refused with the rule's words."""
    with pytest.raises(psycopg.DatabaseError, match="nodes: account 987654 does not exist"):
        insert(psql, 987654)


def test_numbers_never_go_backwards(psql, account):
    """Lowering generation or keys_changed_at, or clearing keys_changed_at, is refused, with the code
    tokenserver's API would answer in the HINT."""
    uid = insert(psql, account(), generation=10, keys_changed_at=5)
    for change, code in (
        ("generation = 9", "invalid-generation"),
        ("keys_changed_at = 4", "invalid-keysChangedAt"),
        ("keys_changed_at = NULL", "invalid-keysChangedAt"),
    ):
        with pytest.raises(psycopg.DatabaseError, match="never goes backwards") as refused:
            psql.execute(f"UPDATE node_assignments SET {change} WHERE uid = %s", [uid])
        assert refused.value.diag.message_hint == code
    psql.execute("UPDATE node_assignments SET generation = 11, keys_changed_at = 6 WHERE uid = %s", [uid])


def test_a_new_row_continues_the_accounts_numbers(psql, account):
    """After a replaced row, a new one may not start below its generation or keys_changed_at, nor reuse
    an earlier client state other than the newest row's (which a fresh node for the same keys copies)."""
    a = account()
    first = insert(psql, a, generation=10, keys_changed_at=5, client_state="aa")
    psql.execute("UPDATE node_assignments SET replaced_at = now() WHERE uid = %s", [first])
    second = insert(psql, a, generation=10, keys_changed_at=6, client_state="bb")
    psql.execute("UPDATE node_assignments SET replaced_at = now() WHERE uid = %s", [second])
    with pytest.raises(psycopg.DatabaseError, match="generation 9 is below"):
        insert(psql, a, generation=9, keys_changed_at=6, client_state="bb")
    with pytest.raises(psycopg.DatabaseError, match="keys_changed_at 5 is below"):
        insert(psql, a, generation=10, keys_changed_at=5, client_state="bb")
    with pytest.raises(psycopg.DatabaseError, match="client_state 'aa' was used before") as refused:
        insert(psql, a, generation=10, keys_changed_at=6, client_state="aa")
    assert refused.value.diag.message_hint == "invalid-client-state"
    insert(psql, a, generation=10, keys_changed_at=6, client_state="bb")


def test_an_assignment_is_fixed_but_for_its_numbers_and_replacement(psql, account):
    """Its client state, account and node do not change (a new state is a new row); replaced stays replaced."""
    uid = insert(psql, account(), client_state="aa")
    with pytest.raises(psycopg.DatabaseError, match="cannot change"):
        psql.execute("UPDATE node_assignments SET client_state = 'bb' WHERE uid = %s", [uid])
    other = psql.execute(
        "INSERT INTO nodes (service, node, capacity) SELECT service, 'https://phx99', 5 FROM nodes RETURNING id"
    )
    with pytest.raises(psycopg.DatabaseError, match="does not move between nodes"):
        psql.execute("UPDATE node_assignments SET node = %s WHERE uid = %s", [other.fetchone()[0], uid])
    psql.execute("UPDATE node_assignments SET replaced_at = now() WHERE uid = %s", [uid])
    with pytest.raises(psycopg.DatabaseError, match="stays replaced"):
        psql.execute("UPDATE node_assignments SET replaced_at = NULL WHERE uid = %s", [uid])
    with pytest.raises(psycopg.errors.CheckViolation):
        psql.execute(
            "INSERT INTO node_assignments (service, account, client_state) SELECT service, account, 'xyz'"
            " FROM node_assignments WHERE uid = %s",
            [uid],
        )


def test_the_load_is_the_live_rows_on_the_node(psql, account):
    """A live row inserted by hand takes a slot and one released one; its deletion gives both back."""
    before = load(psql)
    uid = insert(psql, account())
    assert load(psql) == (before[0] + 1, before[1] - 1)
    psql.execute("DELETE FROM node_assignments WHERE uid = %s", [uid])
    assert load(psql) == before


def test_a_replaced_row_holds_no_slot(psql, account):
    """Replacing a live row gives its slots back; purging the replaced row later changes no load; a row
    inserted already replaced takes none."""
    a, b = account(), account()
    before = load(psql)
    uid = insert(psql, a)
    psql.execute("UPDATE node_assignments SET replaced_at = clock_timestamp() WHERE uid = %s", [uid])
    assert load(psql) == before
    psql.execute("DELETE FROM node_assignments WHERE uid = %s", [uid])
    assert load(psql) == before
    insert(psql, b, replaced_at="2026-01-01T00:00:00Z", created_at="2025-12-31T00:00:00Z")
    assert load(psql) == before


def test_key_changes_on_a_full_node_keep_its_load(psql, account):
    """A key change (the live row replaced, a new one on the same node) leaves the load and the
    released slots as they were, however often: one account cannot fill its node."""
    psql.execute("UPDATE nodes SET capacity = 2, available = 1, current_load = 0 WHERE node = %s", [NODE_URL])
    a = account()
    insert(psql, a, client_state="00" * 16)
    before = load(psql)
    for number in range(1, 18):
        psql.execute(
            "UPDATE node_assignments SET replaced_at = clock_timestamp() WHERE account = %s AND replaced_at IS NULL",
            [a],
        )
        insert(psql, a, generation=number, client_state=f"{number:02x}" * 16)
    assert load(psql) == before == (1, 0)


def now_ms(conn) -> int:
    return conn.execute("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint").fetchone()[0]


@pytest.mark.parametrize(
    ("column", "code"), [("generation", "invalid-generation"), ("keys_changed_at", "invalid-keysChangedAt")]
)
def test_a_number_more_than_a_day_ahead_of_the_clock_is_refused(psql, account, column, code):
    """Whoever writes, a generation or keys_changed_at more than a day ahead of the clock (2^63-2 among
    them) is refused, inserted or updated, with tokenserver's code in the HINT; within the day it is taken."""
    a = account()
    for value in (2**63 - 2, now_ms(psql) + 86_500_000):
        with pytest.raises(psycopg.DatabaseError, match=f"nodes: {column} {value} is more than a day ahead") as refused:
            insert(psql, a, **{column: value})
        assert refused.value.diag.message_hint == code
    uid = insert(psql, a)
    with pytest.raises(psycopg.DatabaseError, match="more than a day ahead"):
        psql.execute(f"UPDATE node_assignments SET {column} = %s WHERE uid = %s", [2**63 - 2, uid])
    psql.execute(f"UPDATE node_assignments SET {column} = %s WHERE uid = %s", [now_ms(psql) + 3_600_000, uid])


def test_the_tombstone_and_numbers_the_account_reached_are_no_new_claim(psql, account):
    """Retiring (generation 2^63-1) is taken; so is a fresh row that copies numbers the account's rows
    already reached, however far ahead, so an account wedged before the rule still gets a fresh node."""
    a = account()
    uid = insert(psql, a)
    with connect_as_owner() as owner:  # wedged as a row could be before the rule: the trigger off a moment
        owner.execute("ALTER TABLE node_assignments DISABLE TRIGGER before_node_assignment_clock")
        owner.execute("UPDATE node_assignments SET generation = %s WHERE uid = %s", [2**63 - 2, uid])
        owner.execute("ALTER TABLE node_assignments ENABLE TRIGGER before_node_assignment_clock")
    psql.execute("UPDATE node_assignments SET replaced_at = clock_timestamp() WHERE uid = %s", [uid])
    insert(psql, a, generation=2**63 - 2)
    psql.execute(
        "UPDATE node_assignments SET generation = %s WHERE account = %s AND replaced_at IS NULL", [2**63 - 1, a]
    )


def test_a_number_from_the_future_may_be_lowered_to_the_present_and_a_real_one_never(psql, account):
    """ "Never backwards" spares a number more than a day ahead of the clock (one no real credentials
    carry, left from before the rule): it may go back to the clock's limit or below, not to another
    number from the future; a real number still never goes back."""
    uid = insert(psql, account(), generation=500, keys_changed_at=400)
    with connect_as_owner() as owner:
        owner.execute("ALTER TABLE node_assignments DISABLE TRIGGER before_node_assignment_clock")
        owner.execute(
            "UPDATE node_assignments SET generation = %s, keys_changed_at = %s WHERE uid = %s", [2**63 - 2, 2**62, uid]
        )
        owner.execute("ALTER TABLE node_assignments ENABLE TRIGGER before_node_assignment_clock")
    with pytest.raises(psycopg.DatabaseError, match="generation never goes backwards"):
        psql.execute("UPDATE node_assignments SET generation = %s WHERE uid = %s", [2**63 - 3, uid])
    psql.execute("UPDATE node_assignments SET generation = 500, keys_changed_at = 400 WHERE uid = %s", [uid])
    for change in ("generation = 499", "keys_changed_at = 399"):
        with pytest.raises(psycopg.DatabaseError, match="never goes backwards"):
            psql.execute(f"UPDATE node_assignments SET {change} WHERE uid = %s", [uid])


def test_deleting_an_account_leaves_its_assignments_live(psql, account):
    """An account's deletion is not blocked by its assignments and does not remove them: the consumer
    retires them (test_process_account_events.py)."""
    a = account()
    insert(psql, a)
    psql.execute("DELETE FROM accounts WHERE id = %s", [a])
    assert psql.execute(
        "SELECT count(*) FROM node_assignments WHERE account = %s AND replaced_at IS NULL", [a]
    ).fetchone() == (1,)


def test_node_changes_are_audited_and_the_load_bookkeeping_is_not(psql, account):
    """psql's change of a node is audited (node.changed, as the database role); the load that rows
    move is not; replacing a node's rows is audited once per node with the count; setting the
    lifecycle.node_routine the services once set silences nothing."""
    AuditEvent.objects.all()  # noqa: B018 (the trail starts empty in each transactional test)
    accounts = [account() for _ in range(3)]
    for a in accounts:
        insert(psql, a)
    created = AuditEvent.objects.filter(action="node_assignment.created")
    assert sorted(int(e.resource_id) for e in created) == sorted(accounts)
    assert not AuditEvent.objects.filter(action="node.changed").exists()
    psql.execute("UPDATE nodes SET downed = true WHERE node = %s", [NODE_URL])
    changed = AuditEvent.objects.get(action="node.changed")
    assert (changed.actor_type, changed.diff_after) == ("SYSTEM", {"downed": True})
    psql.execute("UPDATE node_assignments SET replaced_at = now() WHERE replaced_at IS NULL")
    unassigned = AuditEvent.objects.get(action="node.unassigned")
    assert unassigned.diff_after == {"assignments": 3}
    with psql.transaction():
        psql.execute("SET LOCAL lifecycle.node_routine = 'on'")
        insert(psql, accounts[0], generation=1)
    assert AuditEvent.objects.filter(action="node_assignment.created").count() == 4
