import secrets
from urllib.parse import urlencode

import pytest

from accounts.services import account_password_hash, account_set_password
from lifecycle.demo.factories import AccountFactory
from platform_events.api.clients import api_client_create
from platform_events.api.models import ApiScope

ADA_PASSWORD = "a long Passphrase 7"


@pytest.fixture
def ada(db):
    """An active account, ada / ada@example.com, whose password is ADA_PASSWORD (the password checks' subject)."""
    account = AccountFactory(active=True, login="ada", email="ada@example.com")
    account_set_password(account=account, password_hash=account_password_hash(ADA_PASSWORD), actor=None)
    return account


def new_key() -> str:
    """An Idempotency-Key: 43 characters of the allowed alphabet."""
    return secrets.token_urlsafe(32)


class Api:
    """Django's test client speaking to /api/v1/ as one API client."""

    def __init__(self, client, key: str):
        self.client = client
        self.key = key

    def headers(self, idempotency_key: str | None) -> dict:
        headers = {"Authorization": f"Bearer {self.key}"}
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        return headers

    def get(self, path: str, **params):
        return self.client.get(f"/api/v1{path}", params, headers=self.headers(None))

    def post(self, path: str, body: dict | None = None, *, key: str | None = "new", raw: bytes | None = None):
        key = new_key() if key == "new" else key
        data = raw if raw is not None else ({} if body is None else body)
        return self.client.post(f"/api/v1{path}", data, content_type="application/json", headers=self.headers(key))

    def delete(self, path: str, *, key: str | None = "new", **params):
        key = new_key() if key == "new" else key
        query = "?" + urlencode(params) if params else ""
        return self.client.delete(f"/api/v1{path}{query}", headers=self.headers(key))

    def put(self, path: str, body: dict | None = None, *, raw: bytes | None = None):
        data = raw if raw is not None else ({} if body is None else body)
        return self.client.put(f"/api/v1{path}", data, content_type="application/json", headers=self.headers(None))


@pytest.fixture
def make_api(db, client):
    def make(*scopes: str, name: str | None = None) -> Api:
        made, key = api_client_create(name=name or f"service {secrets.token_hex(3)}", scopes=list(scopes), actor=None)
        api = Api(client, key)
        api.api_client = made
        return api

    return make


@pytest.fixture
def api(make_api):
    """A client with every scope."""
    return make_api(*ApiScope.values, name="billing")
