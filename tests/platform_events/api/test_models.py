"""The scopes as the database lists them (platform_events/sql/0027_accounts_delete_scope.sql) and as
ApiScope does; and what taking accounts:delete out again does to the clients that hold it."""

from pathlib import Path

import pytest

from platform_events.api.clients import api_client_create
from platform_events.api.models import ApiClient, ApiScope
from tests.support import connect_as_owner

REVERSE = Path(__file__).parents[3] / "platform_events/sql/0027_accounts_delete_scope.reverse.sql"


@pytest.mark.django_db
def test_the_database_takes_every_scope_apiscope_names():
    client, _ = api_client_create(name="every", scopes=list(ApiScope.values), actor=None)
    assert sorted(ApiClient.objects.get(pk=client.pk).scopes) == sorted(ApiScope.values)


@pytest.mark.django_db(transaction=True)
def test_reversing_the_scope_takes_it_from_every_client_and_revokes_those_it_leaves_with_none():
    api_client_create(name="both", scopes=["accounts:read", "accounts:delete"], actor=None)
    api_client_create(name="alone", scopes=["accounts:delete"], actor=None)
    api_client_create(name="other", scopes=["sessions"], actor=None)
    with connect_as_owner() as owner:
        owner.execute(REVERSE.read_text())
        rows = {
            name: (scopes, revoked)
            for name, scopes, revoked in owner.execute("SELECT name, scopes, revoked_at IS NOT NULL FROM api_clients")
        }
        owner.rollback()
    assert rows == {
        "both": (["accounts:read"], False),
        "alone": (["accounts:read"], True),
        "other": (["sessions"], False),
    }
