"""Partition upkeep never fails a concurrent write.

On a fresh install the worker's first "audit: ensure partitions" makes this month's partition while
sign-ups may be running; done carelessly, each long-lived connection's next sign-up would fail with
"new row for relation audit_events_default violates partition constraint" (raised in an audit
trigger, so the whole sign-up would roll back)."""

import io
import threading
import time
from datetime import date

import psycopg
import pytest
from django.core.management import CommandError, call_command

from tests.support import connect, connect_as_owner, database_url_for_tests, manage

pytestmark = pytest.mark.django_db(transaction=True)

WRITERS = 4


@pytest.fixture
def month_without_partition():
    """This month as on a fresh install: its partition not made, its rows in the default partition.
    The partition the test database had is set aside, and put back afterwards."""
    name = f"audit_events_{date.today():%Y_%m}"
    with connect_as_owner(autocommit=True) as owner:
        if owner.execute("SELECT to_regclass(%s)", [name]).fetchone()[0]:
            owner.execute(f"ALTER TABLE audit_events DETACH PARTITION {name}")
            owner.execute(f"ALTER TABLE {name} RENAME TO {name}_aside")
        else:
            owner.execute(f"CREATE TABLE {name}_aside (LIKE audit_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)")
    yield name
    with connect_as_owner(autocommit=True) as owner:
        owner.execute(f"ALTER TABLE audit_events DETACH PARTITION {name}")
        owner.execute(f"DROP TABLE {name}")
        owner.execute(f"ALTER TABLE {name}_aside RENAME TO {name}")
        (attach,) = owner.execute(
            "SELECT format('ALTER TABLE audit_events ATTACH PARTITION %%I FOR VALUES FROM (%%L) TO (%%L)', %s::text,"
            " date_trunc('month', now())::date, (date_trunc('month', now()) + interval '1 month')::date)",
            [name],
        ).fetchone()
        owner.execute(attach)


class SignUps:
    """``WRITERS`` threads, each with one long-lived connection (as a web worker has), signing up
    accounts in a loop; each sign-up writes audit rows through the triggers."""

    def __init__(self):
        self.stop = threading.Event()
        self.done = [0] * WRITERS
        self.failures: list[str] = []
        self.threads = [threading.Thread(target=self.run, args=(n,)) for n in range(WRITERS)]

    def run(self, writer: int) -> None:
        with connect(autocommit=True) as conn:
            n = 0
            while not self.stop.is_set():
                n += 1
                try:
                    conn.execute(
                        "INSERT INTO accounts (email, login) VALUES (%s, %s)",
                        [f"w{writer}-{n}@example.com", f"w{writer}x{n}"],
                    )
                    self.done[writer] += 1
                except psycopg.Error as error:
                    self.failures.append(str(error).splitlines()[0])

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def wait_for(self, each: int, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        target = [count + each for count in self.done]
        while any(done < want for done, want in zip(self.done, target, strict=True)):
            assert time.monotonic() < deadline, f"writers stalled at {self.done}"
            time.sleep(0.01)

    def __exit__(self, *exc):
        self.stop.set()
        for thread in self.threads:
            thread.join(30)


def test_making_this_months_partition_fails_no_concurrent_sign_up(month_without_partition):
    name = month_without_partition
    with SignUps() as sign_ups:
        sign_ups.wait_for(5)
        call_command("ensure_audit_partitions", "--months-ahead", "0")
        sign_ups.wait_for(5)
    assert sign_ups.failures == []
    with connect_as_owner() as owner:
        (accounts,) = owner.execute("SELECT count(*) FROM accounts").fetchone()
        audited = owner.execute(
            "SELECT tableoid::regclass::text, count(*) FROM audit_events WHERE action = 'account.created' GROUP BY 1"
        ).fetchall()
    assert accounts == sum(sign_ups.done)
    # Every sign-up audited, and this month's rows all in this month's partition.
    assert audited == [(name, accounts)]


def test_migrate_makes_this_month_and_the_next_three(sql):
    """A fresh install writes no audit row into the default partition (the test database was made by
    this migrate, and running it again makes nothing new). Run as an operator runs it, in a process of
    its own: a test on the owner's alias would have Django empty every table afterwards."""
    first = date.today().replace(day=1)
    months = [date(first.year + (first.month - 1 + n) // 12, (first.month - 1 + n) % 12 + 1, 1) for n in range(4)]
    names = [f"audit_events_{month:%Y_%m}" for month in months]
    attached = {
        name
        for (name,) in sql(
            "SELECT inhrelid::regclass::text FROM pg_inherits WHERE inhparent = 'audit_events'::regclass"
        )
    }
    assert set(names) <= attached
    roles = {"DATABASE_URL": database_url_for_tests(), "DATABASE_OWNER_URL": database_url_for_tests("owner")}
    result = manage("migrate", "--no-input", **roles)
    assert result.returncode == 0, result.stderr
    assert "Made the audit partitions" not in result.stdout


def test_upkeep_gives_up_on_a_long_writer_and_changes_nothing(month_without_partition):
    """A transaction that wrote audit rows and stays open holds audit_events against the lock the
    upkeep needs: the upkeep waits 5 s (lock_timeout), then says so in one sentence; writers that
    queued behind it go on."""
    name = month_without_partition
    with connect() as long_writer:
        long_writer.execute("INSERT INTO accounts (email, login) VALUES ('long@example.com', 'long1')")
        with pytest.raises(CommandError, match=rf"^{name} was not made: a transaction that wrote audit rows held"):
            call_command("ensure_audit_partitions", "--months-ahead", "0")
        with connect(autocommit=True) as other:
            other.execute("INSERT INTO accounts (email, login) VALUES ('other@example.com', 'other1')")
            assert other.execute("SELECT to_regclass(%s)", [name]).fetchone() == (None,)
        long_writer.commit()
    call_command("ensure_audit_partitions", "--months-ahead", "0", stdout=io.StringIO())
