"""The node tables' trail (accounts/sql/0017_node_trail.sql): a client's routine moves go through the
node_routine_* functions, and of those only the client's own state changing is audited, compactly, as
the client. (The runtime role's own statements: test_node_trail_attacks.py.)"""

import pytest
from django.db import transaction

from accounts.nodes import services
from accounts.nodes.models import MAX_GENERATION
from platform_events.api.models import ApiClient
from platform_events.audit.context import audit_context
from platform_events.audit.models import AuditEvent
from tests.accounts.nodes.conftest import NODE_URL, SERVICE, assigned, events, runtime_login

pytestmark = pytest.mark.django_db(transaction=True)

ROUTINE_FUNCTIONS = [
    "node_routine_allocate",
    "node_routine_rekey",
    "node_routine_advance",
    "node_routine_replace",
    "node_routine_replace_row",
    "node_routine_retire",
    "node_routine_retire_deprovisioned",
    "node_routine_delete",
]


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


def test_an_operators_key_change_onto_a_fresh_node_is_audited_in_full(nodes, account):
    """Not routine: when the account's node is gone, the fresh node an operator's change gives it is a
    placement like any other of theirs (node_assignment.created), not a client's move."""
    current = services.assignment_allocate(service=SERVICE, account_id=account(), client_state="aa")
    services.node_remove(service=SERVICE, node=NODE_URL, actor=None)
    services.node_add(service=SERVICE, node="https://phx13", capacity=10, actor=None)
    services.assignment_update(current, client_state="bb", routine=False, reason="keys reset")
    (created,) = events("node_assignment.created")
    assert (created.reason, created.diff_after["node"]) == ("keys reset", "https://phx13")
    assert not events("node_assignment.keys_changed")
