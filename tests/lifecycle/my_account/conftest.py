import pytest
from django.test import Client
from django.urls import reverse

from accounts.services import account_password_hash, account_set_password
from lifecycle.demo.factories import AccountFactory
from lifecycle.my_account.views import COOKIE
from tests.lifecycle.api.conftest import make_api  # noqa: F401  (the API clients the attacks use)
from tests.support import PASSWORD


def with_password(**traits):
    """An account (active unless told otherwise) whose password is tests.support.PASSWORD."""
    account = AccountFactory(**({"active": True} | traits))
    account_set_password(account=account, password_hash=account_password_hash(PASSWORD), actor=None)
    return account


@pytest.fixture
def person(db):
    return with_password(email="Pat.Person@example.com", login="patperson")


def sign_in(client: Client, identifier: str, password: str = PASSWORD, **headers):
    return client.post(reverse("account-sign-in"), {"identifier": identifier, "password": password}, **headers)


@pytest.fixture
def signed_in(person):
    """A browser signed in as ``person``."""
    client = Client()
    response = sign_in(client, person.login)
    assert response.status_code == 302 and client.cookies[COOKIE].value, response
    return client
