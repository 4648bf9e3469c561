"""Attacks on the pages that refuse (lifecycle/error_pages.py): an anonymous visitor is sent to the
sign-in page, a staff member's 403 escapes what the URL held, and a failed CSRF check on the sign-in
page does not tell whether a login exists."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from lifecycle.demo.factories import AccountFactory
from tests.support import act_url, quiet

pytestmark = [pytest.mark.attack, pytest.mark.django_db]

EXPORT = "/admin/platform_events/auditevent/export/"
ACCOUNTS = "/admin/accounts/account/"


def test_403_page_for_anonymous_leaks_nothing():
    AccountFactory(login="secretlogin")
    client = Client(raise_request_exception=False)
    response = client.get(act_url(1))
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]
    response = client.post(EXPORT)
    assert response.status_code == 302


def test_staff_403_page_is_in_the_back_office_look_and_escapes_the_path(auditor):
    response = quiet(auditor).get(ACCOUNTS + "?<script>alert(1)</script>")
    assert response.status_code == 403
    assert b"<script>alert(1)</script>" not in response.content


def test_csrf_failure_on_login_page_does_not_tell_whether_a_login_exists():
    get_user_model().objects.create_user("realstaff3", password="x", is_staff=True)
    client = Client(enforce_csrf_checks=True)
    a = client.post("/admin/login/", {"username": "realstaff3", "password": "x"})
    b = client.post("/admin/login/", {"username": "nobodyhere", "password": "x"})
    assert a.status_code == b.status_code == 403
    assert a.content.replace(b"realstaff3", b"") == b.content.replace(b"nobodyhere", b"")
