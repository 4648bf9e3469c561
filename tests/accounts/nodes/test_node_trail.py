"""The node tables' trail (accounts/sql/0017_node_trail.sql): no setting a session can SET silences it.

The runtime role's own statements on nodes, services and node_assignments are audited with the actor
the application claims beside the database role; a client's routine moves go through the
node_routine_* functions, and of those only the client's own state changing is audited, compactly."""

import pytest
from django.db import connections, transaction

from accounts.nodes import services
from accounts.nodes.models import MAX_GENERATION
from accounts.nodes.selectors import service_id
from platform_events.api.models import ApiClient
from platform_events.audit.context import audit_context
from platform_events.audit.models import AuditEvent
from tests.accounts.nodes.conftest import NODE_URL, SERVICE
from tests.support import connect

pytestmark = pytest.mark.django_db(transaction=True)

ROUTINE_FUNCTIONS = [
    "node_routine_allocate",
    "node_routine_rekey",
    "node_routine_advance",
    "node_routine_replace",
    "node_routine_replace_row",
    "node_routine_retire",
    "node_routine_delete",
]


@pytest.fixture
def psql(nodes):
    """A session of the runtime role, claiming to be API client 7, that turns the old switch on."""
    with connect() as conn:
        conn.execute("SELECT set_config('lifecycle.actor_id', 'api-client:7', false)")
        conn.execute("SET lifecycle.node_routine = 'on'")
        yield conn
        conn.rollback()


def runtime_login() -> str:
    return connections["default"].settings_dict["USER"]


def events(action: str):
    return list(AuditEvent.objects.filter(action=action).order_by("occurred_at"))


def assigned(account, count: int = 1) -> list[int]:
    """``count`` accounts given a node as a client's sync gives it (routine: no audit row)."""
    return [services.assignment_allocate(service=SERVICE, account_id=account()).uid for _ in range(count)]


# The runtime role's own statements, with the old switch on: each audited, as the claimed actor and
# the database role


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
    psql.execute("UPDATE node_assignments SET generation = 9223372036854775806 WHERE uid = %s", [uid])
    psql.execute(
        "INSERT INTO node_assignments (service, account, node) SELECT service, %s, id FROM nodes WHERE node = %s",
        [account(), NODE_URL],
    )
    psql.commit()
    (changed,) = events("node_assignment.changed")
    assert changed.diff_after == {"uid": uid, "generation": 9223372036854775806, "keys_changed_at": None}
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


def test_the_routine_functions_run_as_the_owner_with_a_fixed_search_path(sql):
    rows = sql(
        "SELECT p.proname, p.prosecdef, p.proconfig, pg_get_userbyid(p.proowner) = pg_get_userbyid(c.relowner)"
        " FROM pg_proc p, pg_class c WHERE p.proname LIKE 'node_routine_%%' AND p.proname <> 'node_routine_move'"
        " AND c.oid = 'node_assignments'::regclass ORDER BY p.proname"
    )
    assert sorted(name for name, *_ in rows) == sorted(ROUTINE_FUNCTIONS)
    assert {(definer, tuple(config), owned) for _, definer, config, owned in rows} == {
        (True, ("search_path=public, pg_temp",), True)
    }


# A client's routine moves: silent but for its own state changing


def test_a_clients_allocation_a_fresh_node_and_the_purge_write_nothing(nodes, account):
    """First sight, a fresh node for the same keys, the purge's retry time and deletion of a replaced
    row: routine, no row (the replacement that made the fresh node due is the operator's)."""
    a = account()
    first = services.assignment_allocate(service=SERVICE, account_id=a)
    services.node_unassign(service=SERVICE, node=NODE_URL, actor=None)
    before = AuditEvent.objects.count()
    fresh = services.assignment_current(service=SERVICE, account_id=a)
    services.assignment_replace(uid=first.uid)
    services.assignment_delete(uid=first.uid)
    assert fresh.uid != first.uid
    assert list(AuditEvent.objects.order_by("occurred_at").values_list("action", flat=True))[before:] == []
    assert not AuditEvent.objects.filter(action__startswith="node_assignment").exists()


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


def test_the_allocators_released_slots_are_not_audited(nodes, account):
    services.node_update(service=SERVICE, node=NODE_URL, available=0, actor=None)
    a = account()
    before = AuditEvent.objects.count()
    services.assignment_allocate(service=SERVICE, account_id=a)
    assert services.Node.objects.get(node=NODE_URL).available == 9  # 10 released, 1 taken
    assert list(AuditEvent.objects.order_by("occurred_at").values_list("action", "diff_after"))[before:] == []


def test_new_keys_and_raised_numbers_are_audited_compactly_as_the_client(nodes, account):
    a = account()
    current = services.assignment_allocate(service=SERVICE, account_id=a, generation=5, client_state="aa")
    with audit_context(actor=ApiClient(pk=7, name="sync")):
        services.assignment_update(current, generation=6, keys_changed_at=6, client_state="bb", routine=True)
        services.assignment_update(current, generation=9, routine=True)
    (keys,) = events("node_assignment.keys_changed")
    assert (keys.actor_type, keys.actor_id, keys.db_user) == ("SERVICE", "api-client:7", runtime_login())
    assert keys.diff_before == {"uid": current.uid - 1, "generation": 5, "keys_changed_at": None}
    assert keys.diff_after == {
        "uid": current.uid,
        "service": SERVICE,
        "node": NODE_URL,
        "generation": 6,
        "keys_changed_at": 6,
    }
    (raised,) = events("node_assignment.generation_raised")
    assert (raised.actor_id, raised.diff_before, raised.diff_after) == (
        "api-client:7",
        {"uid": current.uid, "generation": 6, "keys_changed_at": 6},
        {"uid": current.uid, "generation": 9, "keys_changed_at": 6},
    )
    assert "bb" not in str(keys.diff_after) and "aa" not in str(keys.diff_before)


def test_a_retirement_and_a_live_rows_deletion_are_audited(nodes, account):
    a, b = account(), account()
    services.assignment_allocate(service=SERVICE, account_id=a)
    (live,) = assigned(lambda: b)
    assert services.assignments_retire(account_id=a) == 1
    services.assignment_delete(uid=live)
    (retired,) = events("node_assignment.retired")
    assert (retired.resource_id, retired.diff_after["generation"]) == (str(a), MAX_GENERATION)
    (deleted,) = events("node_assignment.deleted")
    assert (deleted.resource_id, deleted.diff_before["uid"]) == (str(b), live)


def test_an_operators_unassign_after_a_routine_allocation_in_the_same_transaction_is_audited(nodes, account):
    """A client's routine move leaves nothing behind in the transaction: an operator's change after it
    is audited all the same."""
    with transaction.atomic():
        services.assignment_allocate(service=SERVICE, account_id=account())
        assert services.node_unassign(service=SERVICE, node=NODE_URL, actor=None, reason="moving") == 1
    assert not events("node_assignment.created")
    (event,) = events("node.unassigned")
    assert (event.reason, event.diff_after) == ("moving", {"assignments": 1})


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
