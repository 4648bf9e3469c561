"""Attacks on the admin's sign-in (lifecycle/backoffice/site.py, django-axes): the lock-out page reads
the same for an existing and an unknown login, and the right password does not lift a lock-out."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.support import fail_logins

pytestmark = [pytest.mark.attack, pytest.mark.django_db]


def normalised(response, username):
    text = response.content.decode().replace(username, "LOGIN")
    text = re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", text)
    return re.sub(r"\d", "0", text)


def test_lockout_page_reads_the_same_for_existing_and_unknown_logins():
    get_user_model().objects.create_user("realstaff", password="right password", is_staff=True)
    existing = fail_logins(Client(REMOTE_ADDR="192.0.2.7"), "realstaff", 6)
    unknown = fail_logins(Client(REMOTE_ADDR="192.0.2.7"), "ghoststaf", 6)
    assert existing.status_code == unknown.status_code == 429
    assert existing.get("Retry-After") == unknown.get("Retry-After")
    assert existing.get("Retry-After")
    assert normalised(existing, "realstaff") == normalised(unknown, "ghoststaf")


def test_lockout_holds_even_with_the_right_password():
    get_user_model().objects.create_user("realstaff2", password="right password", is_staff=True)
    client = Client(REMOTE_ADDR="192.0.2.8")
    fail_logins(client, "realstaff2", 5)
    response = client.post("/admin/login/", {"username": "realstaff2", "password": "right password"})
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session
