"""Attacks by the runtime role on the API clients' rows (platform_events/sql/0013_api.sql): a revoked key
stays revoked, and a key is neither changed in place nor copied to another client."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import DatabaseError, transaction

from platform_events.api.clients import (
    ApiClientError,
    api_client_by_key,
    api_client_change_scopes,
    api_client_create,
    api_client_revoke,
    scopes_beyond_actor,
)
from platform_events.api.models import ApiClient

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


def _staff(role: str, *extra_permissions: str):
    """A staff member of ``role``, with these account permissions ("accounts.codename") added."""
    name = "-".join([role.lower(), *(power.removeprefix("accounts.") for power in extra_permissions)])
    user = get_user_model().objects.create_user(name, password="x", is_staff=True)
    user.groups.set([Group.objects.get(name=role)])
    codenames = [name.removeprefix("accounts.") for name in extra_permissions]
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="accounts", codename__in=codenames))
    return get_user_model().objects.get(pk=user.pk)  # no cached permissions


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["Support", "Integrator", "Auditor"])
def test_a_staff_member_gives_accounts_delete_only_with_the_power_to_deprovision(role):
    """Whatever a role's name, the scope that deprovisions is given only by someone who may deprovision
    (and view) accounts themselves: a key is never a way round one's own role."""
    maker = _staff(role)
    may = maker.has_perms(["accounts.view_account", "accounts.deprovision_account"])
    if may:
        client, _ = api_client_create(name="crm", scopes=["accounts:delete"], actor=maker)
        assert client.scopes == ["accounts:delete"]
    else:
        with pytest.raises(ApiClientError, match="you may not give a client the scope accounts:delete") as refused:
            api_client_create(name="crm", scopes=["accounts:delete"], actor=maker)
        assert (refused.value.code, refused.value.field) == ("scope-not-yours", "scopes")
        assert not ApiClient.objects.exists()


@pytest.mark.django_db
def test_the_power_to_deprovision_alone_does_not_give_accounts_delete_nor_viewing_alone():
    for powers in [("accounts.deprovision_account",), ("accounts.view_account",)]:
        maker = _staff("Integrator", *powers)
        if maker.has_perms(["accounts.view_account", "accounts.deprovision_account"]):
            continue  # the role itself has the other: nothing to show here
        with pytest.raises(ApiClientError, match="scope accounts:delete"):
            api_client_create(name="crm", scopes=["accounts:delete"], actor=maker)
    giver = _staff("Integrator", "accounts.view_account", "accounts.deprovision_account")
    assert api_client_create(name="crm", scopes=["accounts:delete"], actor=giver)[0].scopes == ["accounts:delete"]


@pytest.mark.django_db
def test_an_integrator_cannot_add_accounts_delete_to_a_client_it_may_change():
    client, _ = api_client_create(name="crm", scopes=["accounts:read"], actor=None)
    integrator = _staff("Integrator")
    assert not integrator.has_perm("accounts.deprovision_account")
    with pytest.raises(ApiClientError, match="scope accounts:delete"):
        api_client_change_scopes(client=client, scopes=["accounts:read", "accounts:delete"], actor=integrator)
    assert ApiClient.objects.get(pk=client.pk).scopes == ["accounts:read"]


@pytest.mark.django_db
def test_the_database_takes_accounts_delete_and_still_refuses_an_unknown_scope(sql):
    client, _ = api_client_create(name="crm", scopes=["accounts:delete"], actor=None)
    with pytest.raises(DatabaseError, match="ck_api_clients_scopes"), transaction.atomic():
        sql(
            "UPDATE api_clients SET scopes = ARRAY['accounts:delete', 'accounts:everything'] WHERE id = %s", [client.pk]
        )
    assert ApiClient.objects.get(pk=client.pk).scopes == ["accounts:delete"]


@pytest.mark.django_db
def test_the_database_takes_scim_as_a_scope_of_its_own(sql):
    client, _ = api_client_create(name="okta", scopes=["scim"], actor=None)
    assert ApiClient.objects.get(pk=client.pk).scopes == ["scim"]


@pytest.mark.django_db
def test_only_staff_who_may_do_all_an_identity_provider_does_give_a_client_the_scim_scope():
    """A scim key creates, suspends and deprovisions accounts: as with accounts:write, no staff role may
    create accounts, so only a superuser gives it (a role that gains those powers may too)."""

    def staff(role):
        user = get_user_model().objects.create_user(f"staff-{role.lower()}", password="x", is_staff=True)
        user.groups.set([Group.objects.get(name=role)])
        return get_user_model().objects.get(pk=user.pk)  # permissions read afresh

    for role in ("Support", "Privacy", "Auditor", "Integrator"):
        assert "scope scim" in scopes_beyond_actor(["scim"], staff(role)), role
    superuser = get_user_model().objects.create_superuser("root-of-it", password="x")
    assert scopes_beyond_actor(["scim"], superuser) is None
