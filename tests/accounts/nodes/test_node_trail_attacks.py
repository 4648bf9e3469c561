"""The runtime role against the node tables' trail (accounts/sql/0017_node_trail.sql), as an attacker
holding the app's database login would try it: lifecycle.node_routine set (any session may set
it), then a node's URL changed, assignments deleted or raised, services changed, the routine
functions misused. Each change is audited with the actor the session claims beside the database
role."""

import psycopg
import pytest

from accounts.nodes import services
from accounts.nodes.models import NodeAssignment
from accounts.nodes.selectors import service_id
from platform_events.audit.models import AuditEvent
from tests.accounts.nodes.conftest import NODE_URL, SERVICE, assigned, events, runtime_login
from tests.support import connect

pytestmark = [pytest.mark.attack, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def psql(nodes):
    """A session of the runtime role, claiming to be API client 7, with lifecycle.node_routine on."""
    with connect() as conn:
        conn.execute("SELECT set_config('lifecycle.actor_id', 'api-client:7', false)")
        conn.execute("SET lifecycle.node_routine = 'on'")
        yield conn
        conn.rollback()


def test_a_nodes_url_changed_by_the_runtime_role_is_audited(psql):
    psql.execute("UPDATE nodes SET node = 'http://127.0.0.1:8243' WHERE node = %s", [NODE_URL])
    psql.commit()
    (event,) = events("node.changed")
    assert (event.actor_type, event.actor_id, event.db_user) == ("SERVICE", "api-client:7", runtime_login())
    assert (event.diff_before, event.diff_after) == ({"node": NODE_URL}, {"node": "http://127.0.0.1:8243"})


def test_a_nodes_assignments_deleted_by_the_runtime_role_are_audited(psql, account):
    uids = assigned(account, 3)
    psql.execute("DELETE FROM node_assignments")
    psql.commit()
    deleted = events("node_assignment.deleted")
    assert sorted(e.diff_before["uid"] for e in deleted) == sorted(uids)
    assert {(e.actor_id, e.db_user) for e in deleted} == {("api-client:7", runtime_login())}


def test_assignments_inserted_and_changed_by_the_runtime_role_are_audited(psql, account):
    (uid,) = assigned(account)
    psql.execute("UPDATE node_assignments SET generation = 5 WHERE uid = %s", [uid])
    psql.execute(
        "INSERT INTO node_assignments (service, account, node) SELECT service, %s, id FROM nodes WHERE node = %s",
        [account(), NODE_URL],
    )
    psql.commit()
    (changed,) = events("node_assignment.changed")
    assert changed.diff_after == {"uid": uid, "generation": 5, "keys_changed_at": None}
    (created,) = events("node_assignment.created")
    assert (created.actor_id, created.db_user) == ("api-client:7", runtime_login())


def test_services_changed_by_the_runtime_role_are_audited(psql):
    sid = service_id(SERVICE)
    psql.execute("INSERT INTO services (service, pattern) VALUES ('mail', '{node}/m/{uid}')")
    psql.execute(
        "UPDATE services SET pattern = 'http://127.0.0.1:8243/internal/{uid}?from={node}' WHERE id = %s", [sid]
    )
    psql.execute("DELETE FROM services WHERE service = 'mail'")
    psql.commit()
    (added,) = AuditEvent.objects.filter(action="service.added", diff_after__service="mail")
    assert added.diff_after == {"service": "mail", "pattern": "{node}/m/{uid}"}
    (changed,) = events("service.changed")
    assert (changed.resource_id, changed.diff_before, changed.diff_after) == (
        str(sid),
        {"pattern": "{node}/1.5/{uid}"},
        {"pattern": "http://127.0.0.1:8243/internal/{uid}?from={node}"},
    )
    (removed,) = events("service.removed")
    assert removed.diff_before == {"service": "mail", "pattern": "{node}/m/{uid}"}
    assert {(e.actor_type, e.actor_id, e.db_user) for e in (added, changed, removed)} == {
        ("SERVICE", "api-client:7", runtime_login())
    }


def test_the_runtime_role_cannot_pass_for_a_routine_move(psql, account):
    """Neither SET ROLE to its group nor anything it can set makes its statements a routine move."""
    assert psql.execute("SELECT node_routine_move()").fetchone() == (False,)
    psql.execute("SET ROLE lifecycle_runtime")
    assert psql.execute("SELECT node_routine_move()").fetchone() == (False,)
    psql.execute("UPDATE nodes SET capacity = 1000 WHERE node = %s", [NODE_URL])
    psql.commit()
    assert events("node.changed")[0].diff_after == {"capacity": 1000}


def test_live_rows_replaced_then_deleted_through_the_routine_functions_are_audited(psql, account):
    """The runtime role replacing accounts' live rows and then deleting them as the purge would (so
    their node never hears of it) leaves one row per account replaced."""
    uids = assigned(account, 2)
    sid = service_id(SERVICE)
    for uid in uids:
        (a,) = psql.execute("SELECT account FROM node_assignments WHERE uid = %s", [uid]).fetchone()
        psql.execute("SELECT node_routine_replace(%s, %s)", [sid, a])
        psql.execute("SELECT node_routine_delete(%s)", [uid])
    psql.commit()
    replaced = events("node_assignment.replaced")
    assert sorted(e.diff_before["uid"] for e in replaced) == sorted(uids)
    assert {(e.actor_id, e.db_user) for e in replaced} == {("api-client:7", runtime_login())}


def test_the_purges_retry_time_only_moves_on(psql, account):
    """A replaced row's time may be moved later (the purge's retry), never earlier, which would have it
    purged before its grace period."""
    (uid,) = assigned(account)
    services.assignment_replace(uid=uid)
    (replaced,) = psql.execute("SELECT replaced_at FROM node_assignments WHERE uid = %s", [uid]).fetchone()
    psql.execute("SELECT node_routine_replace_row(%s, %s::timestamptz - interval '30 days')", [uid, replaced])
    assert psql.execute("SELECT replaced_at FROM node_assignments WHERE uid = %s", [uid]).fetchone() == (replaced,)
    psql.execute("SELECT node_routine_replace_row(%s)", [uid])
    (later,) = psql.execute("SELECT replaced_at FROM node_assignments WHERE uid = %s", [uid]).fetchone()
    assert later > replaced


def test_a_live_rows_node_cannot_be_taken_away_but_by_the_nodes_deletion(psql, account):
    """node set to none on a live row: the account's data left behind on a node no purge would tell,
    the node's slot never freed, and (the audit trigger compares numbers only) no row in the trail."""
    (uid,) = assigned(account)
    with pytest.raises(psycopg.DatabaseError, match="keeps its node until the node is deleted"):
        psql.execute("UPDATE node_assignments SET node = NULL WHERE uid = %s", [uid])
    psql.rollback()
    services.node_remove(service=SERVICE, node=NODE_URL, actor=None)  # the one way: the node's own deletion
    assert NodeAssignment.objects.get(uid=uid).node_id is None


def test_a_replaced_rows_time_moved_by_the_runtime_role_is_audited(psql, account):
    """replaced_at of a replaced row pushed to 'infinity' (its data kept on the node for good: never past
    the grace period) or back (purged at once) is a change like any other."""
    (uid,) = assigned(account)
    services.assignment_replace(uid=uid)
    psql.execute("UPDATE node_assignments SET replaced_at = 'infinity' WHERE uid = %s", [uid])
    psql.commit()
    (changed,) = events("node_assignment.changed")
    assert (changed.diff_after["uid"], changed.diff_after["replaced_at"]) == (uid, "infinity")
    assert (changed.actor_id, changed.db_user) == ("api-client:7", runtime_login())


def test_the_purges_retry_time_goes_no_further_than_now(psql, account):
    """node_routine_replace_row() moves a replaced row's time silently (the purge's retry, which asks for
    now): a time in the future would keep the account's data on the node past any grace period."""
    (uid,) = assigned(account)
    services.assignment_replace(uid=uid)
    psql.execute("SELECT node_routine_replace_row(%s, 'infinity')", [uid])
    query = "SELECT replaced_at <= clock_timestamp() FROM node_assignments WHERE uid = %s"
    assert psql.execute(query, [uid]).fetchone() == (True,)


def test_a_first_allocation_is_never_dated_in_the_future(psql, account):
    """node_routine_allocate()'s creation time (silent: a first allocation) in the future would date the
    row's replacement there too, so the purge would never reach it."""
    psql.execute("SELECT node_routine_allocate(%s, %s, 0, '', NULL, 0.1, 'infinity')", [service_id(SERVICE), account()])
    assert psql.execute("SELECT created_at <= clock_timestamp() FROM node_assignments").fetchone() == (True,)


def test_a_nodes_id_cannot_change(psql):
    """A node no assignment names yet could change its id unaudited (the trigger compares what it shows):
    later rows would name it by another id than its node.added's."""
    with pytest.raises(psycopg.DatabaseError, match="keeps its id"):
        psql.execute("UPDATE nodes SET id = id + 1000 WHERE node = %s", [NODE_URL])


def test_a_live_row_is_never_replaced_in_the_future(psql, account):
    """node_routine_replace() and node_routine_replace_row() at 'infinity': the row never passes the grace
    period, so the purge never tells its node to delete the data (audited as replaced, but the row says
    nothing of the time)."""
    first, second = assigned(account, 2)
    sid = service_id(SERVICE)
    (a,) = psql.execute("SELECT account FROM node_assignments WHERE uid = %s", [first]).fetchone()
    psql.execute("SELECT node_routine_replace(%s, %s, 'infinity')", [sid, a])
    psql.execute("SELECT node_routine_replace_row(%s, 'infinity')", [second])
    query = "SELECT bool_and(replaced_at <= clock_timestamp()) FROM node_assignments WHERE uid IN (%s, %s)"
    assert psql.execute(query, [first, second]).fetchone() == (True,)
