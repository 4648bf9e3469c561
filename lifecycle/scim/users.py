"""Accounts as SCIM Users (docs/scim.md, "The mapping"): the id, the login as userName, the address
as the one, primary, work e-mail, active for an active account; meta from the account's times, with
a version that changes whenever what is shown changes. Deprovisioned and erased accounts are gone
for SCIM: an identity provider deleted them."""

import hashlib
import json

from django.db.models import F, QuerySet
from django.db.models.functions import Coalesce, Greatest, Lower
from scim2_models import Context, Email, Meta, ResponseParameters, User

from accounts.models import Account, AccountStatus

SERVED = [AccountStatus.PROVISIONED, AccountStatus.ACTIVE, AccountStatus.SUSPENDED]


def scim_accounts() -> QuerySet[Account]:
    """The accounts SCIM serves, each with ``last_modified`` (its latest change of state), and their login
    and address in lower case for the filters (lifecycle/scim/filters.py)."""
    return (
        Account.objects.filter(status__in=SERVED)
        .alias(login_lower=Lower("login"), email_lower=Lower("email"))
        .annotate(last_modified=Greatest(F("created_at"), Coalesce(F("status_changed_at"), F("created_at"))))
    )


def user_of(account: Account, *, location: str) -> User:
    last_modified = getattr(account, "last_modified", None) or account.status_changed_at or account.created_at
    user = User(
        id=str(account.pk),
        user_name=account.login,
        active=account.status == AccountStatus.ACTIVE,
        emails=[Email(value=account.email, type="work", primary=True)],
    )
    shown = json.dumps(user.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE), sort_keys=True)
    user.meta = Meta(
        resource_type="User",
        created=account.created_at,
        last_modified=last_modified,
        location=location,
        version=f'W/"{hashlib.sha256(shown.encode()).hexdigest()[:16]}"',
    )
    return user


def user_json(user: User, parameters: ResponseParameters | None = None) -> dict:
    return user.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE, response_parameters=parameters)
