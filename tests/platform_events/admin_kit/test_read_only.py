"""The read-only list's pieces (platform_events/admin_kit/read_only.py)."""

import html
import types
from urllib.parse import urlencode

import pytest
from django.contrib import admin

from accounts.models import Account
from platform_events.admin_kit.read_only import QuickCheckboxes


@pytest.mark.parametrize("login", ["jane", 'x<y>&"z'])
def test_a_rows_checkbox_is_djangos_own_markup(login):
    """The same input Django's widget renders (name, value, class, its label escaped once), written out."""
    account = Account(pk=7, login=login, email="jane@example.com")
    ours = QuickCheckboxes().action_checkbox(account)
    assert ours == admin.ModelAdmin.action_checkbox(admin.site.get_model_admin(Account), account)
    assert 'value="7"' in ours and "<y>" not in ours


def test_a_checkbox_for_a_key_that_needs_escaping_is_djangos_own_markup():
    """A text key (e.g. a webhook delivery's or a session's): escaped once in the value, as the widget does."""
    row = type("Row", (), {"pk": "x\"<y>&'z", "__str__": lambda self: "row <1>"})()
    ours = QuickCheckboxes().action_checkbox(row)
    assert ours == admin.ModelAdmin.action_checkbox(admin.site.get_model_admin(Account), row)
    assert "<y>" not in ours and "<1>" not in ours


@pytest.mark.django_db
@pytest.mark.parametrize("query", ["", "?q=jane", "?status__exact=active&q=jane%20"])
def test_a_rows_link_carries_the_lists_filters_as_djangos_own_does(admin_client, query):
    """The row's page leads back to the same list: its link is what Django's add_preserved_filters
    makes of the row's URL, without resolving it."""
    from django.contrib.admin.templatetags.admin_urls import add_preserved_filters
    from django.urls import reverse

    from lifecycle.demo.factories import AccountFactory

    account = AccountFactory(active=True, login="jane")
    response = admin_client.get(reverse("admin:accounts_account_changelist") + query)
    changelist = response.context["cl"]
    expected = add_preserved_filters(
        {"preserved_filters": response.context["preserved_filters"], "opts": changelist.opts},
        reverse("admin:accounts_account_change", args=[account.pk]),
    )
    assert f'href="{html.escape(expected)}"' in response.content.decode()


@pytest.mark.django_db
def test_an_audit_rows_link_carries_its_time_and_the_lists_filters(admin_client):
    """A list that adds to the row's link (the audit trail's ?at=) keeps the filters beside it."""
    from django.contrib.admin.templatetags.admin_urls import add_preserved_filters
    from django.urls import reverse

    from lifecycle.demo.factories import AccountFactory

    AccountFactory()
    response = admin_client.get(
        reverse("admin:platform_events_auditevent_changelist"), {"action__exact": "account.created"}
    )
    assert response.status_code == 200, response
    (event, *_) = response.context["cl"].result_list
    changelist = response.context["cl"]
    at = urlencode({"at": event.occurred_at.isoformat()})
    own = f"{reverse('admin:platform_events_auditevent_change', args=[event.pk])}?{at}"
    expected = add_preserved_filters(
        {"preserved_filters": response.context["preserved_filters"], "opts": changelist.opts}, own
    )
    assert "_changelist_filters" in expected and "at=" in expected
    assert f'href="{html.escape(expected)}"' in response.content.decode()


def test_a_rows_key_is_written_as_reverse_writes_it():
    """Keys that need the admin's quoting and the URL's: the same link as Django's own ChangeList."""
    from django.contrib.admin.views.main import ChangeList
    from django.urls import reverse

    from platform_events.admin_kit.read_only import QuickRowLinks

    links = QuickRowLinks.__new__(QuickRowLinks)
    links.opts, links.pk_attname, links.row_filters = Account._meta, "id", {}
    links.model_admin = admin.site.get_model_admin(Account)
    for key in (7, "a b/c_d?é", "x%2Fy", "it's(1)!*~"):
        row = types.SimpleNamespace(id=key)
        assert links.url_for_result(row) == ChangeList.url_for_result(links, row)
    assert links.change_url == reverse("admin:accounts_account_change", args=["0pk0"])


@pytest.mark.django_db
def test_a_search_shorter_than_a_page_is_read_once_and_not_counted(admin_client):
    """The first page, read with a row more, is the whole list: no count (a search's count reads the
    same indexes again); the rows in the order Django's list gives them (exact, start, the rest)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from lifecycle.demo.factories import AccountFactory

    for login in ("mary.jane", "janet", "jane", "joe"):
        AccountFactory(login=login)
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(reverse("admin:accounts_account_changelist"), {"q": "jane"})
    changelist = response.context["cl"]
    assert [account.login for account in changelist.result_list] == ["jane", "janet", "mary.jane"]
    assert list(changelist.result_list) == list(changelist.queryset)
    assert changelist.result_count == 3 and "3 accounts" in response.content.decode()
    assert not [query for query in queries if "COUNT(" in query["sql"]]


@pytest.mark.django_db
def test_a_list_longer_than_a_page_is_counted_and_shows_djangos_first_page(admin_client, monkeypatch):
    """One row more than a page: the list is counted as before, and its first page is Django's."""
    from django.contrib.admin import site
    from django.urls import reverse

    from accounts.models import Account
    from lifecycle.demo.factories import AccountFactory

    monkeypatch.setattr(site._registry[Account], "list_per_page", 2)
    for login in ("mary.jane", "janet", "jane", "joe"):
        AccountFactory(login=login)
    response = admin_client.get(reverse("admin:accounts_account_changelist"), {"q": "jane"})
    changelist = response.context["cl"]
    assert changelist.result_count == 3 and changelist.multi_page
    djangos = changelist.model_admin.get_paginator(response.wsgi_request, changelist.queryset, 2).page(1).object_list
    assert [account.login for account in changelist.result_list] == ["jane", "janet"] == [a.login for a in djangos]


def _djangos_and_ours(client, params: dict):
    """The account list's rows, page flags and count as the kit made them, and as Django's own
    ChangeList.get_results makes them from the same list."""
    import copy

    from django.contrib.admin.views.main import ChangeList
    from django.urls import reverse

    response = client.get(reverse("admin:accounts_account_changelist"), params)
    ours = response.context["cl"]
    djangos = copy.copy(ours)
    ChangeList.get_results(djangos, response.wsgi_request)
    return [
        (
            [account.login for account in changelist.result_list],
            changelist.result_count,
            changelist.multi_page,
            changelist.can_show_all,
        )
        for changelist in (djangos, ours)
    ]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "params", [{"q": "jane"}, {"q": "jane", "o": "-1"}, {"q": "nobody"}, {"status__exact": "active"}, {"q": "joe"}]
)
def test_page_one_read_before_counting_is_djangos(admin_client, monkeypatch, params):
    from django.contrib.admin import site

    from lifecycle.demo.factories import AccountFactory

    monkeypatch.setattr(site._registry[Account], "list_per_page", 2)
    for login in ("mary.jane", "janet", "jane", "joe"):
        AccountFactory(login=login, active=login != "joe")

    djangos, ours = _djangos_and_ours(admin_client, params)

    assert ours == djangos


@pytest.mark.django_db
def test_page_one_with_orphans_is_djangos(admin_client, monkeypatch):
    """A paginator with orphans puts them on the last page, which may be page 1: Django's reading then."""
    from django.contrib.admin import site

    from lifecycle.demo.factories import AccountFactory

    model_admin = site._registry[Account]
    get_paginator = model_admin.get_paginator
    monkeypatch.setattr(model_admin, "list_per_page", 2)
    monkeypatch.setattr(
        model_admin,
        "get_paginator",
        lambda request, queryset, per_page, orphans=1, **kwargs: get_paginator(
            request, queryset, per_page, orphans, **kwargs
        ),
    )
    for login in ("jane", "janet", "jane.b"):
        AccountFactory(login=login)

    djangos, ours = _djangos_and_ours(admin_client, {"q": "jane"})

    assert ours == djangos and len(ours[0]) == 3
