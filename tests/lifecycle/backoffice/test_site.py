"""The admin site: branded, and repeated failed logins lock a login out (django-axes)."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from tests.support import fail_logins

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


@pytest.mark.parametrize("header", ["HTTP_USER_AGENT", "HTTP_ACCEPT"])
def test_failed_logins_with_a_nul_in_a_header_still_lock_the_login_out(settings, header):
    """django-axes keeps both headers and PostgreSQL text cannot hold a NUL: the failures still count
    (a NUL reaching the database would answer 500 without counting them)."""
    get_user_model().objects.create_user("support5", password="right-password-123", is_staff=True)
    login = reverse("admin:login")
    client = Client()
    statuses = [
        client.post(login, {"username": "support5", "password": "wrong"}, **{header: "curl\x00/8"}).status_code
        for _ in range(settings.AXES_FAILURE_LIMIT)
    ]
    assert statuses == [200] * (settings.AXES_FAILURE_LIMIT - 1) + [429]


def test_a_good_login_with_a_nul_in_the_user_agent_works(settings):
    get_user_model().objects.create_user("support4", password="right-password-123", is_staff=True)
    response = Client().post(
        reverse("admin:login"),
        {"username": "support4", "password": "right-password-123"},
        HTTP_USER_AGENT="curl\x00/8",
    )
    assert response.status_code == 302


def test_the_admin_says_whose_it_is(admin_client):
    response = admin_client.get(reverse("admin:index"))
    assert "Lifecycle back-office" in response.content.decode()


def test_behind_a_proxy_one_clients_failures_do_not_lock_the_login_out_for_another(settings):
    """Behind a proxy every request comes from the proxy's address: counted by it, five wrong
    passwords from anywhere would lock a staff login out for everyone."""
    settings.TRUSTED_PROXY_COUNT = 1
    get_user_model().objects.create_user("support7", password="right-password-123", is_staff=True)
    via_proxy = {"REMOTE_ADDR": "10.0.0.2"}
    fail_logins(Client(), "support7", settings.AXES_FAILURE_LIMIT, HTTP_X_FORWARDED_FOR="198.51.100.1", **via_proxy)
    locked = Client().post(
        reverse("admin:login"),
        {"username": "support7", "password": "right-password-123"},
        HTTP_X_FORWARDED_FOR="198.51.100.1",
        **via_proxy,
    )
    assert locked.status_code == 429
    other = Client().post(
        reverse("admin:login"),
        {"username": "support7", "password": "right-password-123"},
        HTTP_X_FORWARDED_FOR="203.0.113.2",
        **via_proxy,
    )
    assert other.status_code == 302


def test_without_a_trusted_proxy_a_forged_forwarded_header_does_not_dodge_the_lock_out(settings):
    """A client that writes a new X-Forwarded-For on every try is still one address."""
    get_user_model().objects.create_user("support6", password="right-password-123", is_staff=True)
    for n in range(settings.AXES_FAILURE_LIMIT):
        fail_logins(Client(), "support6", 1, HTTP_X_FORWARDED_FOR=f"198.51.100.{n + 1}")
    response = Client().post(
        reverse("admin:login"),
        {"username": "support6", "password": "right-password-123"},
        HTTP_X_FORWARDED_FOR="203.0.113.99",
    )
    assert response.status_code == 429


def test_an_ipv6_client_is_locked_out_by_its_slash_64(settings):
    """One host holds a whole /64: a wrong password from each of five of its addresses locks the login
    out for all of them, not for another /64."""
    settings.TRUSTED_PROXY_COUNT = 1
    get_user_model().objects.create_user("support3", password="right-password-123", is_staff=True)
    via_proxy = {"REMOTE_ADDR": "10.0.0.2"}
    for n in range(settings.AXES_FAILURE_LIMIT):
        fail_logins(Client(), "support3", 1, HTTP_X_FORWARDED_FOR=f"2001:db8:1:2::{n + 1:x}", **via_proxy)
    right = {"username": "support3", "password": "right-password-123"}
    same = Client().post(reverse("admin:login"), right, HTTP_X_FORWARDED_FOR="2001:db8:1:2:ffff::1", **via_proxy)
    assert same.status_code == 429
    other = Client().post(reverse("admin:login"), right, HTTP_X_FORWARDED_FOR="2001:db8:1:3::1", **via_proxy)
    assert other.status_code == 302


def test_a_list_without_the_sidebar_does_not_make_the_app_list(admin_client):
    """The wide lists hide the sidebar, so the app list it shows is never made for them."""
    from django.utils.functional import empty

    response = admin_client.get(reverse("admin:tokens_token_changelist"))
    assert response.status_code == 200 and 'id="nav-sidebar"' not in response.content.decode()
    assert response.context["available_apps"]._wrapped is empty


def test_the_sidebar_and_the_app_pages_still_list_the_apps(admin_client):
    """Where a page shows the app list (the sidebar, an app's index), it is Django's, whole."""
    page = admin_client.get(reverse("admin:tokens_job_changelist")).content.decode()
    assert 'id="nav-sidebar"' in page and reverse("admin:tokens_token_changelist") in page
    assert reverse("admin:accounts_account_changelist") in page
    app_index = admin_client.get(reverse("admin:app_list", args=["tokens"]))
    assert app_index.status_code == 200 and reverse("admin:tokens_job_changelist") in app_index.content.decode()
    assert admin_client.get("/admin/nonexistent/").status_code == 404
