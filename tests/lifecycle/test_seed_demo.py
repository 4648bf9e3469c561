"""seed_demo: demo accounts in every state, once, and the local staff logins."""

import io

import pytest
from django.core.management import CommandError, call_command

from accounts.models import Account, AccountStatus

pytestmark = pytest.mark.django_db


class TestSeedDemo:
    def test_refuses_to_run_with_debug_off(self, settings):
        settings.DEBUG = False
        with pytest.raises(CommandError, match="runs only with DEBUG on"):
            call_command("seed_demo", stdout=io.StringIO())
        assert not Account.objects.exists()

    def test_loads_accounts_in_every_state_once_and_prints_the_admin_login(self, settings, monkeypatch):
        settings.DEBUG = True
        monkeypatch.setenv("DEMO_ADMIN_PASSWORD", "demo-pass-123")
        out = io.StringIO()
        call_command("seed_demo", stdout=out)
        call_command("seed_demo", stdout=out)
        assert "Loaded 150 demo accounts." in out.getvalue()
        assert "Demo accounts already loaded." in out.getvalue()
        assert "Admin login: admin / demo-pass-123" in out.getvalue()
        assert "Support login: support / demo-pass-123" in out.getvalue()
        assert "Auditor login: auditor / demo-pass-123" in out.getvalue()
        statuses = set(Account.objects.values_list("status", flat=True))
        assert statuses == {AccountStatus.PROVISIONED, AccountStatus.ACTIVE, AccountStatus.SUSPENDED}
        assert Account.objects.count() == 150
        assert Account.objects.dates("created_at", "day").count() > 10  # spread for the dashboard's chart
