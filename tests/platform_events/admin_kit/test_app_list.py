"""The sidebar's app list written by the admin kit (platform_events/admin_kit/app_list.py): Django's own
HTML, element for element (blank lines aside)."""

import re

import pytest
from django.test.html import parse_html
from django.urls import reverse

from lifecycle.demo.factories import AccountFactory
from platform_events.admin_kit.app_list import app_list_html
from tests.support import as_shown, staff_client
from tests.support import djangos_admin_template as djangos

pytestmark = pytest.mark.django_db


def sidebar(page: str) -> str:
    return re.search(r'<button class="sticky toggle-nav-sidebar".*?</nav>', page, re.DOTALL)[0]


def assert_same_html(ours: str, theirs: str):
    assert parse_html(ours) == parse_html(theirs)
    assert as_shown(ours) == as_shown(theirs)


@pytest.mark.parametrize("staff", ["superuser", "Support", "Integrator"])
def test_an_account_pages_sidebar_is_djangos(admin_client, staff):
    """The account page's sidebar, for a superuser (every model, add links) and staff of two roles (what
    their permissions show), with the current app and model marked as Django marks them; written by the kit."""
    account = AccountFactory()
    client = admin_client if staff == "superuser" else staff_client(staff)
    url = reverse("admin:accounts_account_change", args=[account.pk])
    response = client.get(url)
    if staff == "Integrator":  # no permission on accounts: the sidebar of a page it may see
        response = client.get(reverse("admin:platform_events_webhooksubscription_add"))
    assert response.status_code == 200
    page = response.content.decode()
    theirs = djangos(
        "nav_sidebar.html", {"available_apps": response.context["available_apps"], "request": response.wsgi_request}
    )
    assert_same_html(sidebar(page), theirs)
    assert '<table><caption><a href="' in sidebar(page)  # the kit's, not Django's template (blank lines)
    assert "current-model" in sidebar(page) and 'aria-current="page"' in sidebar(page)


def test_the_app_list_with_change_links_is_djangos(rf, admin_user):
    """With change and view links (as the index page shows them), an add link or none, a model without a
    page, and a model name that needs escaping."""
    request = rf.get("/admin/accounts/account/")
    app_list = [
        {
            "name": "Accounts & <co>",
            "app_label": "accounts",
            "app_url": "/admin/accounts/",
            "models": [
                {
                    "name": "Accounts",
                    "object_name": "Account",
                    "admin_url": "/admin/accounts/account/",
                    "add_url": None,
                    "view_only": True,
                },
                {
                    "name": "Nodes <b>&amp; co</b>",
                    "object_name": "Node",
                    "admin_url": "/admin/accounts/node/",
                    "add_url": "/admin/accounts/node/add/",
                    "view_only": False,
                },
                {"name": "Hidden", "object_name": "Hidden", "admin_url": None, "add_url": None},
            ],
        }
    ]
    for show_changelinks in (True, False):
        theirs = djangos(
            "app_list.html", {"app_list": app_list, "request": request, "show_changelinks": show_changelinks}
        )
        assert_same_html(app_list_html(app_list, request.path, show_changelinks=show_changelinks), theirs)


def test_an_empty_app_list_is_djangos(rf):
    """Nothing to show: Django's sentence."""
    request = rf.get("/admin/")
    theirs = djangos("app_list.html", {"app_list": [], "request": request, "show_changelinks": False})
    assert_same_html(app_list_html([], request.path, show_changelinks=False), theirs)
