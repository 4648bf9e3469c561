"""API clients' services (platform_events/api/clients.py), as the admin and the commands call them:
each refusal names its field; a name two people add at once goes to one; scopes change on a working
client only, audited; a reason that is not text is refused before the database sees it."""

import dataclasses
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import DataError, connection, transaction

from platform_events.api.clients import (
    CALLED,
    ApiClientError,
    ReadAlong,
    api_client_by_key,
    api_client_called,
    api_client_called_reading,
    api_client_change_scopes,
    api_client_create,
    api_client_revoke,
    key_digest,
)
from platform_events.api.models import ApiClient, ApiScope
from platform_events.audit.models import AuditEvent
from platform_events.limits.counters import Limit, LimitExceeded
from platform_events.limits.models import RateLimit
from tests.support import in_threads, wait_until_blocked


@pytest.fixture
def staff(db):
    """The staff member the audit rows name: a superuser, who may give a client any scope."""
    return get_user_model().objects.create_superuser("admin1", password="x")


@pytest.mark.django_db
class TestRefusals:
    @pytest.mark.parametrize(
        ("name", "scopes", "field"),
        [
            ("", ["sessions"], "name"),
            ("bad/name", ["sessions"], "name"),
            ("billing", [], "scopes"),
            ("billing", ["sessions", "admin"], "scopes"),
            ("billing", ["accounts:read", "sessions:client-address"], "scopes"),
        ],
    )
    def test_a_refused_client_names_the_field_and_nothing_is_written(self, name, scopes, field):
        with pytest.raises(ApiClientError, match="^api: ") as refusal:
            api_client_create(name=name, scopes=scopes, actor=None)
        assert (refusal.value.field, refusal.value.code, refusal.value.status) == (field, "invalid-api-client", 422)
        assert not ApiClient.objects.exists()

    def test_a_name_taken_in_another_case_is_refused_on_the_name(self):
        api_client_create(name="billing", scopes=["sessions"], actor=None)
        with pytest.raises(ApiClientError, match="already an API client named 'Billing'") as refusal:
            api_client_create(name="Billing", scopes=["sessions"], actor=None)
        assert (refusal.value.field, refusal.value.code, refusal.value.status) == ("name", "api-client-name-taken", 409)

    @pytest.mark.parametrize("reason", ["", "  ", "bad \udcff bytes", "a\x00b"])
    def test_a_revocation_without_a_reason_in_plain_text_is_refused_and_the_key_works(self, reason):
        client, key = api_client_create(name="billing", scopes=["sessions"], actor=None)
        with pytest.raises(ApiClientError, match="^api: ") as refusal:
            api_client_revoke(client=client, reason=reason, actor=None)
        assert refusal.value.field == "reason"
        assert api_client_by_key(key) == client


@pytest.mark.django_db
class TestScopes:
    def test_new_scopes_keep_the_key_and_are_audited_with_the_staff_member(self, staff):
        client, key = api_client_create(name="billing", scopes=["sessions"], actor=None)
        changed = api_client_change_scopes(client=client, scopes=["accounts:write", "accounts:read"], actor=staff)
        assert changed.scopes == ["accounts:read", "accounts:write"]
        assert api_client_by_key(key) == client
        row = AuditEvent.objects.get(action="api_client.changed")
        assert (row.actor_id, row.diff_before, row.diff_after) == (
            f"staff:{staff.pk}",
            {"scopes": ["sessions"]},
            {"scopes": ["accounts:read", "accounts:write"]},
        )

    def test_the_address_scope_goes_with_sessions_in_the_service_and_the_database(self, staff, refused):
        """sessions:client-address only adds to sessions: without it, the service refuses it with a
        sentence, and the database refuses it from any client."""
        client, _ = api_client_create(name="gateway", scopes=["sessions", "sessions:client-address"], actor=None)
        with pytest.raises(ApiClientError, match="goes with sessions") as refusal:
            api_client_change_scopes(client=client, scopes=["sessions:client-address"], actor=staff)
        assert refusal.value.field == "scopes"
        refused(
            "UPDATE api_clients SET scopes = '{sessions:client-address}' WHERE id = %s",
            [client.pk],
            match="ck_api_clients_scopes",
        )
        client.refresh_from_db()
        assert client.scopes == ["sessions", "sessions:client-address"]

    def test_the_same_scopes_in_another_order_change_nothing(self, staff):
        client, _ = api_client_create(name="billing", scopes=["sessions", "accounts:read"], actor=None)
        api_client_change_scopes(client=client, scopes=["sessions", "accounts:read", "sessions"], actor=staff)
        assert not AuditEvent.objects.filter(action="api_client.changed").exists()

    def test_a_revoked_clients_scopes_cannot_change(self, staff):
        client, _ = api_client_create(name="billing", scopes=["sessions"], actor=None)
        api_client_revoke(client=client, reason="gone", actor=None)
        with pytest.raises(
            ApiClientError, match="api: client 'billing' is revoked; its scopes cannot change"
        ) as refusal:
            api_client_change_scopes(client=client, scopes=["accounts:read"], actor=staff)
        assert (refusal.value.code, refusal.value.status) == ("api-client-revoked", 409)
        assert ApiClient.objects.get(pk=client.pk).scopes == ["sessions"]

    def test_no_scope_is_refused_on_the_scopes(self, staff):
        client, _ = api_client_create(name="billing", scopes=["sessions"], actor=None)
        with pytest.raises(ApiClientError, match="at least one scope") as refusal:
            api_client_change_scopes(client=client, scopes=[], actor=staff)
        assert refusal.value.field == "scopes"


@pytest.mark.django_db(transaction=True)
def test_one_name_added_twice_at_once_is_one_client_and_a_refusal_on_the_name(psql):
    """Both pass the service's check (neither sees the other's row); the unique index decides."""
    with psql.transaction():
        psql.execute(
            "INSERT INTO api_clients (name, key_prefix, key_hash, scopes)"
            " VALUES ('Billing', 'lc_racing1', sha256('x'), '{sessions}')"
        )
        threads, results = in_threads(lambda: api_client_create(name="billing", scopes=["sessions"], actor=None))
        wait_until_blocked(psql, 1)
    threads[0].join()
    ((ok, error),) = results
    assert not ok and isinstance(error, ApiClientError) and error.field == "name"
    assert str(error) == "api: there is already an API client named 'billing'"
    assert list(ApiClient.objects.values_list("name", flat=True)) == ["Billing"]


@pytest.mark.django_db
class TestWhoMayGiveAScope:
    """Nobody mints a key with powers they lack: each scope's powers are back-office permissions
    (SCOPE_POWERS), and checking passwords is a superuser's to give."""

    @pytest.mark.parametrize(
        ("role", "scope", "refusal"),
        [
            ("Integrator", "accounts:read", "you may not give a client the scope accounts:read"),
            ("Integrator", "accounts:write", "you may not give a client the scope accounts:write"),
            ("Integrator", "sessions", "only a superuser may give a client the scope sessions"),
            ("Support", "accounts:write", "you may not give a client the scope accounts:write"),
            ("Support", "sessions", "only a superuser may give a client the scope sessions"),
            ("Auditor", "accounts:read", "you may not give a client the scope accounts:read"),
        ],
    )
    def test_a_scope_beyond_the_makers_role_is_refused_and_nothing_is_made(self, role, scope, refusal):
        maker = get_user_model().objects.create_user(f"{role.lower()}9", password="x", is_staff=True)
        maker.groups.set([Group.objects.get(name=role)])
        with pytest.raises(ApiClientError, match=refusal) as refused:
            api_client_create(name="billing", scopes=[scope], actor=maker)
        assert (refused.value.code, refused.value.status, refused.value.field) == ("scope-not-yours", 403, "scopes")
        assert not ApiClient.objects.exists() and not AuditEvent.objects.filter(resource_type="api_client").exists()

    def test_support_may_give_the_read_scope_it_has_itself(self):
        maker = get_user_model().objects.create_user("support9", password="x", is_staff=True)
        maker.groups.set([Group.objects.get(name="Support")])
        client, _ = api_client_create(name="billing", scopes=["accounts:read"], actor=maker)
        assert client.created_by == "support9"

    def test_a_superuser_and_an_operator_at_the_command_line_give_any_scope(self, staff):
        every = list(ApiScope.values)
        assert api_client_create(name="made-by-staff", scopes=every, actor=staff)[0].scopes == sorted(every)
        assert api_client_create(name="made-at-the-shell", scopes=every, actor=None)[0].created_by is None

    def test_a_scope_kept_may_stay_a_scope_added_must_be_the_changers_to_give(self):
        client, _ = api_client_create(name="billing", scopes=["accounts:read", "sessions"], actor=None)
        integrator = get_user_model().objects.create_user("integrator9", password="x", is_staff=True)
        integrator.groups.set([Group.objects.get(name="Integrator")])
        with pytest.raises(ApiClientError, match="scope accounts:write"):
            api_client_change_scopes(client=client, scopes=["accounts:write", "sessions"], actor=integrator)
        assert ApiClient.objects.get(pk=client.pk).scopes == ["accounts:read", "sessions"]
        assert api_client_change_scopes(client=client, scopes=["sessions"], actor=integrator).scopes == ["sessions"]


@pytest.mark.django_db
class TestMaker:
    def test_the_client_names_its_maker_when_it_acts_and_nobody_changes_who_that_was(self, staff, refused):
        client, _ = api_client_create(name="billing", scopes=["accounts:read"], actor=staff)
        assert (client.created_by, client.get_username()) == ("admin1", "billing, made by admin1")
        refused(
            "UPDATE api_clients SET created_by = 'someone-else' WHERE id = %s",
            [client.pk],
            match="a client's key, maker and creation time cannot change",
        )
        refused("UPDATE api_clients SET created_by = NULL WHERE id = %s", [client.pk], match="cannot change")
        assert ApiClient.objects.get(pk=client.pk).created_by == "admin1"

    def test_a_long_name_and_maker_fit_the_trails_actor_column(self):
        client = ApiClient(name="b" * 100, created_by="m" * 150)
        assert len(client.get_username()) == 255


LIMIT = Limit(name="api-per-client", max_hits=2, window=timedelta(minutes=1))


@pytest.mark.django_db
class TestCalled:
    def test_each_call_counts_one_hit_and_the_one_over_the_limit_is_refused(self):
        client, key = api_client_create(name="billing", scopes=["accounts:read"], actor=None)

        assert api_client_called(key, limit=LIMIT) == client
        assert api_client_called(key, limit=LIMIT) == client
        with pytest.raises(LimitExceeded) as refusal:
            api_client_called(key, limit=LIMIT)

        assert 1 <= refusal.value.retry_after <= 60
        assert api_client_called(key, limit=dataclasses.replace(LIMIT, max_hits=4)) == client  # the 4th hit

    def test_a_revoked_or_unknown_key_is_nobody_from_the_next_call_and_counts_nothing(self):
        client, key = api_client_create(name="billing", scopes=["accounts:read"], actor=None)
        assert api_client_called(key, limit=LIMIT) == client
        api_client_revoke(client=client, reason="leaked", actor=None)

        assert api_client_called(key, limit=LIMIT) is None
        assert api_client_called("lc_" + "x" * 43, limit=LIMIT) is None
        assert RateLimit.objects.get().hits == 1

    def test_the_client_read_is_the_whole_row_and_its_use_is_noted(self):
        client, key = api_client_create(name="billing", scopes=["accounts:read", "sessions"], actor=None)

        called = api_client_called(key, limit=LIMIT)

        assert (called.name, called.scopes, called.key_prefix) == ("billing", ["accounts:read", "sessions"], key[:11])
        stored = ApiClient.objects.get()
        assert stored.last_used_at is not None
        # Every other field as the ORM reads it, and a row the ORM would update rather than insert.
        fields = [field.attname for field in ApiClient._meta.concrete_fields if field.attname != "last_used_at"]
        assert [getattr(called, name) for name in fields] == [getattr(stored, name) for name in fields]
        assert (called._state.adding, called._state.db) == (False, "default")

    def test_inside_a_transaction_the_hit_commits_as_the_callers_transaction_does(self):
        _, key = api_client_create(name="billing", scopes=["accounts:read"], actor=None)

        with transaction.atomic():
            api_client_called(key, limit=LIMIT)
            assert synchronous_commit() == "on"


# A read that fails whenever it runs: random() is volatile, so the division is made at run time.
FAILING_READ = "SELECT 1 / floor(random())::integer AS x, %(n)s AS n"


def failing_read(scope: str) -> ReadAlong:
    return ReadAlong(scope=scope, sql=FAILING_READ, params={"n": 7})


@pytest.mark.django_db
class TestCalledReading:
    def test_the_row_comes_with_the_client_in_one_statement(self, django_assert_num_queries):
        client, key = api_client_create(name="billing", scopes=["accounts:read"], actor=None)
        api_client_called(key, limit=LIMIT)  # its use noted: no UPDATE below
        read = ReadAlong(scope="accounts:read", sql="SELECT %(n)s::integer + 1, 'x'", params={"n": 41})

        with django_assert_num_queries(1):
            assert api_client_called_reading(key, limit=LIMIT, read=read) == (client, (42, "x"))

    def test_no_row_is_none(self):
        client, key = api_client_create(name="billing", scopes=["accounts:read"], actor=None)
        read = ReadAlong(scope="accounts:read", sql="SELECT 1 WHERE %(n)s::integer < 0", params={"n": 1})

        assert api_client_called_reading(key, limit=LIMIT, read=read) == (client, None)

    def test_the_read_runs_for_a_client_within_its_limit_that_holds_the_scope(self):
        """The control for the three below: FAILING_READ fails when it runs."""
        _, key = api_client_create(name="billing", scopes=["accounts:read"], actor=None)

        with pytest.raises(DataError, match="division by zero"):
            api_client_called_reading(key, limit=LIMIT, read=failing_read("accounts:read"))

    def test_an_unknown_or_revoked_key_reads_nothing(self):
        client, key = api_client_create(name="billing", scopes=["accounts:read"], actor=None)
        api_client_revoke(client=client, reason="leaked", actor=None)

        assert api_client_called_reading(key, limit=LIMIT, read=failing_read("accounts:read")) == (None, None)
        unknown = "lc_" + "x" * 43
        assert api_client_called_reading(unknown, limit=LIMIT, read=failing_read("accounts:read")) == (None, None)

    def test_a_key_over_its_limit_reads_nothing(self):
        _, key = api_client_create(name="billing", scopes=["accounts:read"], actor=None)
        api_client_called(key, limit=LIMIT)
        api_client_called(key, limit=LIMIT)

        with pytest.raises(LimitExceeded):
            api_client_called_reading(key, limit=LIMIT, read=failing_read("accounts:read"))

    def test_a_key_without_the_scope_reads_nothing(self):
        client, key = api_client_create(name="billing", scopes=["sessions"], actor=None)

        assert api_client_called_reading(key, limit=LIMIT, read=failing_read("accounts:read")) == (client, None)

    def test_a_parameter_of_the_keys_statement_is_refused(self):
        _, key = api_client_create(name="billing", scopes=["accounts:read"], actor=None)
        read = ReadAlong(scope="accounts:read", sql="SELECT %(hash)s", params={"hash": b"x"})

        with pytest.raises(ValueError, match="taken by the key's statement"):
            api_client_called_reading(key, limit=LIMIT, read=read)


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_hits_own_commit_does_not_wait_for_the_disk_and_the_session_keeps_its_setting():
    client, key = api_client_create(name="billing", scopes=["accounts:read"], actor=None)

    with transaction.atomic():  # the statement's own transaction, held open to look inside it
        params = {"hash": key_digest(key), "bucket": "b:" + "0" * 64, "seconds": 60, "own_transaction": True}
        assert [c.pk for c in ApiClient.objects.raw(CALLED, params)] == [client.pk]
        assert synchronous_commit() == "off"
    assert api_client_called(key, limit=LIMIT) == client
    assert synchronous_commit() == "on"


def synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return cursor.fetchone()[0]
