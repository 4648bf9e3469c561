"""The audit trail's monthly partitions, made ahead by a command and a daily schedule (no pg_partman)."""

from datetime import date

from django.db import connection

from platform_events.db.locks import advisory_lock

PARTITIONS_LOCK = "ensure_audit_partitions"


def ensure_partitions(*, months_ahead: int, today: date | None = None) -> list[str]:
    """Make the audit partitions of this month and the next ``months_ahead``; return those made."""
    first = (today or date.today()).replace(day=1)
    made = []
    # Two runs at once (the daily schedule and a person) both found a month missing and both made it:
    # the second failed. The second now waits, then finds the months made.
    with advisory_lock(PARTITIONS_LOCK, wait=True), connection.cursor() as cursor:
        for offset in range(months_ahead + 1):
            month = date(first.year + (first.month - 1 + offset) // 12, (first.month - 1 + offset) % 12 + 1, 1)
            cursor.execute("SELECT audit_ensure_partition(%s)", [month])
            if cursor.fetchone()[0]:
                made.append(f"audit_events_{month:%Y_%m}")
    return made
