"""Accounts as SCIM Users (docs/scim.md, "The mapping"): a client's Users are the accounts it created
(accounts.ScimUser); each shows the userName and externalId the client gave it, the address as the
one, primary, work e-mail, and active for an active account; meta from the account's times, with a
version that changes whenever what is shown changes. Deprovisioned and erased accounts are gone for
SCIM: an identity provider deleted them."""

import hashlib
import json

from django.db.models import F, QuerySet
from django.db.models.functions import Coalesce, Greatest, Lower
from scim2_models import Context, Email, Meta, ResponseParameters, User

from accounts.models import Account, AccountStatus

SERVED = [AccountStatus.PROVISIONED, AccountStatus.ACTIVE, AccountStatus.SUSPENDED]


def scim_accounts(client) -> QuerySet[Account]:
    """The accounts that are ``client``'s Users, each with ``last_modified`` (its latest change of state
    or of what the client gave it), and their userName and address in lower case for the filters
    (lifecycle/scim/filters.py)."""
    return (
        Account.objects.filter(status__in=SERVED, scim_user__client=client)
        .select_related("scim_user")
        .alias(user_name_lower=Lower("scim_user__user_name"), email_lower=Lower("email"))
        .annotate(
            last_modified=Greatest(
                F("created_at"), Coalesce(F("status_changed_at"), F("created_at")), F("scim_user__updated_at")
            )
        )
    )


def user_of(account: Account, *, location: str) -> User:
    link = account.scim_user
    last_modified = getattr(account, "last_modified", None) or max(
        account.status_changed_at or account.created_at, link.updated_at
    )
    user = User(
        id=str(account.pk),
        external_id=link.external_id,
        user_name=link.user_name,
        active=account.status == AccountStatus.ACTIVE,
        emails=[Email(value=account.email, type="work", primary=True)],
    )
    user.meta = Meta(
        resource_type="User",
        created=account.created_at,
        last_modified=last_modified,
        location=location,
        version=version_of(user),
    )
    return user


def version_of(user: User) -> str:
    """A weak ETag of what ``user`` shows (its meta aside): it changes whenever that does."""
    shown = user.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
    shown.pop("meta", None)
    digest = hashlib.sha256(json.dumps(shown, sort_keys=True).encode()).hexdigest()[:16]
    return f'W/"{digest}"'


def user_json(user: User, parameters: ResponseParameters | None = None) -> dict:
    return user.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE, response_parameters=parameters)
