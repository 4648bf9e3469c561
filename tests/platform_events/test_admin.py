"""The audit trail in the admin: read-only, linked from an account, searchable by actor and request id."""

import pytest
from django.urls import reverse

from lifecycle.factories import AccountFactory
from platform_events.models import AuditEvent
from tests.support import admin_action
from tokens.links import secret_to_text
from tokens.selectors import live_token
from tokens.services import token_consume

pytestmark = pytest.mark.django_db


class TestAuditViews:
    def test_the_account_page_links_to_its_audit_trail_which_shows_the_diff(self, support):
        account = AccountFactory(active=True)
        admin_action(support, "suspend", [account], reason="chargeback")
        page = support.get(reverse("admin:accounts_account_change", args=[account.pk])).content.decode()
        link = f"{reverse('admin:platform_events_auditevent_changelist')}?resource_type=account&amp;resource_id={account.pk}"
        assert link in page
        trail = support.get(link.replace("&amp;", "&"))
        events = list(trail.context["cl"].result_list)
        assert {e.resource_id for e in events} == {str(account.pk)}
        assert "status: active → suspended" in trail.content.decode()

    def test_each_row_names_the_database_role_that_wrote_it_beside_the_claimed_actor(self, support):
        """A runtime-role session can claim any actor by SET LOCAL; the role it wrote as is shown too."""
        account = AccountFactory(active=True)
        admin_action(support, "suspend", [account], reason="chargeback")
        page = support.get(reverse("admin:platform_events_auditevent_changelist")).content.decode()
        assert "support1 (staff from 127.0.0.1, as lifecycle_app)" in page

    def test_an_account_acting_for_itself_is_shown_as_an_account(self, support):
        """The kind in the actor's id is shown, so an end user is not taken for a staff member."""
        account = AccountFactory(login="jane")
        token_consume(secret=bytes(live_token(account=account).secret), actor=account)
        page = support.get(reverse("admin:platform_events_auditevent_changelist")).content.decode()
        assert "jane (account, as lifecycle_app)" in page

    def test_search_by_actor_id_of_either_kind(self, support):
        """Actor ids say their kind: account:<id> finds what the account did, staff:<id> what the staff member did."""
        account = AccountFactory(login="jane")
        token_consume(secret=bytes(live_token(account=account).secret), actor=account)
        admin_action(support, "suspend", [account], reason="chargeback")
        staff = AuditEvent.objects.get(action="account.suspended").actor_id
        changelist = reverse("admin:platform_events_auditevent_changelist")
        by_account = support.get(changelist + f"?q=account:{account.pk}").context["cl"].result_list
        by_staff = support.get(changelist + f"?q={staff}").context["cl"].result_list
        assert {e.action for e in by_account} == {"account.activated", "token.consumed"}
        assert [e.action for e in by_staff] == ["account.suspended"] and staff.startswith("staff:")

    def test_search_by_correlation_or_request_id(self, support):
        account = AccountFactory(active=True)
        admin_action(support, "suspend", [account], reason="chargeback")
        event = AuditEvent.objects.get(action="account.suspended")
        response = support.get(reverse("admin:platform_events_auditevent_changelist") + f"?q={event.request_id}")
        assert list(response.context["cl"].result_list) == [event]

    def test_no_audit_or_admin_page_shows_a_secret_or_code(self, support):
        account = AccountFactory()
        token = live_token(account=account)
        for url in (
            reverse("admin:platform_events_auditevent_changelist"),
            reverse("admin:accounts_account_change", args=[account.pk]),
            reverse("admin:tokens_token_changelist"),
        ):
            page = support.get(url).content.decode()
            assert token.code not in page and secret_to_text(token.secret) not in page
