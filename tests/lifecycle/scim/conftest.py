import json
import secrets

import pytest
from django.test import Client

from platform_events.api.clients import api_client_create


class Scim:
    """A SCIM client of the test server: its key sent as a Bearer token, answers read as JSON."""

    def __init__(self, key: str):
        self.client = Client()
        self.key = key

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
        _, key = api_client_create(
            name=f"identity provider {secrets.token_hex(3)}", scopes=list(scopes or ["scim"]), actor=None
        )
        return Scim(key)

    return make


@pytest.fixture
def scim(make_scim):
    return make_scim("scim")
