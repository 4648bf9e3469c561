"""SCIM writes at once (lifecycle/scim/provisioning.py), on separate connections, held so that they
really overlap: an identity provider's retry of a creation makes one User, and two changes from one
version make one change."""

import pytest
from scim2_models import Email, User

from accounts.models import Account, ScimUser
from lifecycle.scim.errors import ScimError
from lifecycle.scim.provisioning import scim_user_change, scim_user_create
from platform_events.api.clients import api_client_create
from tests.support import connect, in_threads, wait_until_blocked

pytestmark = pytest.mark.django_db(transaction=True)


def ann(email: str, **fields) -> User:
    return User(user_name="ann@example.com", emails=[Email(value=email, primary=True)], **fields)


def outcomes(results) -> list:
    return sorted(
        "made" if ok else f"{value.status} {value.scim_type}" if isinstance(value, ScimError) else repr(value)
        for ok, value in results
    )


def test_a_creation_sent_twice_at_once_makes_one_user_and_the_other_is_uniqueness():
    okta = api_client_create(name="okta", scopes=["scim"], actor=None)[0]
    with connect() as holder:
        # Both creations stop at their User's row until this lock goes: each has made its account by then.
        holder.execute("LOCK TABLE scim_users IN SHARE MODE")
        threads, results = in_threads(
            lambda: scim_user_create(client=okta, user=ann("ann@example.com")),
            lambda: scim_user_create(client=okta, user=ann("ann.lee@example.com")),
        )
        wait_until_blocked(holder, 2)
        holder.rollback()
    for thread in threads:
        thread.join()
    assert outcomes(results) == ["409 uniqueness", "made"]
    assert (Account.objects.count(), ScimUser.objects.count()) == (1, 1)


def test_two_changes_from_one_version_make_one_change_and_the_other_is_412():
    from lifecycle.scim.users import user_of, version_of

    okta = api_client_create(name="okta", scopes=["scim"], actor=None)[0]
    account = scim_user_create(client=okta, user=ann("ann@example.com", active=True))
    version = version_of(user_of(Account.objects.select_related("scim_user").get(pk=account.pk), location=""))

    def change(**fields):
        return lambda: scim_user_change(
            client=okta, account_id=account.pk, change=lambda user: user.model_copy(update=fields), if_match=version
        )

    with connect() as holder:
        holder.execute("SELECT 1 FROM accounts WHERE id = %s FOR UPDATE", [account.pk])
        threads, results = in_threads(change(active=False), change(external_id="00u-2"))
        wait_until_blocked(holder, 2)
        holder.rollback()
    for thread in threads:
        thread.join()
    assert outcomes(results) == ["412 None", "made"]
    account.refresh_from_db()
    link = ScimUser.objects.get(account=account)
    assert (account.status == "suspended") != (link.external_id == "00u-2")


def test_a_restoring_creation_sent_twice_at_once_restores_once_and_the_other_is_uniqueness():
    """Entra ID sends a creation again when it does not hear back. Two creations of a deleted User's
    userName at once: the first restores it; the second finds the account no longer deprovisioned
    once it holds its lock (a 500, NotDeprovisioned, before the account was locked too)."""
    from scim2_models import Email, User

    from lifecycle.scim.errors import ScimError
    from lifecycle.scim.provisioning import scim_user_create, scim_user_delete
    from platform_events.api.clients import api_client_create
    from tests.support import connect, in_threads, wait_until_blocked

    okta = api_client_create(name="okta", scopes=["scim"], actor=None)[0]
    ann = User(user_name="ann@example.com", emails=[Email(value="ann@example.com", primary=True)], active=True)
    account = scim_user_create(client=okta, user=ann)
    scim_user_delete(client=okta, account=account)
    with connect() as holder:
        holder.execute("SELECT 1 FROM scim_users WHERE account = %s FOR UPDATE", [account.pk])
        threads, results = in_threads(
            lambda: scim_user_create(client=okta, user=ann), lambda: scim_user_create(client=okta, user=ann)
        )
        wait_until_blocked(holder, 2)
        holder.rollback()
    for thread in threads:
        thread.join()
    outcomes = sorted(
        "made" if ok else f"{value.status} {value.scim_type}" if isinstance(value, ScimError) else repr(value)
        for ok, value in results
    )
    assert outcomes == ["409 uniqueness", "made"]
