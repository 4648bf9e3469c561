"""The webhook dispatcher against a real HTTP receiver on loopback (tests/webhook_receiver.py): signed
per Standard Webhooks (checked by the standardwebhooks library's own verifier), retried on its
schedule, 410 disables, per-account order, late commits, several dispatchers at once, one killed."""

import base64
import json
import signal
import time
import uuid
from datetime import timedelta

import pytest
from django.db import OperationalError, connection, transaction
from django.db.models.functions import Now
from standardwebhooks.webhooks import Webhook

from platform_events.webhooks import dispatch
from platform_events.webhooks.dispatch import CLAIM, DUE, RECORD_EVERY, deliver, in_due_order
from platform_events.webhooks.models import DeliveryStatus, EndpointStatus, WebhookDelivery, WebhookSubscription
from platform_events.webhooks.secrets import encrypt_secret, new_signing_secret
from tests.conftest import WEBHOOK_KEY
from tests.support import connect, database_url_for_tests, set_deliveries, start_manage, wait_for
from tests.webhook_receiver import WebhookReceiver

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("webhook_settings")]

KEY = WEBHOOK_KEY


def dispatcher_env(**extra):
    return {
        "DATABASE_URL": database_url_for_tests(),
        "WEBHOOKS_ALLOW_PRIVATE_URLS": "true",
        "WEBHOOK_SECRET_KEYS": "t1:" + base64.b64encode(KEY).decode(),
        **extra,
    }


def make_endpoint(url, events=("account.created", "account.suspended", "account.activated"), *, secret=None):
    endpoint_id = uuid.uuid4()
    secret = secret or new_signing_secret()
    blob, key_id = encrypt_secret(secret, aad=endpoint_id.bytes)
    WebhookSubscription.objects.create(
        id=endpoint_id, owner_id="partner", url=url, events=list(events), secret_encrypted=blob, secret_key_id=key_id
    )
    return WebhookSubscription.objects.get(pk=endpoint_id), secret


def provision(conn, count, prefix="user"):
    conn.execute(
        "INSERT INTO accounts (email, login) SELECT %s || n || '@example.com', %s || n FROM generate_series(1, %s) n",
        [prefix, prefix, count],
    )


def statuses():
    return {status: WebhookDelivery.objects.filter(status=status).count() for status in DeliveryStatus.values}


def test_a_delivery_is_signed_per_standard_webhooks_and_verifies(receiver):
    endpoint, secret = make_endpoint(receiver.url)
    with connect(autocommit=True) as conn:
        provision(conn, 1)
    result = deliver()
    assert (result.claimed, result.delivered) == (1, 1)
    [request] = receiver.received
    payload = Webhook(secret).verify(request.body, request.headers)  # raises on a bad signature
    assert payload["type"] == "account.created" and payload["data"]["login"] == "user1"
    delivery = WebhookDelivery.objects.get()
    assert request.headers["webhook-id"] == str(delivery.event_id)
    assert request.headers["content-type"] == "application/json"
    assert delivery.status == DeliveryStatus.DELIVERED and delivery.http_status == 200
    assert delivery.attempts == 1 and delivery.latency_ms is not None and delivery.claim is None
    endpoint.refresh_from_db()
    assert endpoint.last_success_at is not None


def test_during_a_rotation_both_secrets_sign(receiver, webhook_settings):
    endpoint, old_secret = make_endpoint(receiver.url)
    new_secret = new_signing_secret()
    blob, key_id = encrypt_secret(new_secret, aad=endpoint.pk.bytes)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE webhook_subscriptions SET previous_secret_encrypted = secret_encrypted,"
            " previous_secret_key_id = secret_key_id, previous_secret_until = now() + interval '1 hour',"
            " secret_encrypted = %s, secret_key_id = %s",
            [blob, key_id],
        )
    with connect(autocommit=True) as conn:
        provision(conn, 1)
    deliver()
    [request] = receiver.received
    assert len(request.headers["webhook-signature"].split(" ")) == 2
    for secret in (old_secret, new_secret):
        Webhook(secret).verify(request.body, request.headers)


def test_a_failed_attempt_is_retried_on_its_schedule_and_given_up_after_it(receiver, webhook_settings):
    make_endpoint(receiver.url)
    webhook_settings.WEBHOOKS_RETRY_SCHEDULE = [60, 0, 0]
    receiver.statuses = [503]
    with connect(autocommit=True) as conn:
        provision(conn, 1)
    first = deliver()
    assert (first.retrying, first.delivered) == (1, 0)
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.http_status, delivery.attempts) == (DeliveryStatus.FAILED, 503, 1)
    assert delivery.next_retry_at - delivery.last_attempt_at >= timedelta(seconds=59)
    assert deliver().claimed == 0  # not due for a minute
    set_deliveries(WebhookDelivery.objects.all(), next_retry_at=Now())
    assert deliver().delivered == 1
    assert WebhookDelivery.objects.get().attempts == 2

    webhook_settings.WEBHOOKS_RETRY_SCHEDULE = [0, 0, 0]
    receiver.status = 500
    with connect(autocommit=True) as conn:
        provision(conn, 1, prefix="other")
    result = deliver()  # the first attempt and its three retries, each due at once
    assert (result.claimed, result.retrying, result.failed) == (4, 3, 1)
    failed = WebhookDelivery.objects.get(status=DeliveryStatus.PERMANENTLY_FAILED)
    assert failed.attempts == 4
    assert deliver().claimed == 0


def test_a_failure_recorded_after_the_claim_was_taken_over_leaves_the_other_runs_delivery_alone(
    receiver, webhook_settings
):
    """The run's lease runs out while its POST is out, and another run claims the delivery. The
    receiver then answers 503: the first run's failed attempt must match nothing (a lost claim), and
    the delivery stays as the run that took it over holds it: its claim, no attempt counted, not
    scheduled again."""
    webhook_settings.WEBHOOKS_LEASE_SECONDS = 1
    make_endpoint(receiver.url)
    with connect(autocommit=True) as conn:
        provision(conn, 1)
    taken_over = {}

    def take_over(number):
        time.sleep(1.2)  # the first run's lease is over while its POST waits for an answer
        try:
            claim, deliveries = dispatch.claim_batch(5)  # a second run, on this thread's own connection
            taken_over.update(claim=claim.id, deliveries=[d.id for d in deliveries])
        finally:
            connection.close()

    receiver.on_request = take_over
    receiver.status = 503
    first = deliver(max_batches=1)
    receiver.on_request = None
    delivery = WebhookDelivery.objects.get()
    assert taken_over["deliveries"] == [delivery.id]
    assert (first.claimed, first.lost_claims, first.retrying, first.failed) == (1, 1, 0, 0)
    assert (delivery.claim, delivery.attempts, delivery.http_status, delivery.status) == (
        taken_over["claim"],
        0,
        None,
        DeliveryStatus.PENDING,
    )
    assert WebhookSubscription.objects.get().failure_count == 0


def test_retry_after_is_honoured(receiver, webhook_settings):
    make_endpoint(receiver.url)
    webhook_settings.WEBHOOKS_RETRY_SCHEDULE = [1, 0, 0]
    receiver.statuses = [429]
    receiver.headers = {"Retry-After": "120"}
    with connect(autocommit=True) as conn:
        provision(conn, 1)
    deliver()
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == DeliveryStatus.FAILED
    assert delivery.next_retry_at - delivery.last_attempt_at >= timedelta(seconds=119)
    assert deliver().claimed == 0  # not due yet


def test_410_gone_disables_the_endpoint_at_once_and_is_audited(receiver):
    endpoint, _ = make_endpoint(receiver.url)
    receiver.status = 410
    with connect(autocommit=True) as conn:
        provision(conn, 3)
    result = deliver()
    assert result.claimed == 3 and result.failed == 1 and result.disabled == [receiver.url]
    assert len(receiver.received) == 1
    endpoint.refresh_from_db()
    assert endpoint.status == EndpointStatus.DISABLED_DEAD and "410 Gone" in endpoint.disabled_reason
    # The other two wait, unclaimed, for staff to enable the endpoint again.
    assert WebhookDelivery.objects.filter(status=DeliveryStatus.PENDING, claim__isnull=True).count() == 2
    assert deliver().claimed == 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM audit_events WHERE action = 'webhook.disabled'")
        assert cursor.fetchone() == (1,)


def test_successes_recorded_after_a_410_in_their_batch_leave_the_disabled_endpoints_failure(receiver):
    """Two deliveries answered 204, then a 410: the successes are recorded after the 410 disabled the
    endpoint (they wait for RECORD_EVERY or the batch's end), and the endpoint keeps its failure and
    its reason instead of looking healthy."""
    endpoint, _ = make_endpoint(receiver.url)
    receiver.statuses = [204, 204, 410]
    with connect(autocommit=True) as conn:
        provision(conn, 3)
    result = deliver()
    assert (result.delivered, result.failed) == (2, 1)
    endpoint.refresh_from_db()
    assert endpoint.status == EndpointStatus.DISABLED_DEAD
    assert endpoint.failure_count == 1
    assert endpoint.failing_since is not None


def test_an_endpoint_failing_for_days_is_disabled(receiver, webhook_settings):
    endpoint, _ = make_endpoint(receiver.url)
    WebhookSubscription.objects.filter(pk=endpoint.pk).update(failing_since=endpoint.created_at - timedelta(days=6))
    receiver.status = 502
    with connect(autocommit=True) as conn:
        provision(conn, 1)
    deliver()
    endpoint.refresh_from_db()
    assert endpoint.status == EndpointStatus.DISABLED_DEAD and "every attempt failed since" in endpoint.disabled_reason


def test_an_accounts_events_reach_an_endpoint_in_order_even_through_retries(receiver, webhook_settings):
    make_endpoint(receiver.url)
    webhook_settings.WEBHOOKS_RETRY_SCHEDULE = [0, 0, 0]
    receiver.statuses = [503, 503]
    with connect(autocommit=True) as conn:
        provision(conn, 1)
        conn.execute("UPDATE tokens SET consumed_at = now()")  # activates it
        conn.execute("UPDATE accounts SET status = 'suspended'")
    while deliver().claimed:
        pass
    types = [json.loads(r.body)["type"] for r in receiver.received]
    assert types == ["account.created", "account.created", "account.created", "account.activated", "account.suspended"]


def test_a_delivery_committed_late_is_not_skipped(receiver):
    make_endpoint(receiver.url)
    with connect() as late, connect(autocommit=True) as conn:
        provision(late, 1, prefix="late")
        provision(conn, 1, prefix="early")
        assert deliver().delivered == 1
        late.commit()
    assert deliver().delivered == 1
    assert len(receiver.received) == 2


def test_a_receiver_down_then_back_gets_everything():
    with WebhookReceiver() as probe:
        url = probe.url  # a port nobody listens on once this closes
    make_endpoint(url)
    with connect(autocommit=True) as conn:
        provision(conn, 5)
    result = deliver()
    assert result.retrying == 5
    assert "could not connect" in WebhookDelivery.objects.first().http_response_body_excerpt
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    set_deliveries(WebhookDelivery.objects.all(), next_retry_at=Now())
    with WebhookReceiver(port=port) as receiver:
        while deliver().claimed:
            pass
        assert len(receiver.received) == 5
    assert statuses()[DeliveryStatus.DELIVERED] == 5


def test_a_redirect_is_not_followed(receiver):
    make_endpoint(receiver.url)
    receiver.statuses = [302]
    receiver.headers = {"Location": "http://169.254.169.254/latest/meta-data/"}
    with connect(autocommit=True) as conn:
        provision(conn, 1)
    deliver()
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == DeliveryStatus.FAILED and delivery.http_status == 302
    assert "not followed" in delivery.http_response_body_excerpt
    assert len(receiver.received) == 1


def test_the_ssrf_guard_refuses_loopback_at_delivery(receiver, webhook_settings):
    make_endpoint(receiver.url.replace("127.0.0.1", "localhost"))
    webhook_settings.WEBHOOKS_ALLOW_PRIVATE_URLS = False
    with connect(autocommit=True) as conn:
        provision(conn, 1)
    deliver()
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == DeliveryStatus.FAILED
    assert "refused" in delivery.http_response_body_excerpt and "loopback" in delivery.http_response_body_excerpt
    assert receiver.received == []


def test_a_refused_delivery_says_why_on_the_console_in_one_line(receiver, webhook_settings, caplog):
    """Not only "1 to retry": the endpoint, the address refused and the setting that would allow it."""
    endpoint, _ = make_endpoint(receiver.url)
    webhook_settings.WEBHOOKS_ALLOW_PRIVATE_URLS = False
    with connect(autocommit=True) as conn:
        provision(conn, 1)
    with caplog.at_level("INFO", logger="platform_events.webhooks"):
        deliver()
    [line] = [record.getMessage() for record in caplog.records if record.name == "platform_events.webhooks.dispatch"]
    assert line.startswith(f"webhook endpoint {endpoint.pk} ({receiver.url}): 1 delivery not delivered: refused:")
    assert "127.0.0.1, a loopback address" in line and "WEBHOOKS_ALLOW_PRIVATE_URLS" in line


def test_an_answer_that_is_not_2xx_is_said_on_the_console_with_its_status(receiver, caplog):
    make_endpoint(receiver.url)
    receiver.status, receiver.body = 503, b"busy"
    with connect(autocommit=True) as conn:
        provision(conn, 2)
    with caplog.at_level("INFO", logger="platform_events.webhooks"):
        deliver()
    lines = [record.getMessage() for record in caplog.records if record.name == "platform_events.webhooks.dispatch"]
    assert len(lines) == 1 and lines[0].endswith("2 deliveries not delivered: it answered 503: busy")


def test_four_dispatchers_at_once_deliver_every_event_once_in_order_and_a_killed_one_loses_nothing(receiver):
    """4 concurrent deliver_webhooks processes over 2,000 deliveries to two endpoints (500 accounts,
    each created then suspended); one is killed with SIGKILL mid-way: every (endpoint, event) arrives,
    each account's events reach each endpoint in order, and only what the killed one sent and had not
    recorded arrives twice."""
    endpoints = [make_endpoint(receiver.url + "/a")[0], make_endpoint(receiver.url + "/b")[0]]
    receiver.delay = 0.002
    with connect(autocommit=True) as conn:
        provision(conn, 500)
        conn.execute("UPDATE accounts SET status = 'suspended'")
    env = dispatcher_env(
        WEBHOOKS_LEASE_SECONDS="20", WEBHOOKS_CONNECT_TIMEOUT_SECONDS="2", WEBHOOKS_TIMEOUT_SECONDS="5"
    )
    workers = [start_manage("deliver_webhooks", "--batch-size", "25", **env) for _ in range(4)]
    wait_for(lambda: len(receiver.received) >= 200, timeout=60)
    workers[0].send_signal(signal.SIGKILL)
    for worker in workers[1:]:
        output, _ = worker.communicate(timeout=300)
        assert worker.returncode == 0, output
    workers[0].communicate()
    # What the killed one held comes due when its lease ends.
    wait_for(
        lambda: deliver().claimed == 0 and not WebhookDelivery.objects.exclude(status="DELIVERED").exists(),
        timeout=90,
        interval=1,
    )
    arrived = [(r.path, r.headers["webhook-id"]) for r in receiver.received]
    expected = {
        (f"/hook/{name}", str(event_id))
        for name, endpoint in zip("ab", endpoints, strict=True)
        for event_id in WebhookDelivery.objects.filter(subscription=endpoint).values_list("event_id", flat=True)
    }
    assert set(arrived) == expected and len(expected) == 2000
    assert len(arrived) - len(set(arrived)) <= RECORD_EVERY  # at most what the killed run sent and had not recorded
    first_seen = {}
    for request in receiver.received:
        payload = json.loads(request.body)
        first_seen.setdefault((request.path, payload["data"]["id"]), [])
        if payload["type"] not in first_seen[(request.path, payload["data"]["id"])]:
            first_seen[(request.path, payload["data"]["id"])].append(payload["type"])
    assert all(types == ["account.created", "account.suspended"] for types in first_seen.values())


def test_a_record_the_database_refuses_leaves_at_most_one_batch_of_records_and_one_post_to_send_again(receiver):
    """Successes are recorded by a statement sent without waiting (DeliveredRecords): one POST goes out
    while PostgreSQL records, then the answer is read. A record refused (here a lock timeout: another
    session holds the first delivery's row) stops the run before more POSTs go out unrecorded."""
    make_endpoint(receiver.url)
    total = RECORD_EVERY + 20
    with connect(autocommit=True) as conn:
        provision(conn, total)
    with connect() as holder:

        def hold_the_first_delivery(number):
            if number == 2:  # claimed and committed, its POST answered, its record not yet sent
                holder.execute(
                    "SELECT 1 FROM webhook_deliveries WHERE event_id = %s FOR UPDATE",
                    [received_ids()[0]],
                )

        def received_ids():
            return [r.headers["webhook-id"] for r in receiver.received]

        receiver.on_request = hold_the_first_delivery
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '200ms'")
        try:
            with pytest.raises(OperationalError, match="lock timeout"):
                deliver()
        finally:
            with connection.cursor() as cursor:
                cursor.execute("RESET lock_timeout")
            holder.rollback()
    receiver.on_request = None
    first_run = len(receiver.received)
    assert first_run == RECORD_EVERY + 1  # the refused record's deliveries and the one POST after it
    # What the failed run held comes due when its lease ends: end it now.
    WebhookDelivery.objects.filter(claim__isnull=False).update(lease_until=Now() - timedelta(seconds=1))
    wait_for(lambda: deliver().claimed == 0 and statuses()["DELIVERED"] == total, timeout=60, interval=0.5)
    ids = received_ids()
    assert len(set(ids)) == total
    assert len(ids) - total == RECORD_EVERY + 1


@pytest.mark.parametrize("query", ["claim", "longest wait"])
def test_the_claim_and_the_longest_wait_walk_the_due_index_instead_of_sorting_the_queue(receiver, query):
    """The planner, left alone, reads and sorts every due delivery for each batch of 50 (7 ms with 2,000
    due in bench/webhooks.py, O(queue)): it estimates the "no earlier event" anti-join at a few rows.
    Sorting off, the index must hold the claim's whole order for the walk to stop at the batch. A plan,
    not a time. (This database's statistics do not reproduce the bench's estimate, so the planner's
    own choice here is already the walk.)"""
    make_endpoint(receiver.url)
    with connect(autocommit=True) as conn:
        provision(conn, 500)
        conn.execute("ANALYZE webhook_deliveries")
    sql = (
        CLAIM
        if query == "claim"
        else f"SELECT now() - d.next_retry_at {DUE} ORDER BY d.next_retry_at, d.event_seq LIMIT 1"
    )
    params = {"size": 50, "claim": uuid.uuid4(), "lease": timedelta(seconds=60)}
    with in_due_order() as cursor:
        cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params if query == "claim" else None)
        plan = json.dumps(cursor.fetchone()[0])
    assert "Sort" not in plan  # neither a sort nor an incremental one: the index holds the whole order
    assert '"Index Name": "webhook_deliveries_due"' in plan


def test_a_record_of_successes_reads_its_deliveries_through_the_primary_key(receiver):
    """The record of RECORD_EVERY successes finds its rows by their ids in the primary key, not by a
    read of the whole table filtered on the claim (the planner guesses a claim matches one row, and the
    rows of jsonb_to_recordset are opaque to it). A plan, not a time."""
    make_endpoint(receiver.url)
    with connect(autocommit=True) as conn:
        provision(conn, 5000)
        conn.execute("ANALYZE webhook_deliveries")
    claim, deliveries = dispatch.claim_batch(RECORD_EVERY)
    rows = [{"id": str(d.id), "http_status": 204, "excerpt": "", "latency": 1} for d in deliveries]
    params = [json.dumps(rows), str(claim.id), "{" + ",".join(row["id"] for row in rows) + "}"]
    statement = dispatch.DeliveredRecords.STATEMENT.replace("$1", "%s").replace("$2", "%s").replace("$3", "%s")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("EXPLAIN (FORMAT JSON) " + statement, params)
        nodes = list(plan_nodes(cursor.fetchone()[0][0]["Plan"]))
    reads = {node["Node Type"] for node in nodes if node.get("Relation Name") == "webhook_deliveries"}
    assert "Seq Scan" not in reads
    assert any(node.get("Index Name") == "webhook_deliveries_pkey" for node in nodes)


def plan_nodes(node):
    yield node
    for child in node.get("Plans", []):
        yield from plan_nodes(child)


def test_the_next_batch_is_claimed_while_the_last_posts_of_a_batch_go_out(receiver):
    """The next batch's claim is sent before the batch's last POST, not after it: while the receiver
    answers that POST, the database already holds two claims of this run."""
    make_endpoint(receiver.url)
    with connect(autocommit=True) as conn:
        provision(conn, 4)
    claims_seen = []

    def count_claims(number):
        if number == 2:  # the first batch's last POST
            with connect(autocommit=True) as conn:
                (claims,) = conn.execute(
                    "SELECT count(DISTINCT claim) FROM webhook_deliveries WHERE claim IS NOT NULL"
                ).fetchone()
            claims_seen.append(claims)

    receiver.on_request = count_claims
    result = deliver(batch_size=2)
    receiver.on_request = None
    assert claims_seen == [2]
    assert (result.claimed, result.delivered) == (4, 4)
    assert statuses()["DELIVERED"] == 4


def test_a_batch_claimed_before_its_endpoint_answered_410_sends_it_nothing(receiver):
    """Batches of one: the second is claimed while the first POST is out. That POST's 410 disables the
    endpoint; the second batch's delivery is given back unattempted, not posted to the gone endpoint."""
    make_endpoint(receiver.url)
    receiver.status = 410
    with connect(autocommit=True) as conn:
        provision(conn, 3)
    result = deliver(batch_size=1)
    assert len(receiver.received) == 1
    assert (result.failed, result.disabled) == (1, [receiver.url])
    assert WebhookDelivery.objects.filter(status=DeliveryStatus.PENDING, claim__isnull=True).count() == 2


def test_a_run_that_stops_after_max_batches_leaves_no_delivery_claimed(receiver):
    """The last batch a run may take claims no next one: nothing is left leased for a batch that never comes."""
    make_endpoint(receiver.url)
    with connect(autocommit=True) as conn:
        provision(conn, 3)
    result = deliver(batch_size=1, max_batches=2)
    assert (result.claimed, result.delivered) == (2, 2)
    assert not WebhookDelivery.objects.filter(claim__isnull=False).exists()
    assert statuses()["PENDING"] == 1


def test_a_claim_is_a_hot_update_that_adds_no_index_entry(receiver):
    """Pages of webhook_deliveries keep room for a claimed version of each row
    (platform_events/sql/0031_deliveries_fillfactor.sql): every row a claim leases is updated in place
    on its page (HOT), no index entry added."""
    make_endpoint(receiver.url)
    with connect(autocommit=True) as conn:
        provision(conn, 300)
    counts = (
        "SELECT pg_stat_get_xact_tuples_hot_updated('webhook_deliveries'::regclass),"
        " pg_stat_get_xact_tuples_updated('webhook_deliveries'::regclass)"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(counts)
        hot_before, updated_before = cursor.fetchone()
        _, deliveries = dispatch.claim_batch(200)
        cursor.execute(counts)
        hot, updated = cursor.fetchone()
    assert len(deliveries) == 200
    assert (hot - hot_before, updated - updated_before) == (200, 200)


def test_a_claim_skips_deliveries_another_session_holds_instead_of_waiting(receiver):
    make_endpoint(receiver.url)
    with connect(autocommit=True) as conn:
        provision(conn, 3)
    with connect() as holder:
        (held,) = holder.execute("SELECT id FROM webhook_deliveries ORDER BY event_seq LIMIT 1 FOR UPDATE").fetchone()
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '3s'")  # a claim that waited would fail here, not hang
        result = deliver()
        assert (result.claimed, result.delivered) == (2, 2)
        holder.rollback()
    assert WebhookDelivery.objects.get(pk=held).status == DeliveryStatus.PENDING


# An answer or a URL that would stop every run that claims its delivery, for every endpoint


@pytest.mark.parametrize("status", [200, 500])
def test_a_nul_byte_in_an_answer_is_recorded_not_a_crash(receiver, status):
    make_endpoint(receiver.url)
    receiver.status = status
    receiver.body = b"ok\x00bye"
    with connect(autocommit=True) as conn:
        provision(conn, 2)
    result = deliver()
    assert result.claimed == 2
    assert all("\ufffd" in d.http_response_body_excerpt for d in WebhookDelivery.objects.all())


def test_a_url_httpx_cannot_request_fails_its_own_deliveries_only(receiver):
    make_endpoint(receiver.url)
    bad, _ = make_endpoint(receiver.url)
    WebhookSubscription.objects.filter(pk=bad.pk).update(url="https://xn--localhost-/")  # saved before the check
    with connect(autocommit=True) as conn:
        provision(conn, 2)
    result = deliver()
    assert (result.delivered, result.retrying) == (2, 2)
    assert "cannot be requested" in WebhookDelivery.objects.filter(subscription=bad).first().http_response_body_excerpt


def test_an_endpoint_whose_secret_does_not_decrypt_fails_alone(receiver, webhook_settings):
    make_endpoint(receiver.url)
    stranded, _ = make_endpoint(receiver.url)
    WebhookSubscription.objects.filter(pk=stranded.pk).update(secret_key_id="gone")
    with connect(autocommit=True) as conn:
        provision(conn, 2)
    result = deliver()
    assert (result.delivered, result.retrying) == (2, 2)
    failed = WebhookDelivery.objects.filter(subscription=stranded).first()
    assert "cannot be decrypted" in failed.http_response_body_excerpt and failed.status == DeliveryStatus.FAILED
    assert len(receiver.received) == 2


def session_settings():
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('enable_sort'), current_setting('synchronous_commit')")
        return cursor.fetchone()


@pytest.mark.parametrize("fails", [False, True])
def test_a_run_claims_with_sorting_off_and_puts_the_sessions_settings_back(receiver, monkeypatch, fails):
    """A run turns sorting (and waiting for the WAL flush) off for its session, so its claims walk the
    due index as one statement each, and puts both back after, also when it stops on an error."""
    make_endpoint(receiver.url)
    with connect(autocommit=True) as conn:
        provision(conn, 3)
    seen = []
    real_claim = dispatch.claim_batch

    def claim_batch(size, *, sorting_off=False):
        seen.append((sorting_off, session_settings()))
        if fails and len(seen) == 2:
            raise KeyboardInterrupt
        return real_claim(size, sorting_off=sorting_off)

    monkeypatch.setattr(dispatch, "claim_batch", claim_batch)
    before = session_settings()
    assert before == ("on", "on")
    if fails:
        with pytest.raises(KeyboardInterrupt):
            deliver(batch_size=2)
    else:
        assert deliver(batch_size=2).delivered == 3
    assert seen[0] == (True, ("off", "off"))
    assert session_settings() == before
