"""tokenserver's tools/tokenserver/test_database.py, test for test, over accounts/nodes (docs/nodes.md,
"tokenserver's tests, here", maps each). Where tokenserver made two live rows on purpose, the second is refused
here (one live row per service and account, by the database)."""

from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.nodes.errors import AlreadyAssigned, InvalidUpdate, NoCapacity
from accounts.nodes.selectors import assignment_records, assignments_count, old_assignment_records
from accounts.nodes.services import MAX_GENERATION
from tests.accounts.nodes.conftest import NODE_URL, SERVICE

pytestmark = pytest.mark.django_db

NO_GRACE = timedelta(0)


def allocate(nodes, account_id, **kwargs):
    return nodes.assignment_allocate(service=SERVICE, account_id=account_id, **kwargs)


def current(nodes, account_id):
    return nodes.assignment_current(service=SERVICE, account_id=account_id)


def records(account_id):
    return assignment_records(service=SERVICE, account_id=account_id)


def old_records(grace=NO_GRACE, limit=100):
    return old_assignment_records(service=SERVICE, grace_period=grace, limit=limit)


def test_node_allocation(nodes, account):
    """An account with no assignment has none; allocating gives it the node, and reading finds it."""
    a = account()
    assert current(nodes, a) is None
    assert allocate(nodes, a).node == NODE_URL
    assert current(nodes, a).node == NODE_URL


def test_allocation_to_least_loaded_node(nodes, account):
    """Two accounts on two equal nodes land on different nodes."""
    nodes.node_add(service=SERVICE, node="https://phx13", capacity=100, actor=None)
    assert allocate(nodes, account()).node != allocate(nodes, account()).node


def test_allocation_is_not_allowed_to_downed_nodes(nodes, account):
    """A downed node takes no one: no capacity."""
    nodes.node_update(service=SERVICE, node=NODE_URL, downed=True, actor=None)
    with pytest.raises(NoCapacity, match="nodes: no node"):
        allocate(nodes, account())


def test_allocation_is_not_allowed_to_backoff_nodes(nodes, account):
    """A node in backoff takes no one: no capacity."""
    nodes.node_update(service=SERVICE, node=NODE_URL, backoff=True, actor=None)
    with pytest.raises(NoCapacity, match="nodes: no node"):
        allocate(nodes, account())


def test_update_generation_number(nodes, account):
    """A new generation changes nothing else; a lower one is ignored."""
    a = account()
    user = allocate(nodes, a)
    assert (user.generation, user.client_state) == (0, "")
    orig = (user.uid, user.node)
    nodes.assignment_update(user, generation=42)
    assert (user.uid, user.node, user.generation, user.client_state) == (*orig, 42, "")
    user = current(nodes, a)
    assert (user.uid, user.node, user.generation, user.client_state) == (*orig, 42, "")
    nodes.assignment_update(user, generation=17)
    assert (user.uid, user.node, user.generation, user.client_state) == (*orig, 42, "")
    user = current(nodes, a)
    assert (user.uid, user.node, user.generation, user.client_state) == (*orig, 42, "")


def test_update_client_state(nodes, account):
    """A new client state is a new uid on the same node; going back to an old one is refused."""
    a = account()
    user = allocate(nodes, a)
    assert user.old_client_states == set()
    seen = {user.uid}
    node = user.node
    nodes.assignment_update(user, client_state="aaaa")
    assert user.uid not in seen and user.node == node
    assert (user.generation, user.client_state, user.old_client_states) == (0, "aaaa", {""})
    user = current(nodes, a)
    assert user.uid not in seen and user.node == node
    assert (user.generation, user.client_state, user.old_client_states) == (0, "aaaa", {""})
    seen.add(user.uid)
    nodes.assignment_update(user, client_state="bbbb", generation=12)
    assert user.uid not in seen and user.node == node
    assert (user.generation, user.client_state, user.old_client_states) == (12, "bbbb", {"", "aaaa"})
    user = current(nodes, a)
    assert (user.generation, user.client_state, user.old_client_states) == (12, "bbbb", {"", "aaaa"})
    orig_uid = user.uid
    with pytest.raises(InvalidUpdate) as refused:
        nodes.assignment_update(user, client_state="aaaa")
    assert refused.value.code == "invalid-client-state"
    user = current(nodes, a)
    assert (user.uid, user.node, user.generation, user.client_state) == (orig_uid, node, 12, "bbbb")
    assert user.old_client_states == {"", "aaaa"}


def test_user_retirement(nodes, account):
    """Retiring raises the generation (to the tombstone)."""
    a = account()
    allocate(nodes, a)
    before = current(nodes, a)
    nodes.assignments_retire(account_id=a)
    assert current(nodes, a).generation > before.generation


def test_cleanup_of_old_records(nodes, account, monkeypatch):
    """Replaced rows older than the grace period are found, limited, and deleted one by one."""
    first = account()
    user1 = allocate(nodes, first)
    for state in ("aa", "bb", "cc"):
        nodes.assignment_update(user1, client_state=state)
    break_time = timezone.now()
    for state in ("dd", "ee"):
        nodes.assignment_update(user1, client_state=state)
    assert len(records(first)) == 6
    second = account()
    user2 = allocate(nodes, second)
    for state in ("aa", "bb"):
        nodes.assignment_update(user2, client_state=state)
    assert len(records(second)) == 3
    assert len(old_records()) == 7
    assert len(old_records(limit=2)) == 2
    # The default grace period is too big to pick them up.
    assert old_assignment_records(service=SERVICE) == []
    # A grace period can select a subset: the rows replaced before break_time. The selector's "now" is
    # held still for the call, or the statements between would move the line past the next row.
    held = timezone.now()
    with monkeypatch.context() as still:
        still.setattr(timezone, "now", lambda: held)
        recent = old_records(grace=held - break_time)
    assert len(recent) == 3
    assert {r.account_id for r in recent} == {first}
    for record in recent:
        nodes.assignment_delete(uid=record.uid)
    assert len(old_records()) == 4


def test_node_reassignment_when_records_are_replaced(nodes, account):
    """A replaced current row gets a new uid on read, keeping generation, keys_changed_at and state."""
    a = account()
    allocate(nodes, a, generation=42, keys_changed_at=12, client_state="aaaa")
    user1 = current(nodes, a)
    nodes.assignments_replace(service=SERVICE, account_id=a)
    user2 = current(nodes, a)
    assert user2.uid != user1.uid
    assert (user2.generation, user2.keys_changed_at, user2.client_state) == (42, 12, "aaaa")


def test_node_reassignment_not_done_for_retired_users(nodes, account):
    """A retired account gets no new node: its read is the retired row."""
    a = account()
    allocate(nodes, a, generation=42, client_state="aaaa")
    user1 = current(nodes, a)
    nodes.assignments_retire(account_id=a)
    user2 = current(nodes, a)
    assert user2.uid == user1.uid
    assert user2.generation == MAX_GENERATION
    assert user2.client_state == "aaaa"


def test_recovery_from_racy_record_creation(nodes, account):
    """tokenserver let two allocations in one millisecond make two live rows and repaired them on read;
    here the second is refused by the live-row index and the first is untouched."""
    a = account()
    at = timezone.now()
    user1 = allocate(nodes, a, created_at=at)
    with pytest.raises(AlreadyAssigned, match="already has a live assignment"):
        allocate(nodes, a, created_at=at)
    assert old_records() == []
    assert current(nodes, a).uid == user1.uid
    assert old_records() == []


def test_that_race_recovery_respects_generation_number_monotonicity(nodes, account):
    """tokenserver let an out-of-date client's row (lower generation, later time) live beside a newer
    one and promoted the higher generation on read; here the second live row is refused whatever its
    generation, and a row below the account's generation is refused even once the first is replaced."""
    a = account()
    at = timezone.now()
    user1 = allocate(nodes, a, generation=1, created_at=at)
    with pytest.raises(AlreadyAssigned):
        allocate(nodes, a, generation=2, created_at=at - timedelta(milliseconds=1))
    nodes.assignment_update(user1, generation=2)
    nodes.assignments_replace(service=SERVICE, account_id=a)
    with pytest.raises(InvalidUpdate, match="generation 1 is below") as refused:
        allocate(nodes, a, generation=1, created_at=at)
    assert refused.value.code == "invalid-generation"
    user = current(nodes, a)
    assert user.generation == 2 and user.uid != user1.uid
    assert len(old_records()) == 1


def test_node_reassignment_and_removal(nodes, account):
    """Four accounts split 2/2 over two nodes; unassigning the first empties it (a replaced row holds no
    slot), so its two accounts get it again as the least-loaded; removing the second moves everyone to
    the first, and the removed node's rows keep no node."""
    node2 = "https://phx13"
    nodes.node_add(service=SERVICE, node=node2, capacity=100, actor=None)
    accounts = [account() for _ in range(4)]
    users = [allocate(nodes, a) for a in accounts]
    assert Counter(u.node for u in users) == {NODE_URL: 2, node2: 2}
    nodes.node_unassign(service=SERVICE, node=NODE_URL, actor=None)
    counts = Counter()
    for user in users:
        fresh = current(nodes, user.account_id)
        if user.node == node2:
            assert fresh.node == node2
        counts[fresh.node] += 1
    assert counts == {NODE_URL: 2, node2: 2}
    nodes.node_remove(service=SERVICE, node=node2, actor=None)
    for user in users:
        assert current(nodes, user.account_id).node == NODE_URL
    rows = old_records()
    assert sum(1 for r in rows if r.node is None) == 2
    assert all(r.node in (None, NODE_URL) for r in rows)


def test_that_race_recovery_respects_generation_after_reassignment(nodes, account):
    """After every row is replaced, the next read allocates with the highest generation."""
    a = account()
    at = timezone.now()
    user1 = allocate(nodes, a, generation=1, created_at=at)
    nodes.assignments_replace(service=SERVICE, account_id=a)
    user2 = allocate(nodes, a, generation=2, created_at=at - timedelta(milliseconds=1))
    nodes.assignments_replace(service=SERVICE, account_id=a, at=at + timedelta(milliseconds=1))
    user = current(nodes, a)
    assert user.generation == 2
    assert user.uid not in (user1.uid, user2.uid)


def test_that_we_can_allocate_users_to_a_specific_node(nodes, account):
    """A smaller node is not chosen by default, but an allocation may name it."""
    nodes.node_add(service=SERVICE, node="https://phx13", capacity=50, actor=None)
    assert allocate(nodes, account()).node != "https://phx13"
    assert allocate(nodes, account(), node="https://phx13").node == "https://phx13"


def test_that_we_can_move_users_to_a_specific_node(nodes, account):
    """An update may move an account to a named node, with its generation and client state rules."""
    node = "https://phx13"
    nodes.node_add(service=SERVICE, node=node, capacity=50, actor=None)
    a = account()
    user = allocate(nodes, a)
    assert user.node != node
    nodes.assignment_update(user, node=node)
    assert user.node == node
    assert current(nodes, a).node == node
    user = current(nodes, a)
    nodes.assignment_update(user, generation=12)
    nodes.assignment_update(user, client_state="0a")
    nodes.assignment_update(user, generation=42, client_state="0b", node=NODE_URL)
    assert (user.node, user.generation, user.client_state) == (NODE_URL, 42, "0b")
    assert user.old_client_states == {"", "0a"}
    user = current(nodes, a)
    assert (user.node, user.generation, user.client_state) == (NODE_URL, 42, "0b")
    assert user.old_client_states == {"", "0a"}


def test_that_record_cleanup_frees_slots_on_the_node(nodes, account):
    """A full node takes no one until a retired account's row is purged."""
    nodes.node_update(service=SERVICE, node=NODE_URL, capacity=10, available=1, current_load=9, actor=None)
    first = account()
    user = allocate(nodes, first)
    assert user.node == NODE_URL
    with pytest.raises(NoCapacity):
        allocate(nodes, account())
    nodes.assignments_retire(account_id=first)
    nodes.assignment_delete(uid=user.uid)
    assert allocate(nodes, account()).node == NODE_URL


def test_gradual_release_of_node_capacity(nodes, account):
    """With no released slot left, a tenth of each node's capacity is released, up to its room."""
    nodes.node_update(service=SERVICE, node=NODE_URL, capacity=8, available=1, current_load=4, actor=None)
    node2 = "https://phx13"
    nodes.node_add(service=SERVICE, node=node2, capacity=6, available=1, current_load=4, actor=None)
    landed = [allocate(nodes, account()).node for _ in range(6)]
    assert landed == [NODE_URL, node2, NODE_URL, node2, NODE_URL, NODE_URL]
    with pytest.raises(NoCapacity):
        allocate(nodes, account())


def test_count_users(nodes, account):
    """Live assignments are counted as of a time; a key change does not add one, retiring removes one."""
    first = account()
    allocate(nodes, first)
    assert assignments_count() == 1
    old = timezone.now()
    user = allocate(nodes, account())
    assert assignments_count() == 2
    nodes.assignment_update(user, client_state="aaaa")
    assert assignments_count() == 2
    assert assignments_count(as_of=old) == 1
    nodes.assignments_retire(account_id=first)
    assert assignments_count() == 1


def test_first_seen_at(nodes, account):
    """first_seen_at is the oldest row's time, across key changes, until that row is purged."""
    a = account()
    user0 = allocate(nodes, a)
    user1 = current(nodes, a)
    assert (user1.uid, user1.first_seen_at) == (user0.uid, user0.first_seen_at)
    nodes.assignment_update(user1, client_state="aaaa")
    user2 = current(nodes, a)
    assert user2.uid != user0.uid
    assert user2.first_seen_at == user0.first_seen_at
    nodes.assignment_delete(uid=user0.uid)
    user3 = current(nodes, a)
    assert user3.uid == user2.uid
    assert user3.first_seen_at != user2.first_seen_at
