"""The django-q2 tasks and schedules of the mailroom."""

import importlib
import signal

import pytest

from accounts.services import account_provision
from lifecycle.factories import AccountFactory
from tests.smtp import SMTPServer
from tests.support import mailroom_env, start_manage, wait_for

pytestmark = pytest.mark.django_db
add_schedule = importlib.import_module("tokens.migrations.0003_mailroom_schedule").add_schedule


def test_the_worker_schedule_drains_every_minute():
    from django_q.models import Schedule

    schedule = Schedule.objects.get(name="mailroom: drain")
    assert (schedule.func, schedule.schedule_type, schedule.minutes, schedule.repeats) == (
        "tokens.tasks.drain_mailroom",
        Schedule.MINUTES,
        1,
        -1,
    )


def test_the_scheduled_task_drains(smtp_server):
    from tokens.tasks import drain_mailroom

    AccountFactory()
    assert "sent 1" in drain_mailroom()
    assert len(smtp_server.messages) == 1


@pytest.mark.django_db(transaction=True)
def test_the_django_q2_worker_drains_on_its_schedule(psql):
    from django.apps import apps
    from django.utils import timezone
    from django_q.models import Schedule

    # Transactional tests empty Django's tables, the migration's schedule row among them: put it back.
    add_schedule(apps, None)
    Schedule.objects.filter(name="mailroom: drain").update(next_run=timezone.now())
    smtp = SMTPServer().start()
    account_provision(email="jane@example.com", login="jane", actor=None)
    worker = start_manage("qcluster", Q_WORKERS="1", **mailroom_env(smtp))
    try:
        wait_for(lambda: smtp.messages, timeout=90, interval=0.2, message="the scheduled drain's e-mail")
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.communicate(timeout=60)
        smtp.stop()
    assert [m["To"] for m in smtp.messages] == ["jane@example.com"]
