"""The audit trail's django-q2 task, as the worker finds it from its schedule."""

import pydoc
from datetime import date

import pytest
from django_q.models import Schedule

pytestmark = pytest.mark.django_db


def test_the_task_the_schedule_names_makes_this_month_and_the_next_partitions(sql):
    """The worker finds a schedule's task by its dotted path (pydoc.locate): a stale path would fail silently."""
    task = pydoc.locate(Schedule.objects.get(name="audit: ensure partitions").func)
    task()
    first = date.today().replace(day=1)
    assert sql("SELECT to_regclass(%s) IS NOT NULL", [f"audit_events_{first:%Y_%m}"]) == [(True,)]
    assert task() == "nothing to make"
