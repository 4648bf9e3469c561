"""The mail runs' retention rule (tokens/retention.py, ``manage.py cleanup --only mail-runs``): finished
runs are deleted RETENTION_MAIL_RUN_DAYS after they finished, in batches; unfinished ones stay until a
drain closes them."""

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from tokens.mailroom.drain import drain
from tokens.models import Job, JobType

pytestmark = pytest.mark.django_db


def cleanup(*args) -> str:
    out = io.StringIO()
    call_command("cleanup", "--only", "mail-runs", *args, stdout=out)
    return out.getvalue()


def run(*, days_ago: float, finished: bool = True) -> Job:
    when = timezone.now() - timedelta(days=days_ago)
    return Job.objects.create(
        job_type=JobType.MAILROOM, started_at=when, progress_at=when, finished_at=when if finished else None
    )


def test_old_runs_are_deleted_batch_by_batch_with_progress(settings):
    settings.RETENTION_MAIL_RUN_DAYS = 30
    for _ in range(5):
        run(days_ago=31)
    recent = run(days_ago=29)
    output = cleanup("--batch-size", "2")
    assert [line.strip() for line in output.splitlines()] == [
        "mail-runs: 2 deleted so far",
        "mail-runs: 4 deleted so far",
        "mail-runs: 5 deleted so far",
        "Deleted: mail-runs 5.",
    ]
    assert list(Job.objects.all()) == [recent]


def test_a_dry_run_counts_the_old_runs_and_deletes_none():
    old = [run(days_ago=40) for _ in range(3)]
    assert (
        cleanup("--dry-run").strip()
        == "mail-runs: would delete 3 (keeps mail runs (jobs): 30 days after they finished)"
    )
    assert Job.objects.count() == len(old)


def test_the_retention_comes_from_the_environment(settings):
    settings.RETENTION_MAIL_RUN_DAYS = 3
    run(days_ago=4)
    kept = run(days_ago=2)
    assert "mail-runs 1." in cleanup()
    assert list(Job.objects.all()) == [kept]


def test_a_run_killed_long_ago_stays_until_a_drain_closes_it_then_goes():
    """Unfinished, it may still be running; the next drain closes it at its last progress, which is
    old, so the next cleanup deletes it."""
    killed = run(days_ago=40, finished=False)
    assert "mail-runs 0." in cleanup()
    drain()
    killed.refresh_from_db()
    assert killed.finished_at == killed.progress_at
    assert "mail-runs 1." in cleanup()
    assert not Job.objects.exists()
