"""Attacks on the webhook dispatcher (platform_events/webhooks/dispatch.py): its unawaited records
(DeliveredRecords / UnawaitedStatement), its in_due_order() claim and the session settings a run sets
(_run_settings), with a real receiver on loopback (tests/webhook_receiver.py) and the real test
database."""

import os
import signal
import threading
import time
from collections import Counter

import pytest
from django.db import connection, transaction

from platform_events.webhooks.dispatch import RECORD_EVERY, claim_batch, deliver
from tests.platform_events.webhooks.test_dispatch import dispatcher_env, make_endpoint, provision
from tests.support import connect, manage

pytestmark = [
    pytest.mark.attack,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("webhook_settings"),
]


def test_ctrl_c_while_a_records_answer_is_pending_leaves_the_connection_usable(receiver):
    """SIGINT arrives during the one POST that goes out while a record's answer is pending (POST
    RECORD_EVERY + 1). The run must end with KeyboardInterrupt and Django's connection must still work."""
    make_endpoint(receiver.url)
    with connect(autocommit=True) as conn:
        provision(conn, RECORD_EVERY + 5)

    def interrupt(number):
        if number == RECORD_EVERY + 1:  # the record of the first RECORD_EVERY is on its way, unanswered
            os.kill(os.getpid(), signal.SIGINT)

    receiver.on_request = interrupt
    raised = None
    try:
        deliver()
    except BaseException as error:  # noqa: BLE001 - what the run ends with is the point
        raised = error
    receiver.on_request = None
    assert isinstance(raised, KeyboardInterrupt), f"the run ended with {raised!r}, not KeyboardInterrupt"
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")  # "another command is already in progress" when left out of step
        assert cursor.fetchone() == (1,)


def test_a_run_whose_lease_ran_out_while_collecting_a_record_does_not_post_what_another_run_holds(
    receiver, webhook_settings
):
    """The record of the first RECORD_EVERY waits on a row lock (another session holds delivery 1) for longer
    than the lease. Meanwhile a second dispatcher claims and delivers the rest. When the record's
    answer finally comes (in before_post, between the lease check and the POST), the first run must not
    POST deliveries the second one now holds: none of those arrives twice, and nobody was killed."""
    webhook_settings.WEBHOOKS_CONNECT_TIMEOUT_SECONDS = 0.5
    webhook_settings.WEBHOOKS_TIMEOUT_SECONDS = 0.5
    # Long enough for the first RECORD_EVERY + 1 POSTs before the lease runs short, on a loaded machine.
    webhook_settings.WEBHOOKS_LEASE_SECONDS = 8
    make_endpoint(receiver.url)
    total = RECORD_EVERY + 20
    with connect(autocommit=True) as conn:
        provision(conn, total)
    other_run = {}
    with connect() as holder:

        def second_dispatcher():
            time.sleep(webhook_settings.WEBHOOKS_LEASE_SECONDS + 0.5)  # the first run's lease is over
            other_run["result"] = manage("deliver_webhooks", **dispatcher_env())
            holder.rollback()  # the first run's record goes through now

        def on_request(number):
            if number == 2:  # delivery 1's POST answered, its record not sent yet
                first = receiver.received[0].headers["webhook-id"]
                holder.execute("SELECT 1 FROM webhook_deliveries WHERE event_id = %s FOR UPDATE", [first])
            if number == RECORD_EVERY + 1:
                threading.Thread(target=second_dispatcher, daemon=True).start()

        receiver.on_request = on_request
        first_run = deliver(max_batches=1)
        receiver.on_request = None
    assert other_run["result"].returncode == 0, other_run["result"].stdout + other_run["result"].stderr
    copies = Counter(r.headers["webhook-id"] for r in receiver.received)
    sent_twice = [event_id for event_id, n in copies.items() if n > 1]
    # The first RECORD_EVERY + 1 went out before the lease ran out; anything else twice was sent by the
    # first run after it lost its claim.
    first_posts = {r.headers["webhook-id"] for r in receiver.received[: RECORD_EVERY + 1]}
    assert [e for e in sent_twice if e not in first_posts] == [], (
        f"{len(sent_twice)} deliveries sent twice with no kill; first run: {first_run.summary()}"
    )


def test_enable_sort_does_not_leak_into_the_callers_transaction():
    """A claim inside a caller's transaction leaves that transaction's enable_sort as it was."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_sort = off")  # the caller's own choice
        claim_batch(5)
        cursor.execute("SHOW enable_sort")
        assert cursor.fetchone() == ("off",)


def test_a_connection_whose_socket_is_past_fd_setsize_can_record(receiver):
    """A dispatcher in a process with over 1,024 descriptors open (the django-q cluster, a busy
    listener): Django's connection gets a socket numbered past select()'s FD_SETSIZE. psycopg's own
    queries wait with epoll/poll and work; the unawaited record must too."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2048:
        pytest.skip("cannot open 2,048 descriptors here")
    resource.setrlimit(
        resource.RLIMIT_NOFILE,
        (max(soft, 4096) if hard == resource.RLIM_INFINITY else min(max(soft, 4096), hard), hard),
    )
    make_endpoint(receiver.url)
    with connect(autocommit=True) as conn:
        provision(conn, RECORD_EVERY)
    connection.close()
    padding = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        connection.ensure_connection()
        assert connection.connection.pgconn.socket >= 1024
        result = deliver()
        assert result.delivered == RECORD_EVERY
    finally:
        connection.close()
        for fd in padding:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


# The session settings a run sets (synchronous_commit, enable_sort) against the real database.

SETTINGS = ("enable_sort", "synchronous_commit")


def session_settings() -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('enable_sort'), current_setting('synchronous_commit')")
        return dict(zip(SETTINGS, cursor.fetchone(), strict=True))


def test_the_callers_own_session_settings_are_put_back_after_a_run_and_after_one_that_raises(receiver):
    """A caller whose session set its own enable_sort and synchronous_commit (SET, outside any
    transaction) finds them as they were after a run, also after Ctrl-C mid-POST. RESET would put back
    the server's defaults instead, not what the session had."""
    make_endpoint(receiver.url)
    with connection.cursor() as cursor:
        cursor.execute("SET enable_sort = off")
        cursor.execute("SET synchronous_commit = local")
    before = session_settings()
    assert before == {"enable_sort": "off", "synchronous_commit": "local"}
    try:
        with connect(autocommit=True) as conn:
            provision(conn, 3)
        assert deliver().delivered == 3
        assert session_settings() == before

        with connect(autocommit=True) as conn:
            provision(conn, 3, prefix="more")
        receiver.on_request = lambda number: number == 5 and os.kill(os.getpid(), signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            deliver()
        receiver.on_request = None
        assert session_settings() == before
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET enable_sort; RESET synchronous_commit")


def test_a_run_inside_the_callers_transaction_leaves_its_settings_alone(receiver):
    make_endpoint(receiver.url)
    with connect(autocommit=True) as conn:
        provision(conn, 3)
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit = local")
        before = session_settings()
        assert deliver().delivered == 3
        assert session_settings() == before
    assert session_settings() == {"enable_sort": "on", "synchronous_commit": "on"}
