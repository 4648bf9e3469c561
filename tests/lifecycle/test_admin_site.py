"""The admin site: branded, and repeated failed logins lock a login out (django-axes)."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_repeated_failed_logins_lock_the_login_out(settings):
    get_user_model().objects.create_user("support9", password="right-password-123", is_staff=True)
    login = reverse("admin:login")
    client = Client()
    statuses = [
        client.post(login, {"username": "support9", "password": "wrong"}).status_code
        for _ in range(settings.AXES_FAILURE_LIMIT)
    ]
    assert statuses == [200] * (settings.AXES_FAILURE_LIMIT - 1) + [429]  # the form again, then the lock-out
    response = client.post(login, {"username": "support9", "password": "right-password-123"})
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session


def test_a_good_login_works(settings):
    get_user_model().objects.create_user("support8", password="right-password-123", is_staff=True)
    response = Client().post(reverse("admin:login"), {"username": "support8", "password": "right-password-123"})
    assert response.status_code == 302


def test_the_admin_says_whose_it_is(admin_client):
    response = admin_client.get(reverse("admin:index"))
    assert "Lifecycle back-office" in response.content.decode()
