"""django-q2 tasks (scheduled by platform_events/migrations/0002_partition_schedule.py and
0011_webhook_schedule.py)."""

from platform_events.audit.partitions import ensure_partitions
from platform_events.webhooks.dispatch import deliver


def ensure_audit_partitions() -> str:
    made = ensure_partitions()  # PartitionsBusy fails the task, shown in the admin; tomorrow's run retries
    return f"made {', '.join(made)}" if made else "nothing to make"


def deliver_webhooks() -> str:
    return deliver().summary()
