"""tokenserver's tools/tokenserver/test_scripts.py, test for test, over our management commands
(accounts/management/commands/), then what tokenserver did not test: the audit rows an operator's
command leaves, and bad input refused with a sentence and nothing changed.

tokenserver named nodes anything ("test_node"); ours are URLs (the nodes table's check), so
"test_node" is https://test-node here. Its scripts served one service; ours name it first."""

import io
import json
import math
import time

import pytest
from django.core.management import CommandError, call_command

from accounts.nodes.models import Node, NodeAssignment, Service
from accounts.nodes.selectors import assignments_count
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.models import AuditAction, AuditEvent
from tests.accounts.nodes.conftest import NODE_URL, SERVICE

pytestmark = pytest.mark.django_db

TEST_NODE = "https://test-node"
NODE2 = "https://node2"


def run(command, *args):
    out = io.StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue()


def node(url):
    return Node.objects.get(service__service=SERVICE, node=url)


def current(nodes, account):
    return nodes.assignment_current(service=SERVICE, account_id=account.pk)


def audited(action, **fields):
    return list(AuditEvent.objects.filter(action=action, **fields).values_list("reason", flat=True))


# tokenserver's tests


def test_add_node(nodes):
    """add_node opens ceil(capacity x 0.1) slots and takes the load given; the node is up, not in backoff,
    and its addition is audited with the reason."""
    output = run("add_node", "--current-load", "9", "--reason", "new rack", SERVICE, TEST_NODE, "100")
    res = node(TEST_NODE)
    assert (res.capacity, res.available, res.current_load, res.downed, res.backoff) == (100, 10, 9, False, False)
    assert res.service.service == SERVICE
    assert f"Node {TEST_NODE} added to {SERVICE}: capacity 100, available 10, load 9." in output
    assert audited(AuditAction.NODE_ADDED, resource_id=str(res.pk)) == ["new rack"]


def test_add_node_with_explicit_available(nodes):
    """--available overrides the share of the capacity opened at first."""
    run("add_node", "--current-load", "9", "--available", "5", SERVICE, TEST_NODE, "100")
    res = node(TEST_NODE)
    assert (res.capacity, res.available, res.current_load, res.downed, res.backoff) == (100, 5, 9, False, False)


def test_add_downed_node(nodes):
    """--downed adds the node down."""
    run("add_node", "--downed", SERVICE, TEST_NODE, "100")
    res = node(TEST_NODE)
    assert (res.capacity, res.available, res.current_load, res.downed, res.backoff) == (100, 10, 0, True, False)


def test_add_backoff_node(nodes):
    """--backoff adds the node in backoff."""
    run("add_node", "--backoff", SERVICE, TEST_NODE, "100")
    res = node(TEST_NODE)
    assert (res.capacity, res.available, res.current_load, res.downed, res.backoff) == (100, 10, 0, False, True)


def test_allocate_user_user_already_exists(nodes):
    """allocate_user with a node moves an account that has an assignment to that node (named here by its
    e-mail); no second live assignment is made, and the move is audited with the reason."""
    account = AccountFactory()
    nodes.assignment_allocate(service=SERVICE, account_id=account.pk)
    nodes.node_add(service=SERVICE, node=NODE2, capacity=100, actor=None)
    output = run("allocate_user", SERVICE, account.email, NODE2, "--reason", "rebalance")
    assert current(nodes, account).node == NODE2
    assert assignments_count(service=SERVICE) == 1
    assert f"Account {account.pk} moved from {NODE_URL} to {NODE2}" in output
    assert audited(AuditAction.NODE_ASSIGNMENT_CREATED, resource_id=str(account.pk)) == ["rebalance"]


def test_allocate_user_given_node(nodes):
    """allocate_user places a new account (named by its login) on the node given, audited with the reason."""
    account = AccountFactory()
    nodes.node_add(service=SERVICE, node=NODE2, capacity=100, actor=None)
    run("allocate_user", SERVICE, account.login, NODE2, "--reason", "beta tester")
    assert current(nodes, account).node == NODE2
    assert audited(AuditAction.NODE_ASSIGNMENT_CREATED, resource_id=str(account.pk)) == ["beta tester"]


def test_allocate_user_not_given_node(nodes):
    """Without a node, allocate_user places the account (named by its id) on the least-loaded node."""
    account = AccountFactory()
    nodes.node_add(service=SERVICE, node=NODE2, capacity=100, current_load=10, actor=None)
    nodes.node_add(service=SERVICE, node="https://node3", capacity=100, current_load=20, actor=None)
    nodes.node_add(service=SERVICE, node="https://node4", capacity=100, current_load=30, actor=None)
    output = run("allocate_user", SERVICE, str(account.pk))
    assert current(nodes, account).node == NODE_URL
    assert f"Account {account.pk} allocated to {NODE_URL} for {SERVICE}." in output
    assert len(audited(AuditAction.NODE_ASSIGNMENT_CREATED, resource_id=str(account.pk))) == 1


def test_count_users(nodes, account, tmp_path):
    """count_users appends tokenserver's JSON line to the file: the live assignments made by the timestamp
    (epoch milliseconds): all three by now, none ten seconds earlier."""
    for _ in range(3):
        nodes.assignment_allocate(service=SERVICE, account_id=account())
    # Rounded up: a row made in this very millisecond is counted.
    timestamp = math.ceil(time.time() * 1000)
    output = tmp_path / "count.json"
    run("count_users", "--output", str(output), "--timestamp", str(timestamp))
    info = json.loads(output.read_text().splitlines()[0])
    assert (info["total_users"], info["op"]) == (3, "sync_count_users")
    run("count_users", "--output", str(output), "--timestamp", str(timestamp - 10000))
    info = json.loads(output.read_text().splitlines()[1])
    assert (info["total_users"], info["op"]) == (0, "sync_count_users")
    assert set(info) == {"hostname", "pid", "op", "total_users", "time", "v"}


def test_remove_node(nodes):
    """remove_node deletes the node; its account gets the remaining node when next seen, the others stay.
    The unassignment and the removal are audited with the reason."""
    nodes.node_add(service=SERVICE, node=NODE2, capacity=100, actor=None)
    removed_id = node(NODE2).pk
    first, second, third = AccountFactory.create_batch(3)
    nodes.assignment_allocate(service=SERVICE, account_id=first.pk, node=NODE2)
    nodes.assignment_allocate(service=SERVICE, account_id=second.pk, node=NODE_URL)
    nodes.assignment_allocate(service=SERVICE, account_id=third.pk, node=NODE_URL)
    output = run("remove_node", SERVICE, NODE2, "--reason", "hardware failure")
    assert f"Node {NODE2} removed from {SERVICE}; 1 assignment replaced." in output
    assert not Node.objects.filter(node=NODE2).exists()
    assert [current(nodes, each).node for each in (first, second, third)] == [NODE_URL] * 3
    assert audited(AuditAction.NODE_UNASSIGNED, resource_id=str(removed_id)) == ["hardware failure"]
    assert audited(AuditAction.NODE_REMOVED, resource_id=str(removed_id)) == ["hardware failure"]


def test_unassign_node(nodes):
    """unassign_node replaces the node's assignments: once the node is gone, every account is on the first
    node. Audited once for the node, with the count and the reason."""
    nodes.node_add(service=SERVICE, node=NODE2, capacity=100, actor=None)
    unassigned_id = node(NODE2).pk
    first, second, third = AccountFactory.create_batch(3)
    nodes.assignment_allocate(service=SERVICE, account_id=first.pk, node=NODE2)
    nodes.assignment_allocate(service=SERVICE, account_id=second.pk, node=NODE2)
    nodes.assignment_allocate(service=SERVICE, account_id=third.pk, node=NODE_URL)
    output = run("unassign_node", SERVICE, NODE2, "--reason", "draining")
    assert f"Node {NODE2} of {SERVICE}: 2 assignments replaced" in output
    nodes.node_remove(service=SERVICE, node=NODE2, actor=None)
    assert [current(nodes, each).node for each in (first, second, third)] == [NODE_URL] * 3
    (event,) = AuditEvent.objects.filter(action=AuditAction.NODE_UNASSIGNED, reason="draining")
    assert (event.resource_id, event.diff_after) == (str(unassigned_id), {"assignments": 2})


def test_update_node(nodes):
    """update_node sets the capacity, slots, load, downed and backoff given, audited with the reason."""
    nodes.node_add(service=SERVICE, node=NODE2, capacity=100, actor=None)
    args = ["--capacity", "150", "--available", "125", "--current-load", "25", "--downed", "--backoff"]
    run("update_node", *args, SERVICE, NODE2, "--reason", "bigger disks")
    res = node(NODE2)
    assert (res.capacity, res.available, res.current_load, res.downed, res.backoff) == (150, 125, 25, True, True)
    assert audited(AuditAction.NODE_CHANGED, resource_id=str(res.pk)) == ["bigger disks"]


# Beyond tokenserver's tests


def test_update_node_brings_a_node_back_and_leaves_the_rest(nodes):
    """--no-downed and --no-backoff clear the flags; fields not given keep their values."""
    nodes.node_add(service=SERVICE, node=NODE2, capacity=100, downed=True, backoff=True, actor=None)
    run("update_node", "--no-downed", "--no-backoff", SERVICE, NODE2)
    res = node(NODE2)
    assert (res.capacity, res.available, res.downed, res.backoff) == (100, 10, False, False)


def test_allocate_user_without_a_node_leaves_an_existing_assignment(nodes):
    """An account that has a live assignment and no node named: said so, nothing changed, nothing audited."""
    account = AccountFactory()
    before = nodes.assignment_allocate(service=SERVICE, account_id=account.pk)
    nodes.node_add(service=SERVICE, node=NODE2, capacity=100, actor=None)
    output = run("allocate_user", SERVICE, account.login)
    assert f"Account {account.pk} is on {NODE_URL} for {SERVICE} already; nothing changed." in output
    assert current(nodes, account).uid == before.uid
    assert audited(AuditAction.NODE_ASSIGNMENT_CREATED) == []


def test_allocate_user_keeps_the_keys_of_a_replaced_assignment(nodes):
    """An account whose assignment was replaced gets a new one with its generation and client state kept
    (they never go back)."""
    account = AccountFactory()
    nodes.assignment_allocate(service=SERVICE, account_id=account.pk, generation=7, client_state="aa")
    nodes.node_unassign(service=SERVICE, node=NODE_URL, actor=None)
    run("allocate_user", SERVICE, account.email)
    user = current(nodes, account)
    assert (user.node, user.generation, user.client_state) == (NODE_URL, 7, "aa")
    assert NodeAssignment.objects.filter(account_id=account.pk, replaced_at__isnull=True).count() == 1


def test_add_service_adds_a_service_with_its_pattern(db):
    """add_service makes a service that nodes can then be added to."""
    output = run("add_service", "sync-1.6", "--pattern", "{node}/1.6/{uid}")
    assert Service.objects.get(service="sync-1.6").pattern == "{node}/1.6/{uid}"
    assert "Service sync-1.6 added" in output
    run("add_node", "sync-1.6", TEST_NODE, "10")
    assert Node.objects.get(service__service="sync-1.6").available == 1


def test_dry_runs_of_unassign_and_remove_count_and_change_nothing(nodes):
    """unassign_node and remove_node --dry-run say how many assignments they would replace, one or many."""
    nodes.assignment_allocate(service=SERVICE, account_id=AccountFactory().pk)
    assert "1 assignment would be replaced; nothing changed." in run("unassign_node", SERVICE, NODE_URL, "--dry-run")
    assert "would be removed, 1 assignment replaced;" in run("remove_node", SERVICE, NODE_URL, "--dry-run")
    nodes.assignment_allocate(service=SERVICE, account_id=AccountFactory().pk)
    assert "2 assignments would be replaced; nothing changed." in run("unassign_node", SERVICE, NODE_URL, "--dry-run")
    assert not NodeAssignment.objects.filter(replaced_at__isnull=False).exists()
    assert Node.objects.filter(node=NODE_URL).exists()


def snapshot():
    """Everything a command could change."""
    return (
        list(Service.objects.values_list("service", "pattern")),
        list(Node.objects.order_by("pk").values()),
        list(NodeAssignment.objects.order_by("pk").values()),
        AuditEvent.objects.count(),
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["add_service", "Sync 1.5!"], "service name 'Sync 1.5!' is not valid"),
        (["add_service", SERVICE], "a service of that name exists"),
        (["add_service", "sync-2", "--pattern", "/1.5/{uid}"], "must hold {node}"),
        (["add_node", "nosuch", TEST_NODE, "100"], "unknown service 'nosuch'"),
        (["add_node", SERVICE, "test_node", "100"], "node 'test_node' is not valid"),
        (["add_node", SERVICE, "https://x/", "100"], "without a query, a fragment or a final '/'"),
        (["add_node", SERVICE, NODE_URL, "100"], "already has a node of that name"),
        (["add_node", SERVICE, TEST_NODE, "many"], "invalid int value: 'many'"),
        (["add_node", SERVICE, TEST_NODE, "0"], "capacity must be between 1 and 2147483647, not 0"),
        (["add_node", SERVICE, TEST_NODE, "99999999999"], "capacity must be between 1 and 2147483647"),
        (["add_node", SERVICE, TEST_NODE, "10", "--available", "-1"], "available must be between 0"),
        (["update_node", SERVICE, NODE_URL], "Nothing to change"),
        (["update_node", SERVICE, NODE_URL, "--current-load", "-3"], "current_load must be between 0"),
        (["update_node", SERVICE, "https://nosuch", "--downed"], "unknown node 'https://nosuch' for service"),
        (["remove_node", SERVICE, "https://nosuch"], "unknown node 'https://nosuch'"),
        (["remove_node", "nosuch", NODE_URL], "unknown service 'nosuch'"),
        (["unassign_node", SERVICE, "https://nosuch"], "unknown node 'https://nosuch'"),
        (["unassign_node", SERVICE, "https://bad\x00"], "unknown node"),
        (["allocate_user", SERVICE, "nobody@example.com"], "No account is named 'nobody@example.com'"),
        (["allocate_user", SERVICE, "99999999999999999999999"], "No account is named"),
        (["allocate_user", "nosuch", "{login}"], "unknown service 'nosuch'"),
        (["allocate_user", SERVICE, "{login}", "https://nosuch"], "unknown node 'https://nosuch'"),
        (["add_node", SERVICE, TEST_NODE, "10", "--reason", "bad\x00"], "the reason is not valid text"),
        (["update_node", SERVICE, NODE_URL, "--downed", "--reason", "\udcff"], "the reason is not valid text"),
        (["unassign_node", SERVICE, NODE_URL, "--reason", "bad\x00"], "the reason is not valid text"),
        (["unassign_node", SERVICE, NODE_URL, "--dry-run", "--reason", "bad\x00"], "the reason is not valid text"),
        (["remove_node", SERVICE, NODE_URL, "--reason", "\udcff"], "the reason is not valid text"),
        (["remove_node", SERVICE, NODE_URL, "--dry-run", "--reason", "\udcff"], "the reason is not valid text"),
        (["remove_node", SERVICE, "https://nosuch", "--dry-run"], "unknown node 'https://nosuch'"),
        (["allocate_user", SERVICE, "{login}", "--reason", "bad\x00"], "the reason is not valid text"),
        (["reset_node_assignment", SERVICE, "{login}"], "the following arguments are required: --reason"),
        (["reset_node_assignment", SERVICE, "{login}", "--reason", "  "], "--reason must say why"),
        (["reset_node_assignment", SERVICE, "nobody", "--reason", "x"], "No account is named 'nobody'"),
        (["reset_node_assignment", "nosuch", "{login}", "--reason", "x"], "unknown service 'nosuch'"),
        (["reset_node_assignment", SERVICE, "{login}", "--reason", "x"], "has no assignment for sync-1.5"),
        (["reset_node_assignment", SERVICE, "{login}", "--reason", "x", "--dry-run"], "has no assignment"),
        (["reset_node_assignment", SERVICE, "{retired}", "--reason", "x"], "for sync-1.5 were retired"),
        (["reset_node_assignment", SERVICE, "{assigned}", "--reason", "bad\x00"], "the reason is not valid text"),
        (["count_users", "--timestamp", "yesterday"], "--timestamp 'yesterday' is not a time"),
        (["count_users", "--timestamp", "99999999999999999999"], "is not a time"),
        (["count_users", "--service", "nosuch"], "unknown service 'nosuch'"),
        (["count_users", "--output", "/nonexistent/dir/count.json"], "Cannot write to /nonexistent/dir/count.json"),
    ],
)
def test_bad_input_is_refused_with_a_sentence_and_changes_nothing(nodes, args, message):
    """Every command refuses a bad name, number or time with a CommandError saying what is wrong, and the
    services, nodes, assignments and audit trail stay as they were."""
    account, assigned, retired = AccountFactory(), AccountFactory(), AccountFactory()
    nodes.assignment_allocate(service=SERVICE, account_id=assigned.pk)
    nodes.assignment_allocate(service=SERVICE, account_id=retired.pk)
    nodes.assignments_retire(account_id=retired.pk)
    names = {"{login}": account.login, "{assigned}": assigned.login, "{retired}": retired.login}
    args = [names.get(arg, arg) for arg in args]
    before = snapshot()
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace("{", r"\{")):
        run(*args)
    assert snapshot() == before


@pytest.mark.parametrize("command", ["unassign_node", "remove_node"])
@pytest.mark.parametrize(
    "args", [[SERVICE, "https://nosuch"], ["nosuch", NODE_URL], [SERVICE, NODE_URL, "--reason", "\x00"]]
)
def test_a_dry_run_is_refused_exactly_as_the_real_run(nodes, command, args):
    """What the real run refuses, its dry run refuses with the same sentence (not "would be replaced")."""
    nodes.assignment_allocate(service=SERVICE, account_id=AccountFactory().pk)
    with pytest.raises(CommandError) as dry:
        run(command, *args, "--dry-run")
    with pytest.raises(CommandError) as real:
        run(command, *args)
    assert str(dry.value) == str(real.value)


def test_allocate_user_refuses_a_reference_that_names_two_accounts(nodes):
    """A login of digits that is another account's id names two accounts: refused, the ids listed."""
    first = AccountFactory()
    second = AccountFactory(login=str(first.pk))
    with pytest.raises(CommandError, match=f"names more than one account \\(ids {first.pk}, {second.pk}\\)"):
        run("allocate_user", SERVICE, str(first.pk))
    assert not NodeAssignment.objects.exists()


def test_allocate_user_on_a_full_node_is_refused(nodes):
    """A node at capacity takes no one: a CommandError, and no assignment."""
    nodes.node_add(service=SERVICE, node=NODE2, capacity=1, current_load=1, actor=None)
    with pytest.raises(CommandError, match=f"node {NODE2} is full"):
        run("allocate_user", SERVICE, AccountFactory().login, NODE2)
    assert not NodeAssignment.objects.exists()


def test_reset_node_assignment_gives_the_account_a_fresh_assignment_with_its_keys_audited(nodes):
    """reset_node_assignment replaces the account's live row and makes a fresh one (a new uid) with the
    same keys and numbers; the audit trail has both, with the reason, the new one naming the account."""
    account = AccountFactory()
    old = nodes.assignment_allocate(
        service=SERVICE, account_id=account.pk, generation=7, keys_changed_at=5, client_state="aa"
    )

    output = run("reset_node_assignment", SERVICE, account.login, "--reason", "corrupt data, ticket 41")

    fresh = current(nodes, account)
    assert fresh.uid != old.uid
    assert (fresh.node, fresh.generation, fresh.keys_changed_at, fresh.client_state) == (NODE_URL, 7, 5, "aa")
    rows = NodeAssignment.objects.filter(account_id=account.pk).order_by("uid")
    assert [(row.uid, row.replaced_at is None) for row in rows] == [(old.uid, False), (fresh.uid, True)]
    assert f"uid {old.uid} on {NODE_URL} replaced by uid {fresh.uid} on {NODE_URL}" in output
    assert audited(AuditAction.NODE_ASSIGNMENT_CREATED, resource_id=str(account.pk)) == ["corrupt data, ticket 41"]
    (unassigned,) = AuditEvent.objects.filter(action=AuditAction.NODE_UNASSIGNED)
    assert (unassigned.resource_id, unassigned.diff_after) == (str(node(NODE_URL).pk), {"assignments": 1})
    assert unassigned.reason == "corrupt data, ticket 41"
    assert node(NODE_URL).current_load == 1


def test_reset_node_assignment_dry_run_says_what_and_changes_nothing(nodes):
    """--dry-run names the row it would replace, and nothing changes."""
    account = AccountFactory()
    old = nodes.assignment_allocate(service=SERVICE, account_id=account.pk)
    before = snapshot()

    output = run("reset_node_assignment", SERVICE, str(account.pk), "--reason", "x", "--dry-run")

    assert f"uid {old.uid} on {NODE_URL} would be replaced; nothing changed." in output
    assert snapshot() == before


def test_reset_node_assignment_with_no_room_leaves_the_fresh_node_to_the_next_sync(nodes):
    """With no node free the row is replaced all the same; the account's next read gets a fresh one."""
    account = AccountFactory()
    old = nodes.assignment_allocate(service=SERVICE, account_id=account.pk, generation=3)
    nodes.node_update(service=SERVICE, node=NODE_URL, downed=True, actor=None)

    output = run("reset_node_assignment", SERVICE, account.login, "--reason", "x")

    assert "no node has room now, so its next sync gets a fresh one" in output
    assert not NodeAssignment.objects.filter(account_id=account.pk, replaced_at=None).exists()
    nodes.node_update(service=SERVICE, node=NODE_URL, downed=False, actor=None)
    fresh = current(nodes, account)
    assert fresh.uid != old.uid and fresh.generation == 3
