"""The API client commands: add_api_client prints the key alone on stdout (the rest on stderr), once;
revoke_api_client revokes with a reason; both audited as the database role; bad input is a
one-sentence CommandError with nothing written."""

import io

import pytest
from django.core.management import CommandError, call_command

from platform_events.api.clients import api_client_by_key, api_client_create
from platform_events.api.models import ApiClient
from platform_events.audit.models import AuditEvent
from tests.support import database_url_for_tests, manage

pytestmark = pytest.mark.django_db


def run(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_add_api_client_prints_the_key_alone_on_stdout_and_the_rest_on_stderr():
    out, err = run("add_api_client", "billing", "--scopes", "sessions, accounts:read")
    key = out.strip()
    assert out == key + "\n"
    client = ApiClient.objects.get(name="billing")
    assert api_client_by_key(key) == client and client.scopes == ["accounts:read", "sessions"]
    assert f"id {client.pk}" in err and "not shown again" in err and key not in err


def test_add_api_client_is_audited_as_the_database_role_without_the_key():
    out, _ = run("add_api_client", "billing", "--scopes", "sessions")
    created = AuditEvent.objects.get(action="api_client.created")
    assert created.actor_type == "SYSTEM" and created.actor_id == created.db_user
    assert out.strip() not in str(AuditEvent.objects.filter(pk=created.pk).values().get())


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        (["", "--scopes", "sessions"], "api: a client's name is 1 to 100 characters"),
        (["bad/name", "--scopes", "sessions"], "api: a client's name starts with a letter or digit"),
        (["bill\udcffing", "--scopes", "sessions"], "api: a client's name starts with a letter or digit"),
        (["billing", "--scopes", ""], "api: give a client at least one scope"),
        (["billing", "--scopes", "sessions,admin"], r"api: unknown scope\(s\) admin"),
        (["CRM", "--scopes", "sessions"], "api: there is already an API client named 'CRM'"),
    ],
)
def test_add_api_client_refuses_bad_input_in_one_sentence_and_writes_nothing(args, sentence):
    api_client_create(name="crm", scopes=["sessions"], actor=None)
    out = io.StringIO()
    with pytest.raises(CommandError, match=sentence) as refusal:
        call_command("add_api_client", *args, stdout=out, stderr=io.StringIO())
    assert "\n" not in str(refusal.value) and out.getvalue() == ""
    assert list(ApiClient.objects.values_list("name", flat=True)) == ["crm"]


def test_revoke_api_client_revokes_with_the_reason_audited_as_the_database_role():
    client, key = api_client_create(name="billing", scopes=["sessions"], actor=None)
    out, _ = run("revoke_api_client", "BILLING", "--reason", "partner left")
    assert "revoked" in out and api_client_by_key(key) is None
    revoked = AuditEvent.objects.get(action="api_client.revoked")
    assert (revoked.resource_id, revoked.reason, revoked.actor_type) == (str(client.pk), "partner left", "SYSTEM")


def test_revoke_api_client_again_says_it_was_revoked_already_and_writes_nothing():
    api_client_create(name="billing", scopes=["sessions"], actor=None)
    run("revoke_api_client", "billing", "--reason", "partner left")
    out, _ = run("revoke_api_client", "billing", "--reason", "again")
    assert "was revoked already" in out
    assert AuditEvent.objects.filter(action="api_client.revoked").count() == 1


@pytest.mark.parametrize("reason", ["", "   ", "bad\x00", "\udcff"])
@pytest.mark.parametrize("revoked_already", [False, True])
def test_revoke_api_client_dry_run_is_refused_exactly_as_the_real_run(reason, revoked_already):
    """A reason the real run refuses (none, blanks, stray bytes) is refused by the dry run with the same
    sentence, not "would be revoked"; nothing changes either way."""
    client, _ = api_client_create(name="billing", scopes=["sessions"], actor=None)
    if revoked_already:
        run("revoke_api_client", "billing", "--reason", "partner left")
    with pytest.raises(CommandError) as dry:
        run("revoke_api_client", "billing", "--reason", reason, "--dry-run")
    with pytest.raises(CommandError) as real:
        run("revoke_api_client", "billing", "--reason", reason)
    assert str(dry.value) == str(real.value)
    assert "reason" in str(dry.value) or "say why" in str(dry.value)
    client.refresh_from_db()
    assert (client.revoked_at is not None) == revoked_already


def test_revoke_api_client_dry_run_says_a_revoked_client_is_revoked_already():
    api_client_create(name="billing", scopes=["sessions"], actor=None)
    run("revoke_api_client", "billing", "--reason", "partner left")
    out, _ = run("revoke_api_client", "billing", "--reason", "again", "--dry-run")
    assert "is revoked already; nothing changed" in out


def test_revoke_api_client_dry_run_changes_nothing():
    _, key = api_client_create(name="billing", scopes=["sessions"], actor=None)
    out, _ = run("revoke_api_client", "billing", "--reason", "partner left", "--dry-run")
    assert "would be revoked; nothing changed" in out
    assert api_client_by_key(key) is not None


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        (["nobody", "--reason", "x"], "No API client is named 'nobody'."),
        (["bill\udcffing", "--reason", "x"], "No API client is named"),
        (["billing", "--reason", "  "], "api: say why the key is revoked"),
        (["billing", "--reason", "bad \udcff bytes"], "api: the reason is not valid text"),
    ],
)
def test_revoke_api_client_refuses_bad_input_in_one_sentence_and_the_key_works(args, sentence):
    _, key = api_client_create(name="billing", scopes=["sessions"], actor=None)
    with pytest.raises(CommandError, match=sentence) as refusal:
        call_command("revoke_api_client", *args, stdout=io.StringIO())
    assert "\n" not in str(refusal.value)
    assert api_client_by_key(key) is not None


@pytest.mark.django_db(transaction=True)
def test_from_a_shell_the_key_is_the_whole_of_stdout():
    """KEY=$(manage.py add_api_client ...) holds the key and nothing else."""
    result = manage("add_api_client", "billing", "--scopes", "sessions", DATABASE_URL=database_url_for_tests())
    assert result.returncode == 0, result.stderr
    key = result.stdout.strip()
    assert result.stdout == key + "\n" and api_client_by_key(key) is not None
    assert "not shown again" in result.stderr and key not in result.stderr


def test_add_api_client_gives_accounts_delete_and_names_it_among_the_scopes_when_one_is_misspelt():
    out, _ = run("add_api_client", "crm", "--scopes", "accounts:read,accounts:delete")
    assert ApiClient.objects.get(name="crm").scopes == ["accounts:delete", "accounts:read"]
    with pytest.raises(CommandError, match=r"unknown scope\(s\) accounts:deleet; the scopes are .*accounts:delete"):
        call_command(
            "add_api_client", "crm2", "--scopes", "accounts:deleet", stdout=io.StringIO(), stderr=io.StringIO()
        )
    assert not ApiClient.objects.filter(name="crm2").exists()
