from datetime import datetime

from django.db import connection
from django.db.models import Q, QuerySet, Value
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Coalesce, Lower

from accounts.models import Account
from platform_events.models import AuditAction, AuditEvent, ResourceType


def accounts_by_identifier(identifier: str) -> QuerySet[Account]:
    """Accounts whose e-mail (when ``identifier`` holds an @) or else login is ``identifier``, ignoring case.

    Logins cannot hold an @ (accounts/sql/0007_address_rules.sql), so an identifier is one or the
    other, never both: a login that looked like someone's address once sent their recovery e-mail to
    the login's owner. Both sides go through the database's lower(), the expression the indexes are
    built on.
    """
    identifier = identifier.strip()
    if "\x00" in identifier:  # names nobody; PostgreSQL text cannot even hold it (a DataError)
        return Account.objects.none()
    wanted = Lower(Value(identifier))
    if "@" in identifier:
        return Account.objects.alias(email_lower=Lower("email")).filter(email_lower=wanted)
    return Account.objects.alias(login_lower=Lower("login")).filter(login_lower=wanted)


def account_trail(account_id: int) -> QuerySet[AuditEvent]:
    """The audit rows about one account: its own and its tokens' (which name the account in their
    diff, tokens/sql/0013_audit_by_account.sql: the expression below is that index's, so both halves
    of the OR read an index)."""
    named = str(account_id)
    token_account = Coalesce(KeyTextTransform("account", "diff_after"), KeyTextTransform("account", "diff_before"))
    return AuditEvent.objects.alias(token_account=token_account).filter(
        Q(resource_type=ResourceType.ACCOUNT, resource_id=named)
        | Q(resource_type=ResourceType.TOKEN, token_account=named)
    )


def account_suspension(account_id: int) -> AuditEvent | None:
    """The audit row of the account's latest suspension (who, when, why), if the trail holds one."""
    rows = AuditEvent.objects.filter(
        resource_type=ResourceType.ACCOUNT, resource_id=str(account_id), action=AuditAction.ACCOUNT_SUSPENDED
    )
    return rows.order_by("-occurred_at").first()


def email_is_claimed(email: str) -> bool:
    """Whether an activated account holds this address (seed 003's claim), ignoring case."""
    return (
        Account.objects.alias(email_lower=Lower("email"))
        .filter(email_lower=Lower(Value(email.strip())), activated_at__isnull=False)
        .exists()
    )


def accounts_search(queryset: QuerySet[Account], term: str) -> QuerySet[Account]:
    """Accounts whose e-mail or login starts with ``term``, ignoring case (index-backed prefix search;
    an exact value is a prefix of itself)."""
    prefix = term.strip().lower()
    if "\x00" in prefix:  # no column holds it; PostgreSQL text cannot even take it (a DataError)
        return queryset.none()
    return queryset.alias(login_lower=Lower("login"), email_lower=Lower("email")).filter(
        Q(email_lower__startswith=prefix) | Q(login_lower__startswith=prefix)
    )


# Seed 003's periodic cleanup: sign-ups never activated, with no token issued and not unsuspended by
# staff since the cut-off.
# ABANDONED is the condition on a row ``a`` of accounts.
ABANDONED = """
    a.status = 'provisioned' AND a.activated_at IS NULL AND a.created_at < %(before)s
    AND (a.unsuspended_at IS NULL OR a.unsuspended_at < %(before)s)
    AND NOT EXISTS (SELECT 1 FROM tokens t WHERE t.account = a.id AND t.created_at >= %(before)s)
"""
ABANDONED_SIGN_UPS = f"SELECT id FROM accounts a WHERE {ABANDONED}"


def abandoned_sign_ups_count(*, created_before: datetime) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM ({ABANDONED_SIGN_UPS}) abandoned", {"before": created_before})
        return cursor.fetchone()[0]


def sign_up_problems(*, email: str, login: str) -> dict[str, str]:
    """What the database would refuse in this e-mail and login (accounts/sql/0007_address_rules.sql,
    asked rather than repeated), by field, and whether the login is taken (logins are public names;
    whether an address is known never shows)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT accounts_email_problem(%s), accounts_login_problem(%s),"
            " EXISTS (SELECT 1 FROM accounts WHERE lower(login) = lower(%s))",
            [email, login, login],
        )
        email_problem, login_problem, taken = cursor.fetchone()
    problems = {"email": email_problem, "login": login_problem or ("login is taken" if taken else None)}
    return {field: problem for field, problem in problems.items() if problem}
