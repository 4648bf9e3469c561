"""The accounts' retention rules: deprovisioned accounts, erased once the erasure delay has passed;
sign-ups never activated, deleted with their tokens; end users' sign-ins; the dashboard's daily counts;
and replaced node assignments, purged as purge_old_records does (accounts/nodes/purge.py)."""

import logging
from collections.abc import Iterator
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from accounts.daily_counts import DAYS_SHOWN
from accounts.erasure import accounts_erase_due
from accounts.models import Account, AccountDailyCount, AccountSession, AccountStatus
from accounts.nodes.models import Service
from accounts.nodes.purge import PurgeCounts, PurgeRunning, grace_text, purge_batches
from accounts.nodes.selectors import old_assignments_count
from accounts.selectors import abandoned_sign_ups_count
from accounts.services import accounts_delete_abandoned
from platform_events.quantities import quantity
from platform_events.retention import RetentionRule, queryset_rule

logger = logging.getLogger(__name__)


def deprovisioned_accounts() -> RetentionRule:
    """Accounts deprovisioned ERASURE_DELAY_DAYS ago, erased (accounts/erasure.py): first of the rules,
    so that the rows erasure blanks are blanked before other rules count what they keep."""
    days = settings.ERASURE_DELAY_DAYS
    before = timezone.now() - timedelta(days=days)
    return RetentionRule(
        name="erasures",
        keeps=f"deprovisioned accounts: {quantity(days, 'day')}, then erased (ERASURE_DELAY_DAYS)",
        count=lambda: Account.objects.filter(status=AccountStatus.DEPROVISIONED, deprovisioned_at__lt=before).count(),
        delete_batch=lambda size: accounts_erase_due(deprovisioned_before=before, batch_size=size),
    )


def abandoned_sign_ups() -> RetentionRule:
    days = settings.RETENTION_SIGN_UP_DAYS
    before = timezone.now() - timedelta(days=days)
    return RetentionRule(
        name="sign-ups",
        keeps=f"sign-ups never activated: {quantity(days, 'day')} after their last token",
        count=lambda: abandoned_sign_ups_count(created_before=before),
        delete_batch=lambda size: accounts_delete_abandoned(created_before=before, batch_size=size),
    )


def old_sign_ins() -> RetentionRule:
    """End users' sign-ins to the account pages (when, address, browser): RETENTION_SIGN_IN_DAYS, at
    least as long as a session lasts, so that only ended or expired ones go."""
    days = settings.RETENTION_SIGN_IN_DAYS
    return queryset_rule(
        "sign-ins",
        f"end users' sign-ins to the account pages: {quantity(days, 'day')}",
        AccountSession.objects.filter(signed_in_at__lt=timezone.now() - timedelta(days=days)),
    )


def old_daily_counts() -> RetentionRule:
    """The dashboard's counts of days that are over (accounts/daily_counts.py): as long as its chart
    shows a day."""
    return queryset_rule(
        "daily-counts",
        f"the dashboard's sign-ups and activations per day: {quantity(DAYS_SHOWN, 'day')}",
        AccountDailyCount.objects.filter(day__lt=timezone.localdate() - timedelta(days=DAYS_SHOWN)),
    )


def replaced_node_assignments() -> RetentionRule:
    """Node assignments replaced NODE_PURGE_GRACE_SECONDS ago, purged as ``manage.py purge_old_records``
    does (their node told first, rows on downed nodes left, a failed DELETE retried a grace period
    later), in batches of the cleanup's size. The run holds purge_old_records' lock from its first
    batch to its last: the command and the cleanup never purge at once (the later one skips)."""
    seconds = settings.NODE_PURGE_GRACE_SECONDS
    grace = timedelta(seconds=seconds)
    run: Iterator[PurgeCounts] | None = None

    def delete_batch(size: int) -> int:
        nonlocal run
        if run is None:
            run = purge_batches(node_secret=settings.NODE_SECRET, grace_period=grace, max_per_loop=size)
        try:
            # A batch may delete nothing (downed nodes, failures) while later ones still can: go on to
            # one that does; 0 only at the end, which is what stops the cleanup's loop.
            for batch in run:
                if batch.deleted:
                    return batch.deleted
        except PurgeRunning:
            logger.warning("cleanup: node-assignments skipped, purge_old_records is running")
        return 0

    keeps = f"replaced node assignments: {grace_text(grace)} after replacement, until their storage node is told"
    if not settings.NODE_SECRET:
        keeps += " (NODE_SECRET unset: those on up nodes are kept)"
    return RetentionRule(
        name="node-assignments",
        keeps=keeps,
        count=lambda: sum(
            old_assignments_count(service=name, grace_period=grace)
            for name in Service.objects.values_list("service", flat=True)
        ),
        delete_batch=delete_batch,
    )
