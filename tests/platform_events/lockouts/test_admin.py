"""Unlocking a locked-out staff login from the admin (platform_events/lockouts/admin.py and services.py):
superusers only, after a confirmation page, recorded in the admin's history; the login then signs in."""

import pytest
from axes.models import AccessAttempt
from django.contrib.admin.models import DELETION, LogEntry
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from platform_events.lockouts.services import staff_login_unlock

pytestmark = pytest.mark.django_db
PASSWORD = "right-password-123"
CHANGELIST = reverse("admin:axes_accessattempt_changelist")


def lock_out(username: str, settings, **meta) -> None:
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post(reverse("admin:login"), {"username": username, "password": "wrong"}, **meta)


def sign_in(username: str, **meta):
    return Client().post(reverse("admin:login"), {"username": username, "password": PASSWORD}, **meta)


def unlock(client: Client, attempts, *, confirm: bool = True):
    data = {"action": "unlock", "_selected_action": [attempt.pk for attempt in attempts]}
    if confirm:
        data["confirm"] = "yes"
    return client.post(CHANGELIST, data, follow=confirm)


@pytest.fixture
def support9(settings):
    """A Support login, locked out from two addresses."""
    user = get_user_model().objects.create_user("support9", password=PASSWORD, is_staff=True)
    lock_out("support9", settings, REMOTE_ADDR="192.0.2.7")
    lock_out("support9", settings, REMOTE_ADDR="192.0.2.8")
    assert sign_in("support9", REMOTE_ADDR="192.0.2.7").status_code == 429
    return user


def test_unlocking_from_the_admin_lets_the_login_sign_in_again(admin_client, support9):
    """A superuser selects the login's records, confirms, and its right password signs in again from
    every address it was locked out from."""
    response = unlock(admin_client, AccessAttempt.objects.filter(username="support9"))
    assert "1 login unlocked: support9." in response.content.decode()
    assert not AccessAttempt.objects.filter(username="support9").exists()
    assert sign_in("support9", REMOTE_ADDR="192.0.2.7").status_code == 302
    assert sign_in("support9", REMOTE_ADDR="192.0.2.8").status_code == 302


def test_unlock_asks_first_and_changes_nothing_until_confirmed(admin_client, support9):
    """Without the confirmation the action only shows which logins and addresses it would unlock."""
    response = unlock(admin_client, AccessAttempt.objects.filter(username="support9"), confirm=False)
    page = response.content.decode()
    assert response.status_code == 200
    assert "Unlock 1 login: <strong>support9</strong>?" in page
    assert "192.0.2.7" in page and "192.0.2.8" in page
    assert AccessAttempt.objects.filter(username="support9").count() == 2


def test_an_unlock_is_recorded_in_the_admins_history(admin_client, admin_user, support9):
    """Who unlocked which login from which address stays in the admin's history (django_admin_log)."""
    unlock(admin_client, AccessAttempt.objects.filter(username="support9"))
    entries = LogEntry.objects.filter(action_flag=DELETION, content_type__app_label="axes").order_by("object_repr")
    assert [(entry.user_id, entry.object_repr) for entry in entries] == [
        (admin_user.pk, "support9 from 192.0.2.7"),
        (admin_user.pk, "support9 from 192.0.2.8"),
    ]
    # From .8, the 5 failures that locked it; from .7 one more: the right password tried while locked out.
    assert [entry.change_message for entry in entries] == [
        "Unlocked: 6 failed sign-ins cleared.",
        "Unlocked: 5 failed sign-ins cleared.",
    ]


def test_staff_who_may_only_read_the_records_cannot_unlock(support, support9):
    """A Support member allowed to read axes' records (not to delete them) gets no Unlock: the records and
    the lock-out stay."""
    user = get_user_model().objects.get(username="support1")
    user.user_permissions.add(Permission.objects.get(content_type__app_label="axes", codename="view_accessattempt"))
    assert "Unlock the selected logins" not in support.get(CHANGELIST).content.decode()
    unlock(support, AccessAttempt.objects.filter(username="support9"))
    assert AccessAttempt.objects.filter(username="support9").count() == 2
    assert sign_in("support9", REMOTE_ADDR="192.0.2.7").status_code == 429


def test_support_cannot_even_see_the_records(support, support9):
    assert support.get(CHANGELIST).status_code == 403


def test_the_admin_offers_unlock_and_no_plain_delete(admin_client, support9):
    """Unlock is the one way to lift a lock-out from the admin: the plain delete, which would leave no
    record, is not offered."""
    page = admin_client.get(CHANGELIST).content.decode()
    assert '<option value="unlock">Unlock the selected logins</option>' in page
    assert 'value="delete_selected"' not in page
    attempt = AccessAttempt.objects.filter(username="support9").first()
    assert admin_client.get(reverse("admin:axes_accessattempt_delete", args=[attempt.pk])).status_code == 403


def test_unlocking_a_login_that_is_not_locked_does_nothing(admin_user):
    """Nothing to lift: 0, and no history entry."""
    assert staff_login_unlock(username="nobody", actor=admin_user) == 0
    assert not LogEntry.objects.exists()
