"""The mailroom's django-q2 task, as the worker finds it from its schedule, and the worker itself."""

import pydoc
import signal

import pytest
from django_q.models import Schedule

from accounts.services import account_provision
from lifecycle.factories import AccountFactory
from tests.smtp import SMTPServer
from tests.support import mailroom_env, start_manage, wait_for

pytestmark = pytest.mark.django_db


def test_the_task_the_schedule_names_drains(smtp_server):
    """The worker finds a schedule's task by its dotted path (pydoc.locate): a stale path would fail silently."""
    schedule = Schedule.objects.get(name="mailroom: drain")
    task = pydoc.locate(schedule.func)
    AccountFactory()
    assert "sent 1" in task()
    assert len(smtp_server.messages) == 1


@pytest.mark.django_db(transaction=True)
def test_the_django_q2_worker_drains_on_its_schedule(psql):
    from django.utils import timezone

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
