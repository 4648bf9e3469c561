"""manage.py cleanup: one retention rule per table that grows (lifecycle/ops/retention.py), the periodic
cleanup of sign-ups that never activated among them."""

import io
import uuid
from datetime import timedelta

import pytest
from axes.models import AccessLog
from django.contrib.sessions.models import Session
from django.core.management import CommandError, call_command
from django.utils import timezone
from django_q.models import Schedule, Task

from accounts.models import Account, AccountDailyCount, AccountPassword, AccountSession, AccountStatus
from accounts.nodes import services as nodes
from accounts.nodes.selectors import assignment_records
from accounts.services import account_password_hash, account_set_password, account_suspend, account_unsuspend
from accounts.sessions import account_session_start
from lifecycle import tasks
from lifecycle.demo.factories import AccountFactory
from lifecycle.management.commands.cleanup import Command as Cleanup
from lifecycle.ops.retention import retention_rules
from platform_events.db.history import history_rewrite
from platform_events.db.locks import advisory_lock, lock_key
from platform_events.outbox.models import OutboxEvent
from tests.accounts.nodes.storage_node import LOOPBACK, StorageNode
from tokens.models import Job, JobType, Token
from tokens.services import token_resend_activation

pytestmark = pytest.mark.django_db

RULES = [
    "erasures",
    "sign-ups",
    "sign-ins",
    "daily-counts",
    "tokens",
    "mail-runs",
    "limits",
    "events",
    "processed-events",
    "idempotency-keys",
    "node-assignments",
    "sessions",
    "access-log",
    "tasks",
]


def age(account, days, sql):
    """Make a sign-up and its tokens ``days`` old (history the owner's key may rewrite)."""
    with history_rewrite():
        sql("UPDATE accounts SET created_at = now() - make_interval(days => %s) WHERE id = %s", [days, account.pk])
        sql(
            "UPDATE tokens SET created_at = now() - make_interval(days => %s),"
            " expires_at = now() - make_interval(days => %s) + interval '15 minutes' WHERE account = %s",
            [days, days, account.pk],
        )


def cleanup(*args):
    out = io.StringIO()
    call_command("cleanup", *args, stdout=out)
    return out.getvalue()


# Sign-ups


def test_only_old_never_activated_sign_ups_and_their_tokens_are_deleted(sql):
    old = AccountFactory()
    young = AccountFactory()
    active = AccountFactory(active=True)
    suspended = AccountFactory(suspended=True, was_activated=False)
    for account in (old, active, suspended):
        age(account, 8, sql)
    age(young, 6, sql)
    output = cleanup("--only", "sign-ups", "--batch-size", "1")
    assert "sign-ups 1." in output
    assert set(Account.objects.values_list("pk", flat=True)) == {young.pk, active.pk, suspended.pk}
    assert not Token.objects.filter(account_id=old.pk).exists()


def test_a_sign_up_that_asked_for_a_new_code_recently_is_kept(sql):
    account = AccountFactory()
    age(account, 30, sql)
    token_resend_activation(account=account, actor=None)
    assert "sign-ups 0" in cleanup("--only", "sign-ups")
    assert Account.objects.filter(pk=account.pk).exists()


def test_a_sign_up_staff_unsuspended_recently_is_kept(sql):
    """A never-activated account that staff unsuspend goes back to provisioned: its old token alone
    would make it "abandoned" the next night."""
    account = AccountFactory()
    age(account, 30, sql)
    account_unsuspend(account=account_suspend(account=account, actor=None), actor=None)
    assert "sign-ups 0" in cleanup("--only", "sign-ups")
    assert Account.objects.get(pk=account.pk).status == AccountStatus.PROVISIONED


def test_each_deleted_sign_up_is_audited_with_its_reason(sql):
    old = [AccountFactory(), AccountFactory()]
    for account in old:
        age(account, 30, sql)
    cleanup("--only", "sign-ups")
    rows = sql("SELECT resource_id, reason FROM audit_events WHERE action = 'account.deleted' ORDER BY resource_id")
    assert [resource for resource, _ in rows] == sorted(str(account.pk) for account in old)
    assert all(reason.startswith("abandoned sign-up") for _, reason in rows)


def test_the_sign_up_retention_comes_from_the_environment(sql, settings):
    settings.RETENTION_SIGN_UP_DAYS = 30
    account = AccountFactory()
    age(account, 8, sql)
    assert "sign-ups 0" in cleanup("--only", "sign-ups")
    age(account, 31, sql)
    assert "sign-ups 1" in cleanup("--only", "sign-ups")


# Node assignments (purge_old_records as a rule)


def test_node_assignments_replaced_past_the_grace_period_are_purged_after_their_node_is_told(settings):
    """The rule purges as purge_old_records does: a row replaced over NODE_PURGE_GRACE_SECONDS ago (a week)
    goes after its node answered the signed DELETE; one replaced less long ago, and the live ones, stay."""
    settings.NODE_SECRET = "SECRET"
    settings.NODE_ALLOWED_NETWORKS = (LOOPBACK,)  # where the test's node listens
    long_ago = timezone.now() - timedelta(days=10)
    with StorageNode(secret="SECRET") as node:
        nodes.service_add(service="sync-1.5", pattern="{node}/1.5/{uid}")
        nodes.node_add(service="sync-1.5", node=node.url, capacity=10, actor=None)
        accounts = {days: AccountFactory() for days in (8, 6)}
        for days, account in accounts.items():
            nodes.assignment_allocate(service="sync-1.5", account_id=account.pk, client_state="aa", created_at=long_ago)
            nodes.assignments_replace(
                service="sync-1.5", account_id=account.pk, at=timezone.now() - timedelta(days=days)
            )
            nodes.assignment_current(service="sync-1.5", account_id=account.pk)  # a new live row, same keys
        assert "node-assignments: would delete 1 (keeps replaced node assignments: 7 days" in cleanup("--dry-run")
        output = cleanup("--only", "node-assignments", "--batch-size", "1")
    assert "node-assignments: 1 deleted so far" in output and "node-assignments 1." in output
    assert [(request.method, request.claims["fxa_uid"]) for request in node.requests] == [
        ("DELETE", str(accounts[8].pk))
    ]
    remaining = {
        days: assignment_records(service="sync-1.5", account_id=account.pk) for days, account in accounts.items()
    }
    assert [len(remaining[8]), len(remaining[6])] == [1, 2]
    assert remaining[8][0].replaced_at is None


def test_node_assignments_rule_skips_while_purge_old_records_runs(settings, psql):
    """While purge_old_records holds its lock, the cleanup's rule deletes nothing and the cleanup goes on."""
    settings.NODE_SECRET = "SECRET"
    nodes.service_add(service="sync-1.5")
    nodes.node_add(service="sync-1.5", node="https://node1", capacity=10, actor=None)
    account = AccountFactory()
    nodes.assignment_allocate(service="sync-1.5", account_id=account.pk, created_at=timezone.now() - timedelta(days=9))
    nodes.assignments_replace(service="sync-1.5", account_id=account.pk, at=timezone.now() - timedelta(days=8))
    psql.execute("SELECT pg_advisory_lock(%s)", [lock_key("purge_old_records")])
    try:
        output = cleanup("--only", "node-assignments", "--only", "limits")
    finally:
        psql.execute("SELECT pg_advisory_unlock_all()")
    assert "Deleted: limits 0, node-assignments 0." in output
    assert len(assignment_records(service="sync-1.5", account_id=account.pk)) == 1


# Tokens and mail runs


def test_tokens_expired_past_the_retention_are_deleted_and_audited(sql):
    old, recent = AccountFactory(active=True), AccountFactory(active=True)
    age(old, 91, sql)
    age(recent, 89, sql)
    live = AccountFactory()  # its activation token is live
    assert "tokens 1" in cleanup("--only", "tokens")
    assert not Token.objects.filter(account_id=old.pk).exists()
    assert Token.objects.filter(account_id=recent.pk).count() == 1
    assert Token.objects.filter(account_id=live.pk).count() == 1
    assert Account.objects.filter(pk=old.pk).exists()  # the account stays
    (reason,) = sql("SELECT reason FROM audit_events WHERE action = 'token.deleted'")[0]
    assert reason == "retention: expired more than 90 days ago"


def test_mail_runs_finished_past_the_retention_are_deleted_unfinished_ones_kept():
    long_ago = timezone.now() - timedelta(days=31)
    old = Job.objects.create(job_type=JobType.MAILROOM, started_at=long_ago, finished_at=long_ago)
    stopped = Job.objects.create(job_type=JobType.MAILROOM, started_at=long_ago)  # closed by the next drain
    recent = Job.objects.create(job_type=JobType.MAILROOM, finished_at=timezone.now() - timedelta(days=29))
    assert "mail-runs 1" in cleanup("--only", "mail-runs")
    assert set(Job.objects.values_list("pk", flat=True)) == {stopped.pk, recent.pk}
    assert not Job.objects.filter(pk=old.pk).exists()


# Rate limits


def test_rate_limit_windows_ended_over_a_day_ago_are_deleted_current_and_recent_ones_kept(sql):
    """Yesterday's counts stay for a look; older windows go."""
    for bucket, ended_hours_ago in [("old", 25), ("recent", 23), ("current", -1)]:
        sql(
            "INSERT INTO rate_limits (bucket, window_start, window_end, hits)"
            " VALUES (%s, now() - make_interval(hours => %s + 1), now() - make_interval(hours => %s), 3)",
            [f"{bucket}:{'0' * 64}", ended_hours_ago, ended_hours_ago],
        )
    assert "limits 1" in cleanup("--only", "limits")
    assert sorted(bucket.split(":")[0] for (bucket,) in sql("SELECT bucket FROM rate_limits")) == ["current", "recent"]


# The libraries' tables


def test_expired_sessions_old_access_log_and_old_task_results_are_deleted():
    now = timezone.now()
    Session.objects.create(session_key="expired", session_data="", expire_date=now - timedelta(seconds=1))
    Session.objects.create(session_key="live", session_data="", expire_date=now + timedelta(days=1))
    for days in (91, 89):
        log = AccessLog.objects.create(username="support1", ip_address="127.0.0.1", user_agent="x")
        AccessLog.objects.filter(pk=log.pk).update(attempt_time=now - timedelta(days=days))
    for days in (31, 29):
        Task.objects.create(
            id=uuid.uuid4().hex,
            name=f"t{days}",
            func="f",
            started=now - timedelta(days=days),
            stopped=now - timedelta(days=days),
            success=True,
        )
    output = cleanup("--only", "sessions", "--only", "access-log", "--only", "tasks")
    assert "sessions 1, access-log 1, tasks 1." in output
    assert list(Session.objects.values_list("session_key", flat=True)) == ["live"]
    assert AccessLog.objects.count() == 1 and Task.objects.get().name == "t29"


def test_sign_ins_older_than_the_retention_are_deleted_and_newer_ones_kept(sql, settings):
    settings.RETENTION_SIGN_IN_DAYS = 90
    account = AccountFactory(active=True)
    account_set_password(account=account, password_hash=account_password_hash("a pass phrase 1"), actor=None)
    set_at = AccountPassword.objects.get(account=account).changed_at
    old, recent = (
        account_session_start(account=account, password_changed_at=set_at, client_address=None, user_agent="x").session
        for _ in range(2)
    )
    with history_rewrite():
        sql(
            "UPDATE account_sessions SET signed_in_at = now() - interval '91 days',"
            " expires_at = now() - interval '90 days' WHERE id = %s",
            [old.pk],
        )
        sql("UPDATE account_sessions SET signed_in_at = now() - interval '89 days' WHERE id = %s", [recent.pk])
    assert "sign-ins 1." in cleanup("--only", "sign-ins")
    assert list(AccountSession.objects.values_list("pk", flat=True)) == [recent.pk]


def test_the_daily_counts_rule_deletes_days_the_dashboard_no_longer_shows():
    """The chart shows 30 days: a kept day older than that goes, the 30th day back stays."""
    today = timezone.localdate()
    for days_ago in (31, 30):
        AccountDailyCount.objects.create(zone="UTC", day=today - timedelta(days=days_ago), signups=1, activations=0)
    assert "daily-counts 1." in cleanup("--only", "daily-counts")
    assert list(AccountDailyCount.objects.values_list("day", flat=True)) == [today - timedelta(days=30)]


# The command


def test_dry_run_counts_each_rule_and_deletes_nothing(sql):
    for account in AccountFactory.create_batch(3):
        age(account, 8, sql)
    output = cleanup("--dry-run")
    assert "sign-ups: would delete 3 (keeps sign-ups never activated: 7 days after their last token)" in output
    assert [line.split(":")[0] for line in output.splitlines()] == RULES
    assert Account.objects.count() == 3


def test_a_period_of_one_day_is_said_in_the_singular(settings):
    """A rule kept for 1 day says "1 day", not "1 days"."""
    settings.RETENTION_SIGN_UP_DAYS = settings.RETENTION_TOKEN_DAYS = settings.RETENTION_ACCESS_LOG_DAYS = 1
    settings.API_IDEMPOTENCY_HOURS = 1
    output = cleanup("--dry-run")
    assert "(keeps sign-ups never activated: 1 day after their last token)" in output
    assert "(keeps tokens: 1 day after they expired)" in output
    assert "(keeps staff log-ins and log-outs (django-axes): 1 day)" in output
    assert "(keeps the client API's idempotency keys: 1 hour)" in output
    assert " 1 days" not in output and " 1 hours" not in output


def test_progress_is_reported_per_batch(sql):
    for account in AccountFactory.create_batch(3):
        age(account, 8, sql)
    output = cleanup("--only", "sign-ups", "--batch-size", "2")
    assert "sign-ups: 2 deleted so far" in output and "sign-ups: 3 deleted so far" in output


def test_the_help_names_every_rule_with_what_it_keeps():
    """cleanup --help lists every rule of the registry, by the name --only takes, with what it keeps."""
    described = " ".join(Cleanup().create_parser("manage.py", "cleanup").format_help().split())
    assert [rule.name for rule in retention_rules()] == RULES
    for rule in retention_rules():
        assert f"{rule.name}: keeps {rule.keeps}" in described


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--batch-size", "0"], "between 1 and 100000"),
        (["--batch-size", "99999999999999999999"], "between 1 and 100000"),
        (["--only", "audit"], "no rule named audit; the rules are erasures, sign-ups, sign-ins, daily-counts, tokens"),
    ],
)
def test_bad_arguments_are_refused(args, message):
    with pytest.raises(CommandError, match=message):
        cleanup(*args)


@pytest.mark.django_db(transaction=True)
def test_a_second_cleanup_does_not_start_while_one_runs(psql):
    psql.execute("SELECT pg_advisory_lock(%s)", [lock_key("cleanup")])
    try:
        with pytest.raises(CommandError, match="Another cleanup is running"):
            cleanup()
        assert tasks.cleanup() == "another cleanup is running; this one did nothing"
    finally:
        psql.execute("SELECT pg_advisory_unlock_all()")
    with advisory_lock("cleanup") as acquired:
        assert acquired


def test_the_worker_runs_it_daily(sql):
    schedule = Schedule.objects.get(name="cleanup: retention rules")
    assert (schedule.func, schedule.schedule_type, schedule.repeats) == ("lifecycle.tasks.cleanup", "D", -1)
    account = AccountFactory()
    age(account, 8, sql)
    assert tasks.cleanup().startswith("Deleted: erasures 0, sign-ups 1, sign-ins 0, daily-counts 0, tokens 0,")


# Outbox events, their deliveries, and the consumers' records (RETENTION_EVENT_DAYS: 30 days)


@pytest.mark.django_db(transaction=True)
def test_old_events_go_with_their_finished_deliveries_but_an_event_still_due_stays():
    from tests.support import connect, connect_as_owner, rewriting_history

    with connect_as_owner(autocommit=True) as owner:
        (endpoint,) = owner.execute(
            "INSERT INTO webhook_subscriptions (owner_id, url, events, secret_encrypted, secret_key_id)"
            " VALUES ('partner', 'https://hooks.example.com/', '{account.created}', '\\x00', 'k1') RETURNING id"
        ).fetchone()
        events = {}
        for name, days, status in [
            ("old-done", 31, "DELIVERED"),
            ("old-due", 31, "FAILED"),
            ("young", 29, "DELIVERED"),
            ("old-unrecorded", 31, "DELIVERED"),  # delivered, but the consumer group has not handled it
        ]:
            (events[name],) = owner.execute(
                "INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, created_at)"
                " VALUES ('account', %s, 'account.created', '{\"type\": 1, \"timestamp\": 1, \"data\": {}}',"
                " now() - make_interval(days => %s)) RETURNING id",
                [name, days],
            ).fetchone()
            owner.execute(
                "INSERT INTO webhook_deliveries (subscription_id, event_id, event_seq, ordering_key, status)"
                " SELECT %s, id, seq, 'account:' || aggregate_id, %s FROM outbox_events WHERE id = %s",
                [endpoint, status, events[name]],
            )
        # A consumer group recorded the others when they came: the old event an endpoint is still due
        # stays, and so does its record (without it the group would handle the event again).
        owner.execute("SELECT outbox_consumer_register('g', ARRAY['account.created'])")
        with owner.transaction():
            rewriting_history(owner)  # records dated in the past
            owner.execute(
                "INSERT INTO processed_events (consumer_group, event_id, processed_at)"
                " SELECT 'g', id, created_at FROM outbox_events WHERE id <> %s",
                [events["old-unrecorded"]],
            )
    assert "events 1, processed-events 1" in cleanup(
        "--only", "events", "--only", "processed-events", "--batch-size", "1"
    )
    with connect(autocommit=True) as conn:
        kept = {row[0] for row in conn.execute("SELECT id FROM outbox_events")}
        assert kept == {events["old-due"], events["young"], events["old-unrecorded"]}
        assert conn.execute("SELECT count(*) FROM webhook_deliveries").fetchone() == (3,)
        assert conn.execute("SELECT count(*) FROM processed_events").fetchone() == (2,)
        assert conn.execute("SELECT 1 FROM processed_events WHERE event_id = %s", [events["old-due"]]).fetchone()


@pytest.mark.django_db(transaction=True)
def test_cleanup_keeps_an_old_event_kafka_has_not_had_and_deletes_a_published_one_with_its_publication():
    from platform_events.kafka.selectors import publication_of
    from tests.platform_events.kafka.test_selectors import claim_and_publish, start_stream
    from tests.platform_events.outbox.test_runtime_rules import age_events

    start_stream()
    AccountFactory.create_batch(2)
    published, waiting = OutboxEvent.objects.order_by("seq")
    claim_and_publish([published.id])
    age_events(31)
    assert "events: would delete 1 " in cleanup("--only", "events", "--dry-run")
    assert "events 1" in cleanup("--only", "events")
    assert list(OutboxEvent.objects.values_list("id", flat=True)) == [waiting.id]
    assert publication_of(published.id) is None  # gone with its event
    assert publication_of(waiting.id).status == "PENDING"
    assert "events 0" in cleanup("--only", "events")  # however often it runs


def test_expired_idempotency_keys_are_deleted_and_live_ones_kept(sql):
    from platform_events.api.clients import api_client_create

    client, _ = api_client_create(name="billing", scopes=["accounts:write"], actor=None)
    sql(
        "INSERT INTO idempotency_keys (client_id, key, request_hash, response_status, response_body, expires_at)"
        " SELECT %s, repeat(k, 32), repeat('a', 64), 201, '{}', now() + make_interval(hours => h)"
        " FROM (VALUES ('a', -1), ('b', -30), ('c', 1)) AS keys (k, h)",
        [client.pk],
    )
    assert "idempotency-keys 2" in cleanup("--only", "idempotency-keys", "--batch-size", "1")
    assert sql("SELECT left(key, 1) FROM idempotency_keys") == [("c",)]


def test_the_erasures_rule_erases_accounts_deprovisioned_before_the_delay(settings, sql):
    settings.ERASURE_DELAY_DAYS = 30
    due, recent = AccountFactory(deprovisioned=True), AccountFactory(deprovisioned=True)
    with history_rewrite():
        sql("UPDATE accounts SET deprovisioned_at = now() - interval '31 days' WHERE id = %s", [due.pk])
    assert "erasures: would delete 1 (keeps deprovisioned accounts: 30 days, then erased" in cleanup("--dry-run")
    assert "erasures 1" in cleanup("--only", "erasures")
    statuses = dict(Account.objects.filter(pk__in=[due.pk, recent.pk]).values_list("pk", "status"))
    assert statuses == {due.pk: "erased", recent.pk: "deprovisioned"}
