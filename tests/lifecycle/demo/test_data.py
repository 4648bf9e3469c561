"""seed_demo: demo accounts in every state, once, and the local staff logins."""

import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from accounts.models import Account, AccountStatus
from accounts.nodes.models import Node, NodeAssignment
from lifecycle.demo.data import DEMO_ASSIGNED, DEMO_NODES, DEMO_SERVICE

pytestmark = pytest.mark.django_db


class TestSeedDemo:
    def test_refuses_to_run_with_debug_off(self, settings):
        settings.DEBUG = False
        with pytest.raises(CommandError, match="runs only with DEBUG on"):
            call_command("seed_demo", stdout=io.StringIO())
        assert not Account.objects.exists()

    def test_loads_accounts_in_every_state_once_and_prints_the_logins(self, settings, monkeypatch):
        settings.DEBUG = True
        monkeypatch.setenv("DEMO_ADMIN_PASSWORD", "demo-pass-123")
        out = io.StringIO()
        call_command("seed_demo", stdout=out)
        call_command("seed_demo", stdout=out)
        assert "Loaded 157 demo accounts." in out.getvalue()
        assert "Demo accounts already loaded." in out.getvalue()
        assert "Admin login: admin / demo-pass-123" in out.getvalue()
        assert "Admin login: admin (exists; password unchanged" in out.getvalue()
        statuses = set(Account.objects.values_list("status", flat=True))
        assert statuses == set(AccountStatus)
        assert Account.objects.count() == 157
        assert Account.objects.dates("created_at", "day").count() > 10  # spread for the dashboard's chart

    def test_each_staff_login_has_its_own_password(self, settings, monkeypatch):
        """Each login its own password: with one shared password, Support would know the superuser's."""
        settings.DEBUG = True
        monkeypatch.setenv("DEMO_ADMIN_PASSWORD", "demo-pass-123")
        out = io.StringIO()
        call_command("seed_demo", stdout=out)
        printed = dict(re.findall(r"(\w+) login: \w+ / (\S+)", out.getvalue()))
        assert set(printed) == {"Admin", "Support", "Auditor", "Integrator", "Privacy"}
        assert len(set(printed.values())) == 5
        support = get_user_model().objects.get(username="support")
        assert not support.check_password(printed["Admin"])
        assert support.check_password(printed["Support"])

    def test_force_never_resets_an_existing_staff_password(self, settings, monkeypatch):
        """--force (demo data with DEBUG off) leaves a staff login's existing password as it is."""
        settings.DEBUG = False
        user = get_user_model().objects.create_user("support", password="chosen-by-support", is_staff=True)
        monkeypatch.setenv("DEMO_SUPPORT_PASSWORD", "demo-pass-456")
        out = io.StringIO()
        call_command("seed_demo", "--force", stdout=out)
        user.refresh_from_db()
        assert user.check_password("chosen-by-support")
        assert "Support login: support (exists; password unchanged" in out.getvalue()

    def test_two_demo_password_variables_holding_one_password_are_refused_and_nothing_is_made(
        self, settings, monkeypatch
    ):
        """Each login its own password: an operator who sets one value twice would share the admin's again."""
        settings.DEBUG = True
        monkeypatch.setenv("DEMO_ADMIN_PASSWORD", "same-pass-123")
        monkeypatch.setenv("DEMO_AUDITOR_PASSWORD", "same-pass-123")
        with pytest.raises(CommandError, match="DEMO_ADMIN_PASSWORD and DEMO_AUDITOR_PASSWORD hold the same password"):
            call_command("seed_demo", stdout=io.StringIO())
        assert not get_user_model().objects.exists()
        assert not Account.objects.exists()

    def test_loads_a_sync_service_whose_nodes_hold_some_active_accounts_one_node_downed(self, settings):
        """The node admin has something to show: several loads, a downed node, replaced rows."""
        settings.DEBUG = True
        call_command("seed_demo", stdout=io.StringIO())
        nodes = list(Node.objects.filter(service__service=DEMO_SERVICE).order_by("node"))
        assert [node.node for node in nodes] == sorted(url for url, _ in DEMO_NODES)
        assert sum(node.current_load for node in nodes) == DEMO_ASSIGNED  # the live ones: replaced rows hold no slot
        assert len({node.load_percent for node in nodes}) == len(nodes)
        assert [node.downed for node in nodes] == [False, False, False, True]
        live = NodeAssignment.objects.filter(replaced_at=None)
        assert live.count() == DEMO_ASSIGNED
        assert set(Account.objects.filter(node_assignments__in=live).values_list("status", flat=True)) == {
            AccountStatus.ACTIVE
        }
