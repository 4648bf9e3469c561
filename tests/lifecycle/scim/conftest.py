import json
import secrets

import pytest
from django.test import Client

from accounts.models import ScimUser
from platform_events.api.clients import api_client_create


class Scim:
    """A SCIM client of the test server: its key sent as a Bearer token, answers read as JSON."""

    def __init__(self, key: str, api_client=None):
        self.client = Client()
        self.key = key
        self.api_client = api_client

    def owns(self, account, user_name: str | None = None, external_id: str | None = None):
        """Make ``account`` this client's User, as if the client had created it."""
        ScimUser.objects.create(
            account=account, client=self.api_client, user_name=user_name or account.login, external_id=external_id
        )
        return account

    def get(self, path: str, **params):
        return self.client.get(f"/scim/v2{path}", params, HTTP_AUTHORIZATION=f"Bearer {self.key}")

    def send(self, method: str, path: str, body=None, **headers):
        data = json.dumps(body) if not isinstance(body, (str, bytes)) else body
        call = getattr(self.client, method.lower())
        return call(
            f"/scim/v2{path}",
            data,
            content_type="application/scim+json",
            HTTP_AUTHORIZATION=f"Bearer {self.key}",
            **headers,
        )


@pytest.fixture
def make_scim(db):
    def make(*scopes: str) -> Scim:
        api_client, key = api_client_create(
            name=f"identity provider {secrets.token_hex(3)}", scopes=list(scopes or ["scim"]), actor=None
        )
        return Scim(key, api_client)

    return make


@pytest.fixture
def scim(make_scim):
    return make_scim("scim")
