"""manage.py add_staff (lifecycle/backoffice/staff.py): a staff login in one role, with a password shown
once or read from stdin and checked like any; bad input is one sentence, and no password reaches a log."""

import importlib
import io
import logging
import re
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.urls import reverse

from accounts.models import Account, AccountStatus
from lifecycle.backoffice.roles import ROLES
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.models import AuditEvent
from tests.support import admin_action

pytestmark = pytest.mark.django_db


def add_staff(*args, stdin: str | None = None) -> str:
    out = io.StringIO()
    call_command("add_staff", *args, stdout=out, stderr=io.StringIO(), stdin=io.StringIO(stdin or ""))
    return out.getvalue()


def printed_password(output: str) -> str:
    return re.search(r"Password, shown once: (\S+)", output).group(1)


def test_a_support_login_it_makes_signs_in_and_suspends_an_account_through_the_admin():
    output = add_staff("kim", "--role", "support")
    account = AccountFactory(active=True)
    client = Client()
    signed_in = client.post(reverse("admin:login"), {"username": "kim", "password": printed_password(output)})
    assert signed_in.status_code == 302 and client.session["_auth_user_id"]
    response = admin_action(client, "suspend", [account], reason="chargeback")
    assert [str(message) for message in response.context["messages"]] == ["1 account suspended."]
    assert Account.objects.get(pk=account.pk).status == AccountStatus.SUSPENDED


@pytest.mark.parametrize("typed", ["support", "auditor", "integrator", "privacy", "Integrator"])
def test_each_role_is_the_group_of_its_name_and_the_login_is_staff_not_superuser(typed):
    output = add_staff("lee", "--role", typed)
    user = get_user_model().objects.get(username="lee")
    assert user.is_staff and not user.is_superuser
    assert [group.name for group in user.groups.all()] == [typed.capitalize()]
    assert f"Made staff login lee ({typed.capitalize()}: {ROLES[typed.capitalize()].may})." in output


def test_the_generated_password_is_long_random_and_shown_once():
    first, second = add_staff("ann", "--role", "auditor"), add_staff("bob", "--role", "auditor")
    assert len(printed_password(first)) >= 24 and printed_password(first) != printed_password(second)
    assert first.count(printed_password(first)) == 1


def test_a_password_from_stdin_is_the_logins_and_is_never_printed():
    output = add_staff("cat", "--role", "support", "--password-stdin", stdin="correct horse battery staple\n")
    assert get_user_model().objects.get(username="cat").check_password("correct horse battery staple")
    assert "correct horse" not in output and "Password, shown once" not in output


def test_the_password_reaches_no_log(caplog, settings):
    """Whatever logs at any level while the login is made (Django's, every SQL statement with its
    parameters) never holds the password, given or generated."""
    settings.DEBUG = True  # Django logs each statement only then
    with caplog.at_level(logging.DEBUG), caplog.at_level(logging.DEBUG, logger="django.db.backends"):
        output = add_staff("dan", "--role", "support")
        add_staff("eve", "--role", "support", "--password-stdin", stdin="a-given-Passw0rd-of-eve\n")
    # The statements are there with their parameters: without them, the test would prove nothing.
    assert 'INSERT INTO "auth_user"' in caplog.text
    logged = caplog.text + " ".join(str(record.args) for record in caplog.records)
    assert printed_password(output) not in logged
    assert "a-given-Passw0rd-of-eve" not in logged


@pytest.mark.parametrize(
    ("login", "role", "stdin", "sentence"),
    [
        (
            "fay.wong",
            "admin",
            None,
            "--role: no role named 'admin'; the roles are support, auditor, integrator, privacy.",
        ),
        ("fay bar", "support", None, "Not a valid login: Enter a valid username."),
        ("fay.wong", "support", "", "--password-stdin: no password on stdin"),
        ("fay.wong", "support", "short\n", "Password refused: This password is too short."),
        ("fay.wong", "support", "fay.wong1\n", "Password refused: The password is too similar to the username."),
        ("fay.wong", "support", "password123\n", "Password refused: This password is too common."),
    ],
)
def test_bad_input_is_one_sentence_and_makes_nothing(login, role, stdin, sentence):
    """``stdin`` None: a generated password."""
    with pytest.raises(CommandError) as refused:
        add_staff(login, "--role", role, *([] if stdin is None else ["--password-stdin"]), stdin=stdin)
    assert str(refused.value).startswith(sentence)
    assert "\n" not in str(refused.value)
    assert not get_user_model().objects.exists()


@pytest.mark.parametrize("login", ["gus", "GUS"])
def test_an_existing_login_is_refused_in_any_case_and_keeps_its_password(login):
    get_user_model().objects.create_user("gus", password="the-old-Passw0rd", is_staff=True)
    with pytest.raises(CommandError, match="^A login named 'gus' exists already; choose another"):
        add_staff(login, "--role", "integrator")
    user = get_user_model().objects.get()
    assert user.check_password("the-old-Passw0rd") and not user.groups.exists()


class TestIntegratorGroupName:
    """The migration that names the Integrator role's group as the role: members kept."""

    migration = importlib.import_module("lifecycle.migrations.0003_integrator_role_name")
    schema_editor = SimpleNamespace(connection=connection)

    def test_the_old_group_is_renamed_with_its_members(self):
        Group.objects.filter(name="Integrator").update(name="Integrators")
        member = get_user_model().objects.create_user("hal", is_staff=True)
        member.groups.set([Group.objects.get(name="Integrators")])
        self.migration.rename(apps, self.schema_editor)
        assert [group.name for group in member.groups.all()] == ["Integrator"]
        assert not Group.objects.filter(name="Integrators").exists()
        self.migration.rename_back(apps, self.schema_editor)
        assert [group.name for group in member.groups.all()] == ["Integrators"]

    def test_a_group_of_the_new_name_made_meanwhile_takes_the_old_ones_members(self):
        old = Group.objects.create(name="Integrators")
        member = get_user_model().objects.create_user("ida", is_staff=True)
        member.groups.set([old])
        self.migration.rename(apps, self.schema_editor)
        assert [group.name for group in member.groups.all()] == ["Integrator"]
        assert not Group.objects.filter(name="Integrators").exists()


def test_the_login_it_makes_is_audited_as_the_database_role_with_the_reason():
    """The operator at the shell is no staff user: the rows name the database role and say why."""
    add_staff("ash", "--role", "auditor", "--reason", "new auditor, ticket 4411")
    add_staff("bo", "--role", "support")
    rows = AuditEvent.objects.filter(resource_type="staff_user").order_by("occurred_at")
    runtime = connection.settings_dict["USER"]
    assert [(row.action, row.actor_type, row.actor_id, row.db_user, row.reason) for row in rows] == [
        ("staff_user.created", "SYSTEM", runtime, runtime, "new auditor, ticket 4411"),
        ("staff_user.group_added", "SYSTEM", runtime, runtime, "new auditor, ticket 4411"),
        ("staff_user.created", "SYSTEM", runtime, runtime, "manage.py add_staff"),
        ("staff_user.group_added", "SYSTEM", runtime, runtime, "manage.py add_staff"),
    ]
    assert rows[1].diff_after == {"username": "ash", "group": "Auditor"}
