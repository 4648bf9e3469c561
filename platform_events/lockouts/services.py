"""Lifting a staff lock-out (django-axes).

After ``AXES_FAILURE_LIMIT`` failed sign-ins for one login from one address, django-axes refuses that
login from that address for ``AXES_COOLOFF_TIME``. Its records of failed sign-ins (``AccessAttempt``,
one per login, address and user agent) are the lock: unlocking a login deletes its records from every
address, as axes' own ``manage.py axes_reset_username`` does, so its next right password signs in.

An unlock is recorded in the admin's history (``django_admin_log``: who, when, which login from which
address) and in the log. Not in the audit trail: its rows are written only by triggers on the
product's own tables, and the runtime role may write it no other way (docs/security.md, "The database roles").
"""

import logging

from axes.models import AccessAttempt
from axes.utils import reset
from django.contrib.admin.models import DELETION, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import transaction

logger = logging.getLogger(__name__)


def staff_login_unlock(*, username: str, actor) -> int:
    """Lift every lock-out of the staff login ``username``, from every address: delete its failed
    sign-in records, each recorded as a deletion by ``actor`` (a staff user) in the admin's history.
    Returns how many records went; 0 when there was nothing to lift (nothing is recorded then)."""
    with transaction.atomic():
        attempts = list(AccessAttempt.objects.filter(username=username).order_by("pk"))
        if not attempts:
            return 0
        content_type = ContentType.objects.get_for_model(AccessAttempt)
        LogEntry.objects.bulk_create(
            LogEntry(
                user_id=actor.pk,
                content_type_id=content_type.pk,
                object_id=str(attempt.pk),
                object_repr=f"{username} from {attempt.ip_address}"[:200],
                action_flag=DELETION,
                change_message=f"Unlocked: {attempt.failures_since_start} failed sign-ins cleared.",
            )
            for attempt in attempts
        )
        removed = reset(username=username)
    logger.warning("Staff login %r unlocked by %s (%d failed sign-in records cleared).", username, actor, removed)
    return removed
