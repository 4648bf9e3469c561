"""The audit trail's monthly partitions, made ahead by ``migrate``, a command and a daily schedule
(no pg_partman).

Making a partition locks audit_events against writers for a moment (platform_events/sql/
0007_partition_upkeep.sql): they wait, never fail. It waits at most 5 s (lock_timeout) for a longer
transaction that has written audit rows, then gives up and changes nothing: ``PartitionsBusy``.
"""

from datetime import date

import psycopg.errors
from django.db import OperationalError, connections

from platform_events.db.locks import advisory_lock

PARTITIONS_LOCK = "ensure_audit_partitions"
# This month and the next three: made at migrate and daily, so the default partition stays empty.
MONTHS_AHEAD = 3


class PartitionsBusy(Exception):
    """A transaction holding audit_events outlasted the partition function's lock_timeout."""


def ensure_partitions(
    *, months_ahead: int = MONTHS_AHEAD, today: date | None = None, using: str = "default"
) -> list[str]:
    """Make the audit partitions of this month and the next ``months_ahead``; return those made."""
    first = (today or date.today()).replace(day=1)
    made = []
    # Two runs at once (the daily schedule and a person) would both find a month missing and both make
    # it, and the second would fail: the second waits for the lock, then finds the months made.
    with advisory_lock(PARTITIONS_LOCK, wait=True, using=using), connections[using].cursor() as cursor:
        for offset in range(months_ahead + 1):
            month = date(first.year + (first.month - 1 + offset) // 12, (first.month - 1 + offset) % 12 + 1, 1)
            try:
                cursor.execute("SELECT audit_ensure_partition(%s)", [month])
            except OperationalError as error:
                if not isinstance(error.__cause__, psycopg.errors.LockNotAvailable):
                    raise
                raise PartitionsBusy(
                    f"audit_events_{month:%Y_%m} was not made: a transaction that wrote audit rows held the table"
                    f" for over 5 s (made so far: {', '.join(made) or 'none'}). Run it again later."
                ) from None
            if cursor.fetchone()[0]:
                made.append(f"audit_events_{month:%Y_%m}")
    return made
