"""The read-only list's pieces (platform_events/admin_kit/read_only.py)."""

import html

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
