"""Attacks by the runtime role on the API clients' rows (platform_events/sql/0013_api.sql): a revoked key
stays revoked, and a key is neither changed in place nor copied to another client."""

import pytest
from django.db import DatabaseError, transaction

from platform_events.api.clients import api_client_by_key, api_client_create, api_client_revoke

EVERY_SCOPE = ["accounts:read", "accounts:write", "sessions"]

pytestmark = pytest.mark.attack


@pytest.mark.django_db
def test_a_revoked_key_cannot_be_restored_by_deleting_and_reinserting_its_client(sql):
    """0013_api.sql: "A revoked key stays revoked ... a new key is a new client"; its trigger refuses
    UPDATE ... SET revoked_at = NULL. The attack: the runtime role (a leaked DATABASE_URL, an SQL
    injection) deletes the revoked row and inserts it again, OVERRIDING SYSTEM VALUE, with the same
    id, name, key_hash and key_prefix and more scopes, so that the leaked key would work again as the
    same client. It stays revoked."""
    client, key = api_client_create(name="leaky", scopes=["accounts:read"], actor=None)
    api_client_revoke(client=client, reason="the key was pasted in a chat", actor=None)
    assert api_client_by_key(key) is None
    (row,) = sql("SELECT id, name, key_prefix, key_hash, created_at FROM api_clients WHERE id = %s", [client.pk])
    try:
        with transaction.atomic():
            sql("DELETE FROM api_clients WHERE id = %s", [client.pk])
            sql(
                "INSERT INTO api_clients (id, name, key_prefix, key_hash, scopes, created_at) OVERRIDING SYSTEM VALUE"
                " VALUES (%s, %s, %s, %s, %s, %s)",
                [row[0], row[1], row[2], row[3], EVERY_SCOPE, row[4]],
            )
    except DatabaseError:
        pass  # refused: what should happen
    restored = api_client_by_key(key)
    assert restored is None, f"the revoked key works again, as client {restored.pk} with {restored.scopes}"


@pytest.mark.django_db
def test_held_the_runtime_role_cannot_restore_a_revoked_key_or_change_a_key_in_place(sql, refused):
    made, key = api_client_create(name="leaky", scopes=["accounts:read"], actor=None)
    other, _ = api_client_create(name="other", scopes=["accounts:read"], actor=None)
    refused(
        "UPDATE api_clients SET key_hash = sha256(%s::bytea) WHERE id = %s",
        [b"lc_mine", made.pk],
        match="cannot change",
    )
    refused("UPDATE api_clients SET key_prefix = 'lc_x' WHERE id = %s", [made.pk], match="cannot change")
    refused(
        "UPDATE api_clients SET key_hash = (SELECT key_hash FROM api_clients WHERE id = %s) WHERE id = %s",
        [made.pk, other.pk],
        match="cannot change",
    )
    refused(
        "INSERT INTO api_clients (name, key_prefix, key_hash, scopes) SELECT 'twin', 'lc_twin', key_hash, scopes"
        " FROM api_clients WHERE id = %s",
        [made.pk],
        match="api_clients_key_hash_key",
    )
    api_client_revoke(client=made, reason="leaked", actor=None)
    refused("UPDATE api_clients SET revoked_at = NULL, revoked_reason = NULL WHERE id = %s", [made.pk], match="revoked")
    refused("UPDATE api_clients SET revoked_at = 'infinity' WHERE id = %s", [made.pk], match="revoked")
    assert api_client_by_key(key) is None


@pytest.mark.django_db
def test_the_runtime_role_cannot_give_a_client_a_new_id(sql):
    """The trail names a client by id (api-client:7 acted). Its id is GENERATED ALWAYS, yet UPDATE ... SET
    id = DEFAULT gave it the next one: the rows its key writes afterwards would name another id than its
    creation's, and the audit trigger, which compares what it shows (not the id), saw no change.
    platform_events/sql/0020_kept_ids.sql refuses it."""
    leaky, _ = api_client_create(name="leaky", scopes=["accounts:read"], actor=None)
    with pytest.raises(DatabaseError, match="api_clients .* keeps its id"), transaction.atomic():
        sql("UPDATE api_clients SET id = DEFAULT WHERE id = %s", [leaky.pk])
