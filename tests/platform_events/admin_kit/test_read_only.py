"""The read-only list's pieces (platform_events/admin_kit/read_only.py)."""

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
