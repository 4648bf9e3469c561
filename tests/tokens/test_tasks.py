"""The mailroom's django-q2 task, as the worker finds it from its schedule, and the worker itself; the
public pages' queued requests through a database restart."""

import pydoc
import signal
import tempfile
from datetime import timedelta

import pytest
from django.db import DatabaseError, InterfaceError, OperationalError, connection
from django.db.models.functions import Now
from django_q.models import Schedule

from accounts.services import account_provision
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.models import AuditEvent
from tests.smtp import SMTPServer
from tests.support import mailroom_env, start_manage, wait_for
from tokens import tasks
from tokens.models import Token, TokenAction

pytestmark = pytest.mark.django_db

ORIGIN = {"actor_ip": "203.0.113.9", "request_id": "8d1f0c7e-4a51-4c55-9a3b-2f6d7c1e5b90"}


def test_the_task_the_schedule_names_drains(smtp_server):
    """The worker finds a schedule's task by its dotted path (pydoc.locate): a stale path would fail silently."""
    schedule = Schedule.objects.get(name="mailroom: drain")
    task = pydoc.locate(schedule.func)
    AccountFactory()
    assert "sent 1" in task()
    assert len(smtp_server.messages) == 1


@pytest.mark.django_db(transaction=True)
def test_the_django_q2_worker_drains_on_its_schedule(psql):
    """The product's cluster, as deployed, runs the product's drain schedule when it is due: the e-mail
    can come only from the scheduler (nothing else queues the drain here)."""
    # Due by the database's clock, and the only schedule due: the worker's one process has this to do.
    assert Schedule.objects.filter(name="mailroom: drain").update(next_run=Now() - timedelta(minutes=1)) == 1
    later = {
        pk: next_run for pk, next_run in Schedule.objects.exclude(name="mailroom: drain").values_list("pk", "next_run")
    }
    Schedule.objects.filter(pk__in=later).update(next_run=Now() + timedelta(days=1))
    smtp = SMTPServer().start()
    account_provision(email="jane@example.com", login="jane", actor=None)
    # The worker's output goes to a file: a pipe nobody reads while waiting would fill and stop it.
    output = tempfile.TemporaryFile(mode="w+")
    # The product's cluster, its scheduler called on the guard loop's first turn (the settings module says how).
    worker = start_manage(
        "qcluster",
        Q_WORKERS="1",
        DJANGO_SETTINGS_MODULE="tests.settings_scheduler_at_start",
        stdout=output,
        **mailroom_env(smtp),
    )
    try:
        # The cluster's scheduler finds the due schedule as it comes up; the timeout is a bound for a busy machine.
        wait_for(lambda: smtp.messages, timeout=180, interval=0.2, message="the scheduled drain's e-mail")
    except AssertionError as error:
        output.seek(0)
        sessions = psql.execute(
            "SELECT pid, usename, state, wait_event_type, wait_event, left(query, 200) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
        schedule = psql.execute(
            "SELECT next_run, now(), cluster, repeats FROM django_q_schedule WHERE name = 'mailroom: drain'"
        )
        raise AssertionError(
            f"{error}; the schedule: {schedule.fetchall()}; the database's other sessions: {sessions};"
            f" the worker said:\n{output.read()[-4000:]}"
        ) from None
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
        smtp.stop()
        for pk, next_run in later.items():
            Schedule.objects.filter(pk=pk).update(next_run=next_run)
    assert [m["To"] for m in smtp.messages] == ["jane@example.com"]


def drop_the_session(psql) -> None:
    """What a restart of PostgreSQL does to the worker's open connection: the server ends it."""
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    psql.execute("SELECT pg_terminate_backend(%s, 10000)", [pid])


@pytest.mark.django_db(transaction=True)
class TestAQueuedPublicRequestThroughADatabaseRestart:
    """The recovery page answered "check your e-mail" and queued the work: a restart between the two
    must not lose it (the soak test's restart meets this moment about once in two runs; django-q2 alone
    would run the task again only after Q_RETRY, 120 s)."""

    def test_the_request_is_carried_out_on_a_new_connection(self, psql):
        account = AccountFactory(active=True, login="jane")
        drop_the_session(psql)
        tasks.send_again("jane", TokenAction.PASSWORD_RECOVERY.value, ORIGIN)
        assert Token.objects.filter(account=account, action=TokenAction.PASSWORD_RECOVERY).count() == 1
        token = Token.objects.get(account=account, action=TokenAction.PASSWORD_RECOVERY)
        issued = AuditEvent.objects.get(action="token.issued", resource_id=str(token.pk))
        assert (issued.actor_ip, str(issued.request_id)) == (ORIGIN["actor_ip"], ORIGIN["request_id"])

    def test_a_sign_up_is_made_on_a_new_connection(self, psql):
        from accounts.models import Account
        from accounts.services import account_password_hash

        password_hash = account_password_hash("correct horse battery staple 7")
        drop_the_session(psql)
        tasks.sign_up("jane@example.com", "jane", password_hash, ORIGIN)
        assert Account.objects.filter(login="jane").exists()

    def test_it_gives_up_to_django_q2_after_half_the_worker_time_limit(self, psql, settings):
        settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": 0}
        AccountFactory(active=True, login="jane")
        drop_the_session(psql)
        with pytest.raises((OperationalError, InterfaceError)):
            tasks.send_again("jane", TokenAction.PASSWORD_RECOVERY.value, {})
        connection.close()
        assert not Token.objects.filter(action=TokenAction.PASSWORD_RECOVERY).exists()

    def test_a_query_the_database_refused_is_not_tried_again(self):
        AccountFactory(active=True, login="jane")
        with connection.cursor() as cursor:
            cursor.execute("SET default_transaction_read_only = on")  # gone with the session
        try:
            with pytest.raises(DatabaseError):  # a refusal, not an outage: a new session would hide it
                tasks.send_again("jane", TokenAction.PASSWORD_RECOVERY.value, {})
        finally:
            connection.close()
        assert not Token.objects.filter(action=TokenAction.PASSWORD_RECOVERY).exists()
