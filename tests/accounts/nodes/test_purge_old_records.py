"""tokenserver's tools/tokenserver/test_purge_old_records.py, test for test, over accounts/nodes/purge.py
and ``manage.py purge_old_records``; then what it did not test.

The storage nodes are real HTTP servers on loopback (tests/accounts/nodes/storage_node.py) that check
each DELETE's bearer token as a node would. tokenserver's tests counted the requests to its service
node and its "spanner" node together: ours share one list too. Its metrics are our counts and
printed lines (test_run_level_metrics_are_emitted, test_run_failure_metric_emits_on_unhandled_error).
"""

import io
import re
import socket
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from accounts.nodes import services
from accounts.nodes.models import Node
from accounts.nodes.purge import LOCK, purge_old_records
from accounts.nodes.selectors import assignment_records
from lifecycle.demo.factories import AccountFactory
from platform_events.db.locks import lock_key
from tests.accounts.nodes.conftest import SERVICE
from tests.accounts.nodes.storage_node import StorageNode

pytestmark = pytest.mark.django_db

NODE_SECRET = "SECRET"
NO_GRACE = timedelta(0)
# The command's default: one day.
DEFAULT_GRACE = timedelta(seconds=86400)


def closed_port_url() -> str:
    """A loopback URL nothing listens on (tokenserver's downed node, host:9999)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


@pytest.fixture
def node_secret(settings):
    settings.NODE_SECRET = NODE_SECRET
    return NODE_SECRET


@pytest.fixture
def service_node(node_secret, loopback_nodes):
    with StorageNode(secret=node_secret) as node:
        yield node


@pytest.fixture
def spanner_node(service_node, node_secret):
    """A second node, counted with the first (tokenserver's mock_spanner_server)."""
    with StorageNode(secret=node_secret, requests=service_node.requests) as node:
        yield node


@pytest.fixture
def downed_node():
    return closed_port_url()


@pytest.fixture
def purge_db(db, service_node):
    """tokenserver's purge_db: the service with the storage node."""
    services.service_add(service=SERVICE, pattern="{node}/1.5/{uid}")
    services.node_add(service=SERVICE, node=service_node.url, capacity=100, actor=None)
    return services


@pytest.fixture
def migration_db(db, service_node, spanner_node, downed_node):
    """tokenserver's migration_db: the storage node, a downed node, and the node the data moved to."""
    services.service_add(service=SERVICE, pattern="{node}/1.5/{uid}")
    services.node_add(service=SERVICE, node=service_node.url, capacity=100, actor=None)
    services.node_add(service=SERVICE, node=downed_node, capacity=100, downed=True, actor=None)
    services.node_add(service=SERVICE, node=spanner_node.url, capacity=100, actor=None)
    return services


def purge(grace_period=DEFAULT_GRACE, **kwargs):
    kwargs.setdefault("node_secret", NODE_SECRET)
    return purge_old_records(service=SERVICE, grace_period=grace_period, **kwargs)


def allocate(database, account, **kwargs):
    return database.assignment_allocate(service=SERVICE, account_id=account.pk, **kwargs)


def records(account):
    return assignment_records(service=SERVICE, account_id=account.pk)


def current(database, account):
    return database.assignment_current(service=SERVICE, account_id=account.pk)


def run(*args, stdout=None):
    out = stdout or io.StringIO()
    call_command("purge_old_records", *args, stdout=out)
    return out.getvalue()


# tokenserver's tests


def test_purging_of_old_user_records(purge_db, service_node):
    """Replaced rows wait out the grace period; then each is deleted after a signed DELETE of its data
    (tokenserver's claims: uid, node, fxa_uid, fxa_kid) reached its node, whose slots are freed. The
    account's current row is untouched."""
    database = purge_db
    account = AccountFactory()
    user = allocate(database, account, client_state="aa", generation=123)
    database.assignment_update(user, client_state="bb", generation=456, keys_changed_at=450)
    database.assignment_update(user, client_state="cc", generation=789)
    assert len(records(account)) == 3
    user = current(database, account)
    assert user.client_state == "cc"
    assert len(user.old_client_states) == 2

    # The default grace period keeps them.
    purge()
    assert len(records(account)) == 3
    assert len(service_node.requests) == 0

    # With none, the two old rows go.
    purge(grace_period=NO_GRACE)
    assert len(records(account)) == 1
    assert len(service_node.requests) == 2
    kids = set()
    for request in service_node.requests:
        assert request.method == "DELETE"
        assert re.fullmatch(r"/1\.5/[0-9]+", request.path)
        assert request.claims is not None  # the node verified the token
        assert request.claims["uid"] == int(request.path.rsplit("/", 1)[1])
        assert request.claims["node"] == service_node.url
        assert request.claims["fxa_uid"] == str(account.pk)
        kids.add(request.claims["fxa_kid"])
    assert kids == {"0000000000450-uw", "0000000000123-qg"}
    assert Node.objects.get(node=service_node.url).current_load == 1

    user = current(database, account)
    assert user.client_state == "cc"
    assert len(user.old_client_states) == 0


def test_purging_is_not_done_on_downed_nodes(purge_db, service_node):
    """A row on a downed node waits; once the node is back up it is purged."""
    database = purge_db
    account = AccountFactory()
    user = allocate(database, account, client_state="aa")
    database.assignment_update(user, client_state="bb")
    assert len(records(account)) == 2

    database.node_update(service=SERVICE, node=service_node.url, downed=True, actor=None)
    counts = purge(grace_period=NO_GRACE)
    assert len(records(account)) == 2
    assert len(service_node.requests) == 0
    assert counts.skipped_downed == 1

    database.node_update(service=SERVICE, node=service_node.url, downed=False, actor=None)
    purge(grace_period=NO_GRACE)
    assert len(records(account)) == 1
    assert len(service_node.requests) == 1


def test_force(purge_db, service_node):
    """With force, a row on a downed node is purged (its node is still asked to delete the data)."""
    database = purge_db
    account = AccountFactory()
    user = allocate(database, account, client_state="aa")
    database.assignment_update(user, client_state="bb")
    assert len(records(account)) == 2

    database.node_update(service=SERVICE, node=service_node.url, downed=True, actor=None)
    purge(grace_period=NO_GRACE, force=True)
    assert len(records(account)) == 1
    assert len(service_node.requests) == 1


def test_dry_run(purge_db, service_node):
    """A dry run, even forced, counts what it would purge, and changes and sends nothing."""
    database = purge_db
    account = AccountFactory()
    user = allocate(database, account, client_state="aa")
    database.assignment_update(user, client_state="bb")
    assert len(records(account)) == 2

    database.node_update(service=SERVICE, node=service_node.url, downed=True, actor=None)
    before = records(account)
    counts = purge(grace_period=NO_GRACE, dry_run=True)
    assert counts.skipped_downed == 1
    counts = purge(grace_period=NO_GRACE, dry_run=True, force=True)
    assert (counts.deleted, counts.nodes_told, counts.dry_run) == (1, 1, True)
    assert records(account) == before
    assert len(service_node.requests) == 0


def test_purging_replaced_at(migration_db, service_node):
    """A replaced row with no newer one is purged too (its data deleted on its node)."""
    database = migration_db
    account = AccountFactory()
    user = allocate(database, account, client_state="aa")
    database.assignment_replace(uid=user.uid)

    purge(grace_period=NO_GRACE)
    assert len(records(account)) == 0
    assert len(service_node.requests) == 1


def test_purging_no_override(migration_db, service_node, spanner_node):
    """Without force, the old row of a migrated account is purged like any other: one DELETE."""
    database = migration_db
    account = AccountFactory()
    user = allocate(database, account, client_state="aa")
    database.assignment_replace(uid=user.uid)
    allocate(database, account, node=spanner_node.url, client_state="aa")

    purge(grace_period=NO_GRACE)
    assert len(records(account)) == 1
    assert len(service_node.requests) == 1


def test_purging_override_with_migrated(migration_db, service_node, spanner_node, downed_node):
    """Forced, with the override node: an old row on a downed node holding the same keys as the account's
    current row on the override node is deleted without a DELETE, which would erase the live data."""
    database = migration_db
    account = AccountFactory()
    # On a node now downed; the migration marks the row replaced and copies the data, keys unchanged.
    user = allocate(database, account, node=downed_node, client_state="aa")
    database.assignment_replace(uid=user.uid)
    allocate(database, account, node=spanner_node.url, client_state="aa")

    counts = purge(grace_period=NO_GRACE, force=True, override_node=spanner_node.url)
    user_records = records(account)
    assert len(user_records) == 1
    assert user_records[0].node == spanner_node.url
    assert len(service_node.requests) == 0
    assert counts.kept_active_data == 1


def test_purging_override_with_migrated_password_change(migration_db, service_node, spanner_node, downed_node):
    """After a password change the old rows' keys are no longer the current ones: both get their DELETE."""
    database = migration_db
    account = AccountFactory()
    user = allocate(database, account, node=downed_node, client_state="aa")
    database.assignment_replace(uid=user.uid)
    user = allocate(database, account, node=spanner_node.url, client_state="aa")
    database.assignment_update(user, client_state="ab")

    purge(grace_period=NO_GRACE, force=True, override_node=spanner_node.url)
    assert len(records(account)) == 1
    assert len(service_node.requests) == 2
    # The downed node's row went to the override node.
    assert {request.node for request in service_node.requests} == {spanner_node.url}


def test_failed_service_delete_does_not_abort_batch(purge_db, service_node):
    """A DELETE answered 500 does not stop the batch: that row stays, its replaced_at moved forward, the
    failure counted as http_5xx; the other account's row is purged."""
    database = purge_db
    healthy, broken = AccountFactory(), AccountFactory()
    for account in (healthy, broken):
        user = allocate(database, account, client_state="aa", generation=1)
        database.assignment_update(user, client_state="bb", generation=2)
    broken_old = next(record for record in records(broken) if record.replaced_at)
    service_node.failure_uids.add(broken_old.uid)

    counts = purge(grace_period=NO_GRACE)

    healthy_records = records(healthy)
    assert len(healthy_records) == 1
    assert healthy_records[0].replaced_at is None
    broken_records = records(broken)
    assert len(broken_records) == 2
    bumped = next(record for record in broken_records if record.uid == broken_old.uid)
    assert bumped.replaced_at > broken_old.replaced_at
    assert counts.failures == {"http_5xx": 1}
    assert counts.deleted == 1


def test_run_level_metrics_are_emitted(purge_db, service_node):
    """A run reports the backlog when it starts, a line per batch, and its counts at the end (tokenserver's
    purge.backlog.size, purge.batch.fetched, purge.run.success and duration)."""
    database = purge_db
    for account in AccountFactory.create_batch(2):
        user = allocate(database, account, client_state="aa", generation=1)
        database.assignment_update(user, client_state="bb", generation=2)

    lines = []
    counts = purge(grace_period=NO_GRACE, progress=lines.append)
    assert (counts.backlog, counts.batches, counts.fetched, counts.deleted, counts.failed) == (2, 1, 2, 2, 0)
    assert counts.seconds >= 0
    assert lines == [
        "2 old assignments past the grace period (0 seconds).",
        "  batch 1: 2 rows: 2 deleted (2 nodes told)",
    ]


@pytest.mark.django_db(transaction=True)
def test_run_failure_metric_emits_on_unhandled_error(purge_db, service_node, psql):
    """The database going away mid-run stops it with a CommandError saying what was done before: the
    first batch's row purged whole, the second's untouched and its node never asked."""
    database = purge_db
    accounts = AccountFactory.create_batch(2)
    for account in accounts:
        user = allocate(database, account, client_state="aa")
        database.assignment_update(user, client_state="bb")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()

    class CutAfterFirstBatch(io.StringIO):
        def write(self, text):
            if "batch 1:" in text:
                psql.execute("SELECT pg_terminate_backend(%s)", [pid])
            return super().write(text)

    try:
        with pytest.raises(CommandError, match="purge_old_records stopped by an error") as stopped:
            run("--grace-period", "0", "--max-per-loop", "1", "--service", SERVICE, stdout=CutAfterFirstBatch())
    finally:
        connection.close()
    assert "Done before it: 1 deleted (1 node told)" in str(stopped.value)
    assert [len(records(account)) for account in accounts] == [1, 2]
    assert len(service_node.requests) == 1


def test_purging_override_null_keys_changed_at(migration_db, service_node, spanner_node, downed_node):
    """As test_purging_override_with_migrated, with keys_changed_at null: the generation makes the key id."""
    database = migration_db
    account = AccountFactory()
    user = allocate(database, account, node=downed_node, client_state="aa", keys_changed_at=None)
    database.assignment_replace(uid=user.uid)
    allocate(database, account, node=spanner_node.url, client_state="aa", keys_changed_at=None)

    purge(grace_period=NO_GRACE, force=True, override_node=spanner_node.url)
    user_records = records(account)
    assert len(user_records) == 1
    assert user_records[0].node == spanner_node.url
    assert len(service_node.requests) == 0


# Beyond tokenserver's tests


def test_a_row_whose_node_was_removed_is_deleted_without_a_request(purge_db, service_node):
    """A removed node's rows have no node: they are deleted, and no one is asked."""
    account = AccountFactory()
    allocate(purge_db, account, client_state="aa")
    purge_db.node_remove(service=SERVICE, node=service_node.url, actor=None)
    counts = purge(grace_period=NO_GRACE)
    assert (counts.deleted, counts.nodes_told) == (1, 0)
    assert records(account) == []
    assert service_node.requests == []


def test_a_timeout_and_a_refused_connection_are_counted_and_retried_later(purge_db, service_node):
    """A node that answers too late and one that refuses the connection: both rows stay, moved back in the
    queue, counted as timeout and connect; the run goes on."""
    slow, gone = AccountFactory(), AccountFactory()
    with StorageNode(secret=NODE_SECRET) as slow_node:
        slow_node.delay = 2
        for account, url in ((slow, slow_node.url), (gone, closed_port_url())):
            purge_db.node_add(service=SERVICE, node=url, capacity=10, actor=None)
            allocate(purge_db, account, node=url, client_state="aa")
            purge_db.assignments_replace(service=SERVICE, account_id=account.pk)
        counts = purge(grace_period=NO_GRACE, request_timeout=0.5)
    assert counts.failures == {"timeout": 1, "connect": 1}
    assert [len(records(account)) for account in (slow, gone)] == [1, 1]


def test_a_node_that_cannot_verify_the_token_refuses_it_and_the_row_stays(purge_db, service_node):
    """A DELETE signed with another secret is refused by the node (401): counted as http_4xx, row kept."""
    account = AccountFactory()
    allocate(purge_db, account, client_state="aa")
    purge_db.assignments_replace(service=SERVICE, account_id=account.pk)
    counts = purge(grace_period=NO_GRACE, node_secret="another secret")
    assert counts.failures == {"http_4xx": 1}
    assert service_node.requests[0].claims is None
    assert len(records(account)) == 1


def test_max_records_stops_the_run(purge_db, service_node):
    """--max-records stops after that many rows whose node was told."""
    accounts = AccountFactory.create_batch(3)
    for account in accounts:
        allocate(purge_db, account, client_state="aa")
        purge_db.assignments_replace(service=SERVICE, account_id=account.pk)
    output = run("--grace-period", "0", "--max-per-loop", "2", "--max-records", "2")
    assert "Done in 1 batch: 2 deleted (2 nodes told). Stopped at --max-records." in output
    assert len(service_node.requests) == 2
    assert [len(records(account)) for account in accounts] == [0, 0, 1]


def test_without_node_secret_rows_on_up_nodes_are_kept_with_a_warning(purge_db, service_node, settings):
    """With no NODE_SECRET the nodes cannot be told: the command warns, and rows on up nodes stay."""
    settings.NODE_SECRET = ""
    account = AccountFactory()
    allocate(purge_db, account, client_state="aa")
    purge_db.assignments_replace(service=SERVICE, account_id=account.pk)
    output = run("--grace-period", "0")
    assert "NODE_SECRET is not set" in output
    assert "1 kept (no NODE_SECRET to tell their nodes)" in output
    assert len(records(account)) == 1
    assert service_node.requests == []


def test_the_command_purges_and_reports(purge_db, service_node):
    """manage.py purge_old_records: the backlog, a line per batch, and the summary."""
    account = AccountFactory()
    allocate(purge_db, account, client_state="aa")
    purge_db.assignments_replace(service=SERVICE, account_id=account.pk)
    output = run("--grace-period", "0", "--service", SERVICE)
    assert output.splitlines() == [
        "1 old assignment past the grace period (0 seconds).",
        "  batch 1: 1 row: 1 deleted (1 node told)",
        "Done in 1 batch: 1 deleted (1 node told).",
    ]
    assert records(account) == []


def test_a_grace_period_of_one_is_said_in_the_singular(purge_db, service_node):
    """A grace period of one day or one second is said in the singular, of two days in the plural."""
    account = AccountFactory()
    allocate(purge_db, account, client_state="aa")
    purge_db.assignments_replace(service=SERVICE, account_id=account.pk)
    assert run("--grace-period", "86400").splitlines()[0] == "0 old assignments past the grace period (1 day)."
    assert run("--grace-period", "172800").splitlines()[0] == "0 old assignments past the grace period (2 days)."
    assert "(1 second)" in run("--grace-period", "1", "--dry-run")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--grace-period", "-1"], "--grace-period must be 0 or more"),
        (["--grace-period", "soon"], "invalid int value: 'soon'"),
        (["--grace-period", "99999999999999999999"], r"--grace-period must be 0 or more seconds, at most 315360000"),
        (["--max-per-loop", "0"], "--max-per-loop must be between 1 and 10000"),
        (["--max-records", "-1"], "--max-records must be 0"),
        (["--request-timeout", "0"], "--request-timeout must be more than 0"),
        (["--override-node", "http://127.0.0.1:1"], "give --force too"),
        (["--force", "--override-node", "spanner"], "override node 'spanner' is not valid"),
        (["--service", "nosuch"], "unknown service 'nosuch'"),
        (["--range-start", "-1"], "--range-start must be 0 or more"),
        (["--range-start", "10", "--range-end", "10"], r"--range-end must be above --range-start \(10\)"),
        (["--range-end", "first"], "invalid int value: 'first'"),
    ],
)
def test_bad_arguments_are_refused_and_nothing_is_purged(purge_db, service_node, args, message):
    """A bad option is a CommandError saying what is wrong; nothing is sent or deleted."""
    account = AccountFactory()
    allocate(purge_db, account, client_state="aa")
    purge_db.assignments_replace(service=SERVICE, account_id=account.pk)
    with pytest.raises(CommandError, match=message):
        run("--grace-period", "0", *args)
    assert len(records(account)) == 1
    assert service_node.requests == []


@pytest.mark.django_db(transaction=True)
def test_a_second_purge_does_not_start_while_one_runs(purge_db, service_node, psql):
    """Another session holding purge_old_records' lock (a run, or the cleanup's rule): refused, nothing done."""
    account = AccountFactory()
    allocate(purge_db, account, client_state="aa")
    purge_db.assignments_replace(service=SERVICE, account_id=account.pk)
    psql.execute("SELECT pg_advisory_lock(%s)", [lock_key(LOCK)])
    try:
        with pytest.raises(CommandError, match="another purge_old_records is running on these uids"):
            run("--grace-period", "0")
    finally:
        psql.execute("SELECT pg_advisory_unlock_all()")
    assert len(records(account)) == 1
    assert run("--grace-period", "0").endswith("Done in 1 batch: 1 deleted (1 node told).\n")
    assert records(account) == []


def test_a_pattern_no_delete_url_can_be_made_from_is_refused_before_anything_is_done(purge_db, service_node):
    """A service whose pattern does not name the account ({uid}) or uses another placeholder: a
    CommandError before any row of any service is touched."""
    account = AccountFactory()
    allocate(purge_db, account, client_state="aa")
    purge_db.assignments_replace(service=SERVICE, account_id=account.pk)
    purge_db.service_add(service="sync-2", pattern="{node}/2/{user}")
    with pytest.raises(
        CommandError, match=r"service sync-2's pattern '\{node\}/2/\{user\}' cannot make a DELETE's URL"
    ):
        run("--grace-period", "0")
    assert len(records(account)) == 1
    assert service_node.requests == []


# Several purgers, each its own range of uids (tokenserver's --range-start and --range-end)


def replaced_rows(database, count: int) -> list[int]:
    """``count`` accounts' replaced rows, their uids in order."""
    uids = []
    for _ in range(count):
        account = AccountFactory()
        uids.append(allocate(database, account, client_state="aa").uid)
        database.assignments_replace(service=SERVICE, account_id=account.pk)
    return uids


def old_uids() -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT uid FROM node_assignments WHERE replaced_at IS NOT NULL ORDER BY uid")
        return [uid for (uid,) in cursor.fetchall()]


def test_a_range_purges_the_uids_from_its_start_up_to_its_end(purge_db, service_node):
    """--range-start and --range-end purge the uids from the start up to, not including, the end; the
    backlog line says the range; the other rows and their nodes are left alone."""
    first, second, third, fourth = replaced_rows(purge_db, 4)

    output = run("--grace-period", "0", "--range-start", str(second), "--range-end", str(fourth))

    assert old_uids() == [first, fourth]
    assert sorted(int(request.path.rsplit("/", 1)[1]) for request in service_node.requests) == [second, third]
    assert output.splitlines()[0] == (
        f"2 old assignments past the grace period (0 seconds) among uids from {second} below {fourth}."
    )
    run("--grace-period", "0", "--range-end", str(second))
    run("--grace-period", "0", "--range-start", str(fourth))
    assert old_uids() == []


@pytest.mark.django_db(transaction=True)
def test_purgers_of_ranges_run_side_by_side_but_never_beside_a_whole_run_or_the_same_range(
    purge_db, service_node, psql
):
    """A ranged run holds the whole purge's lock shared and its range's own: another range runs beside
    it, the same range and a whole run (the command without a range, the daily cleanup) do not."""
    first, second = replaced_rows(purge_db, 2)
    # Another purger is working on uids from 0 below the second.
    psql.execute(
        "SELECT pg_advisory_lock_shared(%s), pg_advisory_lock(%s)", [lock_key(LOCK), lock_key(f"{LOCK}:0:{second}")]
    )
    try:
        with pytest.raises(CommandError, match="another purge_old_records is running on these uids"):
            run("--grace-period", "0")
        with pytest.raises(CommandError, match="another purge_old_records is running on these uids"):
            run("--grace-period", "0", "--range-end", str(second))
        assert old_uids() == [first, second]
        run("--grace-period", "0", "--range-start", str(second))
        assert old_uids() == [first]
    finally:
        psql.execute("SELECT pg_advisory_unlock_all()")
