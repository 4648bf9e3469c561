"""Accounts as SCIM Users (lifecycle/scim/users.py): whose Users a client sees, what a User shows, and its
version."""

import pytest

from accounts.models import Account, ScimUser
from accounts.services import account_deprovision, account_suspend
from lifecycle.demo.factories import AccountFactory
from lifecycle.scim.users import scim_accounts, user_of, version_of
from platform_events.api.clients import api_client_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def okta(db):
    return api_client_create(name="okta", scopes=["scim"], actor=None)[0]


def user_named(client, account, user_name="ann@corp.example", external_id=None):
    ScimUser.objects.create(account=account, client=client, user_name=user_name, external_id=external_id)
    return Account.objects.select_related("scim_user").get(pk=account.pk)


def test_a_clients_users_are_the_accounts_it_made_that_are_not_deprovisioned(okta):
    entra = api_client_create(name="entra", scopes=["scim"], actor=None)[0]
    mine = user_named(okta, AccountFactory(active=True))
    suspended = user_named(okta, AccountFactory(suspended=True), "cy@corp.example")
    deleted = user_named(okta, AccountFactory(active=True), "del@corp.example")
    account_deprovision(account=deleted, actor=okta)
    user_named(entra, AccountFactory(active=True), "theirs@corp.example")
    AccountFactory(active=True)  # nobody's User
    assert sorted(scim_accounts(okta).values_list("pk", flat=True)) == sorted([mine.pk, suspended.pk])


def test_a_user_shows_the_user_name_and_external_id_the_client_gave_and_the_address_as_primary(okta):
    account = user_named(okta, AccountFactory(active=True, login="ann", email="ann@example.com"), external_id="00u-1")
    user = user_of(account, location="https://lifecycle.example/scim/v2/Users/1")
    assert (user.id, user.user_name, user.external_id, user.active) == (
        str(account.pk),
        "ann@corp.example",
        "00u-1",
        True,
    )
    assert [(e.value, e.type, e.primary) for e in user.emails] == [("ann@example.com", "work", True)]
    assert user.meta.location == "https://lifecycle.example/scim/v2/Users/1"
    assert user.meta.version == version_of(user)


def test_the_version_follows_what_the_user_shows_and_only_that(okta):
    account = user_named(okta, AccountFactory(active=True))
    first = version_of(user_of(account, location="a"))
    assert version_of(user_of(account, location="b")) == first  # meta is not what it shows
    account_suspend(account=account, actor=None)
    account = Account.objects.select_related("scim_user").get(pk=account.pk)
    assert version_of(user_of(account, location="a")) != first
    ScimUser.objects.filter(account=account).update(external_id="x")
    changed = Account.objects.select_related("scim_user").get(pk=account.pk)
    assert version_of(user_of(changed, location="a")) != version_of(user_of(account, location="a"))
