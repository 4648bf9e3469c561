"""Attacks on the staff lock-outs in the admin (platform_events/lockouts/admin.py): a failed sign-in's
password is never shown; unlocking is for superusers, by POST with the CSRF token, after a
confirmation, recorded; no plain delete and no cleanup lifts a live lock-out."""

import pytest
from axes.models import AccessAttempt
from django.contrib.admin.models import LogEntry
from django.test import Client

from tests.support import csrf_client, fail_logins, quiet

pytestmark = [pytest.mark.attack, pytest.mark.django_db]


def test_failed_sign_in_passwords_are_not_shown_to_staff(admin_client):
    fail_logins(Client(REMOTE_ADDR="192.0.2.9"), "someone", 1)
    Client(REMOTE_ADDR="192.0.2.9").post("/admin/login/", {"username": "someone", "password": "Typo0fMyPassword"})
    attempt = AccessAttempt.objects.get(username="someone")
    response = admin_client.get(f"/admin/axes/accessattempt/{attempt.pk}/change/")
    assert b"Typo0fMyPassword" not in response.content


def lock(username):
    fail_logins(Client(REMOTE_ADDR="192.0.2.10"), username, 5)
    return list(AccessAttempt.objects.filter(username=username).values_list("pk", flat=True))


def test_support_cannot_unlock(support):
    pks = lock("victim")
    data = {"action": "unlock", "_selected_action": pks, "confirm": "yes"}
    response = quiet(support).post("/admin/axes/accessattempt/", data)
    assert response.status_code == 403
    assert AccessAttempt.objects.filter(username="victim").exists()


def test_unlock_without_csrf_is_refused():
    pks = lock("victim2")
    client = csrf_client(None, "root_csrf")
    response = client.post(
        "/admin/axes/accessattempt/", {"action": "unlock", "_selected_action": pks, "confirm": "yes"}
    )
    assert response.status_code == 403
    assert AccessAttempt.objects.filter(username="victim2").exists()


def test_unlock_asks_first_then_records(admin_client):
    pks = lock("victim3")
    response = admin_client.post("/admin/axes/accessattempt/", {"action": "unlock", "_selected_action": pks})
    assert response.status_code == 200
    assert AccessAttempt.objects.filter(username="victim3").exists()
    admin_client.post("/admin/axes/accessattempt/", {"action": "unlock", "_selected_action": pks, "confirm": "yes"})
    assert not AccessAttempt.objects.filter(username="victim3").exists()
    assert LogEntry.objects.filter(object_repr__startswith="victim3").exists()


def test_plain_delete_of_attempts_is_not_offered(admin_client):
    pks = lock("victim4")
    admin_client.post(
        "/admin/axes/accessattempt/", {"action": "delete_selected", "_selected_action": pks, "post": "yes"}
    )
    quiet(admin_client).post(f"/admin/axes/accessattempt/{pks[0]}/delete/", {"post": "yes"})
    assert AccessAttempt.objects.filter(username="victim4").exists()


def test_cleanup_action_does_not_lift_a_live_lockout_unrecorded(admin_client):
    pks = lock("victim5")
    response = quiet(admin_client).post(
        "/admin/axes/accessattempt/", {"action": "cleanup_expired_attempts", "_selected_action": pks}
    )
    assert response.status_code < 500
    admin_client.post("/admin/axes/accessattempt/", {"action": "cleanup_expired_attempts", "_selected_action": pks})
    assert AccessAttempt.objects.filter(username="victim5").exists()
