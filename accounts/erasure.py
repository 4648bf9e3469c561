"""Erasure: the final end of a deprovisioned account (docs/rules.md, "Erasure").

The database does the work on its own tables in one call, account_erase() (accounts/sql/0024_erasure.sql),
as the owner: it cancels what is still due about the account, blanks every copy of its address and
login in the trail, the outbox and the stored API answers, deletes its tokens and password, and leaves
the row as "account #N (erased)". In the same transaction this module blanks what Django's own apps
and the rate limits keep, which SQL cannot read (django-q2's pickled tasks) or does not own: the
staff log-in records that name the address or login (people type addresses into the staff login),
the admin's log entries about the account, failed and queued tasks that carry them, and the
rate-limit buckets keyed by them.
"""

import json
import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import OperationalError, connection, transaction
from django.db.models import Q
from django_q.models import OrmQ, Task

from accounts.errors import NotDeprovisioned
from accounts.models import Account, AccountStatus
from platform_events.audit.context import audit_context
from platform_events.db.refusals import lifecycle_rules
from platform_events.limits.counters import key_digest

logger = logging.getLogger(__name__)

# A deadlock between an erasure and a consumption of a token issued a moment before is broken by
# PostgreSQL (one of the two is rolled back); the erasure is tried again this many times in all.
ATTEMPTS = 3

# The task that makes a new sign-up: a queued one is a new person's request for the address, made
# after the page answered; it runs (the address is free once erased) and is not dropped.
SIGN_UP_TASK = "tokens.tasks.sign_up"


def erasure_due(account: Account) -> datetime | None:
    """When the cleanup erases this deprovisioned account (ERASURE_DELAY_DAYS after its deprovisioning);
    None when it is not deprovisioned."""
    if account.status != AccountStatus.DEPROVISIONED or account.deprovisioned_at is None:
        return None
    return account.deprovisioned_at + timedelta(days=settings.ERASURE_DELAY_DAYS)


def account_erase(*, account: Account, actor, reason: str | None = None) -> dict[str, int] | None:
    """Erase ``account``, which must be deprovisioned (NotDeprovisioned otherwise); the audit row
    account.erased names ``actor`` and ``reason``. Returns what was done, as counts, or None when the
    account was already erased (a retry: nothing to do). ``account`` is refreshed."""
    if account.status not in (AccountStatus.DEPROVISIONED, AccountStatus.ERASED):
        raise NotDeprovisioned(
            f"accounts: account {account.pk} is not deprovisioned; only a deprovisioned account is erased",
            account_id=account.pk,
            state=account.status,
        )
    for attempt in range(1, ATTEMPTS + 1):
        try:
            with lifecycle_rules(), transaction.atomic(), audit_context(actor=actor, reason=reason):
                done = _erase(account.pk)
            break
        except OperationalError as error:
            if (
                getattr(error.__cause__, "sqlstate", None) != "40P01"
                or attempt == ATTEMPTS
                or connection.in_atomic_block
            ):
                raise
            logger.info("erasure of account %s: deadlock broken, trying again", account.pk)
    account.refresh_from_db()
    if done is not None:
        # The id only: what an operator replays after restoring a backup older than this (docs/production.md).
        logger.info("account %s erased", account.pk)
    return done


def accounts_erase_due(*, deprovisioned_before: datetime, batch_size: int) -> int:
    """Erase up to ``batch_size`` accounts deprovisioned before ``deprovisioned_before``, in one
    transaction, each audited as the cleanup's (the reason names the delay); rows another session
    holds are skipped. Returns how many were erased."""
    reason = f"deprovisioned before {deprovisioned_before:%Y-%m-%d %H:%M %Z}: the erasure delay has passed"
    with lifecycle_rules(), transaction.atomic(), audit_context(reason=reason):
        ids = list(
            Account.objects.select_for_update(skip_locked=True)
            .filter(status=AccountStatus.DEPROVISIONED, deprovisioned_at__lt=deprovisioned_before)
            .order_by("deprovisioned_at", "id")
            .values_list("id", flat=True)[:batch_size]
        )
        erased = [account_id for account_id in ids if _erase(account_id) is not None]
    for account_id in erased:
        logger.info("account %s erased", account_id)
    return len(erased)


def _erase(account_id: int) -> dict[str, int] | None:
    with connection.cursor() as cursor:
        # Only what no other account holds: a shared address is that account's too (accounts/sql/0024_erasure.sql).
        cursor.execute("SELECT account_erasure_owned(account_erasure_identifiers(%s), %s)", [account_id, account_id])
        (identifiers,) = cursor.fetchone()
        cursor.execute("SELECT account_erase(%s)::text", [account_id])
        (done,) = cursor.fetchone()
    if done is None:
        return None
    done = json.loads(done) | django_tables_blank(account_id=account_id, identifiers=identifiers or [])
    return done


def django_tables_blank(*, account_id: int, identifiers: list[str]) -> dict[str, int]:
    """Blank the copies of ``identifiers`` (lower case) that Django's apps and the rate limits keep;
    how many rows each lost or changed. Part of the erasure's transaction."""
    erased_name = f"account #{account_id} (erased)"
    addresses = [i for i in identifiers if "@" in i]

    # The staff log-in records (django-axes): any that names one of them, as typed or in the form data.
    typed = Q()
    for identifier in identifiers:
        typed |= Q(username__iexact=identifier)
    posted = Q()
    for address in addresses:
        posted |= Q(get_data__icontains=address) | Q(post_data__icontains=address)
    staff_log_ins = 0
    if identifiers:
        from axes.models import AccessAttempt, AccessFailureLog, AccessLog

        staff_log_ins += AccessAttempt.objects.filter(typed | posted).delete()[0]
        staff_log_ins += AccessFailureLog.objects.filter(typed).delete()[0]
        staff_log_ins += AccessLog.objects.filter(typed).delete()[0]

    # The admin's log: the entries about the account by their object, and any other whose name or
    # message quotes an address (a staff log-in unlocked: "ann@example.com from 192.0.2.1").
    account_type = ContentType.objects.get_for_model(Account)
    admin_log = LogEntry.objects.filter(content_type=account_type, object_id=str(account_id)).update(
        object_repr=erased_name, change_message=""
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE django_admin_log SET object_repr = erasure_scrub_text(object_repr, %(all)s),"
            " change_message = erasure_scrub_text(change_message, %(all)s)"
            " WHERE erasure_mentions(object_repr, %(addresses)s) OR erasure_mentions(change_message, %(addresses)s)",
            {"all": identifiers, "addresses": addresses},
        )
        admin_log += cursor.rowcount

    # django-q2: failed tasks kept with their arguments, and queued ones, that carry any of them.
    tasks = 0
    for task in Task.objects.filter(success=False).only("id", "args", "kwargs", "result").iterator():
        if _mentions((task.args, task.kwargs, task.result), identifiers):
            task.delete()
            tasks += 1
    for queued in OrmQ.objects.all().iterator():
        package = queued.task  # {"id": "*BadSignature"} for a package this key cannot read: not ours
        if package.get("func") != SIGN_UP_TASK and _mentions((package.get("args"), package.get("kwargs")), identifiers):
            queued.delete()
            tasks += 1

    # The rate-limit buckets keyed by them (a keyed digest of the key; the limit's name before it).
    digests = [key_digest(identifier) for identifier in identifiers]
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM rate_limits WHERE split_part(bucket, ':', 2) = ANY(%s)", [digests])
        limits = cursor.rowcount
    return {
        "staff_log_ins_deleted": staff_log_ins,
        "admin_log_blanked": admin_log,
        "tasks_deleted": tasks,
        "rate_limits_deleted": limits,
    }


def _mentions(values, identifiers: list[str]) -> bool:
    """Whether a string in ``values`` (a task's arguments and result, as Python objects) holds an
    address, or is a login (a login inside a longer word is someone else's text)."""
    if isinstance(values, str):
        text = values.strip().lower()
        return any(identifier in text if "@" in identifier else identifier == text for identifier in identifiers)
    if isinstance(values, dict):
        return _mentions(list(values.keys()), identifiers) or _mentions(list(values.values()), identifiers)
    if isinstance(values, (list, tuple, set, frozenset)):
        return any(_mentions(value, identifiers) for value in values)
    return _mentions(str(values), identifiers) if isinstance(values, BaseException) else False
