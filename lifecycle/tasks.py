"""django-q2 tasks (scheduled by lifecycle/migrations/0001_cleanup_schedule.py)."""

from lifecycle.ops.retention import apply_retention, retention_rules
from platform_events.db.locks import advisory_lock


def cleanup() -> str:
    with advisory_lock("cleanup") as acquired:
        if not acquired:
            return "another cleanup is running; this one did nothing"
        return apply_retention(retention_rules(), batch_size=1000)
