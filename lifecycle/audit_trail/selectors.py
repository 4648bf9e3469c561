"""Reads of the audit trail as people read it: the account each row is about, by login and e-mail,
and the rows of the accounts a login or e-mail names.

A row names its account by id: an ``account`` row by its resource id, a ``token`` row in its diff
(``coalesce(diff_after->>'account', diff_before->>'account')``, the expression
tokens/sql/0013_audit_by_account.sql indexes). Accounts are deleted (abandoned sign-ups, by hand);
their rows stay, and so do their login and e-mail, in the ``account.deleted`` row the deletion
wrote (accounts/sql/0009_history_rules.sql) and in the rows that carried them.
"""

from collections.abc import Iterable
from functools import reduce
from operator import or_

from django.db.models import (
    BigIntegerField,
    BooleanField,
    Case,
    ExpressionWrapper,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    TextField,
    Value,
    When,
)
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce, Concat, JSONObject, Lower

from accounts.models import Account, AccountStatus
from accounts.selectors import account_trail, accounts_by_identifier
from platform_events.audit.models import ActorType, AuditAction, AuditEvent, ResourceType

# A search names at most this many accounts (an address shared by many unverified, swept sign-ups):
# the newest. Their trails are one OR of index scans each.
NAMED_ACCOUNTS_LIMIT = 50

# The account a row is about, as the text it is stored as.
ACCOUNT_OF_ROW = Case(
    When(resource_type=ResourceType.ACCOUNT, then=F("resource_id")),
    When(resource_type=ResourceType.TOKEN, then=Coalesce(KT("diff_after__account"), KT("diff_before__account"))),
    output_field=TextField(),
)


# What names an erased account, which keeps neither login nor address: "#N (erased)", read after
# "account" ("account #N (erased)", as its page is titled).
ERASED_NAME = Concat(Value("#"), Cast("id", TextField()), Value(" (erased)"), output_field=TextField())
ERASED = ExpressionWrapper(Q(status=AccountStatus.ERASED), output_field=BooleanField())


def live_names() -> JSONObject:
    """An existing account's names, as with_accounts() and account_names() give them."""
    return JSONObject(login=Coalesce("login", ERASED_NAME), email="email", deleted=Value(False), erased=ERASED)


def with_accounts(queryset: QuerySet[AuditEvent]) -> QuerySet[AuditEvent]:
    """The rows, each with ``account_ref`` (the id of the account it is about, as text, or None) and
    ``account_names`` (``{"login", "email", "deleted"}``, or None when nothing names the account; an
    erased account is "#N (erased)", with ``erased`` true).

    Names come from the account itself; for a deleted one, from the row's own diff, else from the
    account's ``account.deleted`` row. Subqueries of the select list: the database runs them for the
    rows it returns (one page), each an index lookup.
    """
    # A stored id that is not a number (a row written by hand) names no account instead of failing the cast.
    account_id = Case(When(account_ref__regex=r"^[0-9]{1,18}$", then=Cast("account_ref", BigIntegerField())))
    live = Account.objects.filter(pk=OuterRef("account_id")).order_by().values(names=live_names())
    own_diff = Case(
        When(
            Q(resource_type=ResourceType.ACCOUNT) & (Q(diff_after__has_key="login") | Q(diff_before__has_key="login")),
            then=JSONObject(
                login=Coalesce(KT("diff_after__login"), KT("diff_before__login")),
                email=Coalesce(KT("diff_after__email"), KT("diff_before__email")),
                deleted=Value(True),
            ),
        )
    )
    deletion = AuditEvent.objects.filter(
        resource_type=ResourceType.ACCOUNT, resource_id=OuterRef("account_ref"), action=AuditAction.ACCOUNT_DELETED
    ).values(names=JSONObject(login=KT("diff_before__login"), email=KT("diff_before__email"), deleted=Value(True)))
    # One deletion per account: no ORDER BY, which would walk every deletion by time (the action index).
    deletion = deletion.order_by()
    return (
        queryset.annotate(account_ref=ACCOUNT_OF_ROW)
        .alias(account_id=account_id)
        # COALESCE stops at the first that is not null: the fallbacks run for deleted accounts only.
        .annotate(account_names=Coalesce(Subquery(live[:1]), own_diff, Subquery(deletion[:1])))
    )


def accounts_named(identifier: str) -> list[int]:
    """The accounts an e-mail (when it holds an @) or login names, ignoring case: live ones, and
    deleted ones by the login or e-mail their deletion kept (indexed: platform_events/sql/0009)."""
    identifier = identifier.strip()
    if not identifier or "\x00" in identifier:  # names nobody; PostgreSQL text cannot even hold a NUL
        return []
    live = accounts_by_identifier(identifier).values_list("pk", flat=True)
    key = "email" if "@" in identifier else "login"
    deleted = (
        AuditEvent.objects.filter(action=AuditAction.ACCOUNT_DELETED)
        .alias(name=Lower(KT(f"diff_before__{key}")))
        .filter(name=Lower(Value(identifier)))
        .values_list("resource_id", flat=True)
    )
    found = {
        *live[:NAMED_ACCOUNTS_LIMIT],
        *(int(pk) for pk in deleted[:NAMED_ACCOUNTS_LIMIT] if pk.isascii() and pk.isdigit()),
    }
    return sorted(found, reverse=True)[:NAMED_ACCOUNTS_LIMIT]


def accounts_trail(account_ids: Iterable[int]) -> QuerySet[AuditEvent]:
    """The rows about these accounts and their tokens (account_trail's, one OR per account)."""
    trails = [account_trail(account_id) for account_id in account_ids]
    return reduce(or_, trails) if trails else AuditEvent.objects.none()


def account_names(account_id: int) -> dict | None:
    """``{"login", "email", "deleted"}`` of one account, live or deleted, or None if nothing names it; an
    erased one is "#N (erased)", with ``erased`` true."""
    account = Account.objects.filter(pk=account_id).values(names=live_names()).first()
    if account:
        return account["names"]
    deletions = AuditEvent.objects.filter(
        resource_type=ResourceType.ACCOUNT, resource_id=str(account_id), action=AuditAction.ACCOUNT_DELETED
    ).values(login=KT("diff_before__login"), email=KT("diff_before__email"))
    deletion = next(iter(deletions.order_by()[:1]), None)  # one per account, found by the resource index
    return {**deletion, "deleted": True} if deletion else None


def latest_staff_actions(count: int) -> list[AuditEvent]:
    """The newest ``count`` rows staff users wrote, each with the names of the account it is about
    (with_accounts: one SELECT, a subquery per row returned). Users' rows less an account's own
    (an end user acting for itself): excluded, not staff: kept, so that rows written before actor ids
    had a kind show too."""
    rows = AuditEvent.objects.filter(actor_type=ActorType.USER).exclude(actor_id__startswith=f"{Account.audit_kind}:")
    return list(with_accounts(rows).order_by("-occurred_at")[:count])
