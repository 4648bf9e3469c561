"""django-q2 tasks (scheduled by platform_events/migrations/0002_partition_schedule.py)."""

from platform_events.partitions import ensure_partitions


def ensure_audit_partitions() -> str:
    made = ensure_partitions(months_ahead=3)
    return f"made {', '.join(made)}" if made else "nothing to make"
