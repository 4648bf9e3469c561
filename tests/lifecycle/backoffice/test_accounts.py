"""The accounts in the admin as support staff and auditors use them: actions with a reason and their
reports, what each role may do, search (exact, prefix, any part) and date ranges."""

import datetime
import html
import re

import pytest
from django.contrib import admin
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from accounts.models import Account, AccountStatus
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.models import AuditEvent
from platform_events.outbox.models import OutboxEvent
from tests.support import admin_action
from tokens.models import Token, TokenAction

pytestmark = pytest.mark.django_db
CHANGELIST = reverse("admin:accounts_account_changelist")


def reported(response) -> list[str]:
    """The messages an action left for the next page, in order."""
    return [str(message) for message in response.context["messages"]]


def statuses(*accounts):
    return [Account.objects.get(pk=a.pk).status for a in accounts]


class TestActions:
    def test_an_action_first_asks_for_a_reason_and_changes_nothing(self, support):
        account = AccountFactory(active=True)
        response = admin_action(support, "suspend", [account])
        assert response.status_code == 200
        assert "Why? (kept in the audit trail)" in response.content.decode()
        assert statuses(account) == [AccountStatus.ACTIVE]

    @pytest.mark.parametrize(
        ("action", "one", "many"),
        [
            ("suspend", "Suspend this account?", "Suspend these 2 accounts?"),
            ("unsuspend", "Unsuspend this account?", "Unsuspend these 2 accounts?"),
            (
                "resend_activation",
                "Send this account a new activation e-mail?",
                "Send these 2 accounts a new activation e-mail?",
            ),
            (
                "send_password_recovery",
                "Send this account a password-recovery e-mail?",
                "Send these 2 accounts a password-recovery e-mail?",
            ),
        ],
    )
    def test_the_confirmation_asks_what_the_action_does_to_one_account_or_many(self, support, action, one, many):
        """Each action's confirmation names what it does and how many accounts it does it to; the reason's
        field asks why."""
        first, second = AccountFactory.create_batch(2)
        asked_one = admin_action(support, action, [first]).context
        asked_many = admin_action(support, action, [first, second]).context
        assert asked_one["question"].startswith(one) and asked_many["question"].startswith(many)
        assert "selected" not in asked_one["question"] + asked_many["question"]
        assert asked_one["form"]["reason"].label == "Why? (kept in the audit trail)"

    def test_an_empty_reason_is_refused(self, support):
        account = AccountFactory(active=True)
        response = admin_action(support, "suspend", [account], reason="   ")
        assert "This field is required." in response.content.decode()
        assert statuses(account) == [AccountStatus.ACTIVE]

    def test_suspending_one_account_leaves_an_audit_row_with_the_staff_user_and_reason(self, support):
        account = AccountFactory(active=True)
        response = admin_action(support, "suspend", [account], reason="chargeback")
        assert reported(response) == ["1 account suspended."]
        event = (
            AuditEvent.objects.filter(resource_type="account", resource_id=str(account.pk))
            .order_by("occurred_at")
            .last()
        )
        assert (event.action, event.actor_type, event.actor_display, event.reason) == (
            "account.suspended",
            "USER",
            "support1",
            "chargeback",
        )
        assert str(event.actor_ip) == "127.0.0.1"
        assert event.request_id is not None

    def test_behind_a_trusted_proxy_the_audit_row_names_the_client_not_the_proxy(self, support, settings):
        """Behind a proxy every request comes from the proxy's address: the row names the client the
        trusted proxy saw, not the proxy."""
        settings.TRUSTED_PROXY_COUNT = 1
        account = AccountFactory(active=True)
        admin_action(
            support,
            "suspend",
            [account],
            reason="chargeback",
            REMOTE_ADDR="10.0.0.2",
            HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.7",
        )
        event = AuditEvent.objects.get(action="account.suspended", resource_id=str(account.pk))
        assert str(event.actor_ip) == "203.0.113.7"

    def test_without_a_trusted_proxy_a_forged_forwarded_header_is_not_recorded(self, support):
        account = AccountFactory(active=True)
        admin_action(support, "suspend", [account], reason="chargeback", HTTP_X_FORWARDED_FOR="203.0.113.7")
        event = AuditEvent.objects.get(action="account.suspended", resource_id=str(account.pk))
        assert str(event.actor_ip) == "127.0.0.1"

    def test_a_nul_byte_in_the_user_agent_is_a_space_not_a_server_error(self, support):
        """PostgreSQL text cannot hold NUL: the trail keeps a space instead, and the action is no 500."""
        account = AccountFactory(active=True)
        response = admin_action(support, "suspend", [account], reason="chargeback", HTTP_USER_AGENT="curl\x00/8")
        assert response.status_code == 200
        event = AuditEvent.objects.get(action="account.suspended", resource_id=str(account.pk))
        assert event.actor_user_agent == "curl /8"  # each NUL a space, as RFC 9110 (section 5.5) allows

    def test_a_long_user_agent_is_cut_to_512_characters_in_the_audit_row(self, support):
        """Any client writes its own User-Agent; the trail keeps enough of it to tell browsers apart."""
        account = AccountFactory(active=True)
        admin_action(support, "suspend", [account], reason="chargeback", HTTP_USER_AGENT="Mozilla/5.0 " + "x" * 5000)
        event = AuditEvent.objects.get(action="account.suspended", resource_id=str(account.pk))
        assert event.actor_user_agent == ("Mozilla/5.0 " + "x" * 5000)[:512]

    def test_several_accounts_report_what_was_done_and_name_what_was_skipped(self, support):
        accounts = AccountFactory.create_batch(3, active=True) + [AccountFactory(suspended=True, login="jdoe")]
        response = admin_action(support, "suspend", accounts, reason="spam wave")
        assert reported(response) == ["3 accounts suspended.", "1 account skipped (already suspended): jdoe."]
        assert statuses(*accounts) == [AccountStatus.SUSPENDED] * 4

    def test_skips_are_grouped_by_reason_in_the_order_of_the_list(self, support):
        accounts = [
            AccountFactory(suspended=True),
            AccountFactory(active=True, login="ann"),
            AccountFactory(login="bob"),
        ]
        response = admin_action(support, "unsuspend", accounts, reason="cleared")
        assert reported(response) == ["1 account unsuspended.", "2 accounts skipped (not suspended): bob, ann."]
        assert statuses(*accounts) == [AccountStatus.ACTIVE, AccountStatus.ACTIVE, AccountStatus.PROVISIONED]

    def test_a_long_skip_list_names_the_first_few_and_counts_the_rest(self, support):
        accounts = [AccountFactory(suspended=True, login=f"user{n}") for n in range(1, 8)]
        response = admin_action(support, "suspend", accounts, reason="spam wave")
        assert reported(response) == [
            "0 accounts suspended.",
            "7 accounts skipped (already suspended): user7, user6, user5, user4, user3 and 2 more.",
        ]

    def test_resend_activation(self, support):
        accounts = [AccountFactory(), AccountFactory(active=True, login="ann")]
        response = admin_action(support, "resend_activation", accounts, reason="lost the e-mail")
        assert reported(response) == [
            "1 activation e-mail queued.",
            "1 account skipped (active, not provisioned): ann.",
        ]
        assert Token.objects.filter(account=accounts[0], action=TokenAction.ACTIVATION).count() == 2

    def test_send_password_recovery(self, support):
        accounts = [AccountFactory(active=True), AccountFactory(login="bob")]
        response = admin_action(support, "send_password_recovery", accounts, reason="asked by phone")
        assert reported(response) == [
            "1 password-recovery e-mail queued.",
            "1 account skipped (provisioned, not active): bob.",
        ]
        assert Token.objects.filter(account=accounts[0], action=TokenAction.PASSWORD_RECOVERY).count() == 1


class TestRoles:
    def test_support_cannot_delete_or_edit_accounts(self, support):
        account = AccountFactory(active=True)
        assert "delete_selected" not in support.get(CHANGELIST).content.decode()
        change = reverse("admin:accounts_account_change", args=[account.pk])
        assert support.post(change, {"status": "suspended", "activated_at": ""}).status_code == 403
        assert (
            support.post(reverse("admin:accounts_account_delete", args=[account.pk]), {"post": "yes"}).status_code
            == 403
        )
        assert statuses(account) == [AccountStatus.ACTIVE]

    def test_support_reads_the_audit_trail_but_cannot_change_it(self, support):
        AccountFactory()
        assert support.get(reverse("admin:platform_events_auditevent_changelist")).status_code == 200
        assert support.get(reverse("admin:platform_events_auditevent_add")).status_code == 403

    def test_an_auditor_reads_the_audit_trail_only(self, auditor):
        account = AccountFactory()
        assert auditor.get(reverse("admin:platform_events_auditevent_changelist")).status_code == 200
        assert auditor.get(CHANGELIST).status_code == 403
        response = admin_action(auditor, "suspend", [account], reason="not mine to do")
        assert response.status_code == 403
        assert statuses(account) == [AccountStatus.PROVISIONED]

    def test_anonymous_users_are_sent_to_login(self, client):
        for url in (CHANGELIST, reverse("admin:platform_events_auditevent_changelist")):
            response = client.get(url)
            assert response.status_code == 302 and reverse("admin:login") in response["Location"]


def listed(response) -> list[str]:
    return [account.login for account in response.context["cl"].result_list]


class TestTheList:
    def test_reads_no_password_or_identity_provider_rows(self, support):
        """The account page joins them for its password and SCIM lines; the list shows neither, and
        loads no password hash."""
        AccountFactory.create_batch(2, active=True)
        with CaptureQueriesContext(connection) as queries:
            assert support.get(CHANGELIST, {"q": "user"}).status_code == 200
        read = " ".join(q["sql"] for q in queries.captured_queries if 'FROM "accounts"' in q["sql"])
        assert "account_passwords" not in read and "scim_users" not in read and "api_clients" not in read


class TestSearch:
    def test_exact_and_prefix_ignoring_case(self, support):
        jane = AccountFactory(email="Jane.Doe@example.com", login="jdoe")
        AccountFactory(email="john@example.com", login="john")
        for term in ("jane.doe@example.com", "JANE", "jdo", " jdoe "):
            response = support.get(CHANGELIST, {"q": term})
            assert list(response.context["cl"].result_list) == [jane], term

    def test_a_domain_or_a_middle_part_finds_the_accounts_exact_match_first(self, support):
        AccountFactory(login="jane", email="jane@acme.test")
        AccountFactory(login="bob", email="bob@example.com")
        AccountFactory(login="joe", email="joe@acme.test")
        AccountFactory(login="acme.test", email="it@example.com")
        assert listed(support.get(CHANGELIST, {"q": "acme.test"})) == ["acme.test", "joe", "jane"]
        assert listed(support.get(CHANGELIST, {"q": "@ACME"})) == ["joe", "jane"]
        assert listed(support.get(CHANGELIST, {"q": "ane"})) == ["jane"]

    def test_pages_of_a_search_keep_its_order(self, support, monkeypatch):
        """Past one page the pages are read tier by tier (TieredPaginator): the same order."""
        monkeypatch.setattr(admin.site._registry[Account], "list_per_page", 2)
        for login in ("mary-jane", "janet", "jane", "bob", "jan"):
            AccountFactory(login=login)
        pages = [listed(support.get(CHANGELIST, {"q": "jane", "p": page})) for page in (1, 2)]
        assert pages == [["jane", "janet"], ["mary-jane"]]

    def test_a_column_sort_chosen_by_staff_wins_over_the_search_order(self, support, monkeypatch):
        monkeypatch.setattr(admin.site._registry[Account], "list_per_page", 2)
        for login in ("mary-jane", "janet", "jane"):
            AccountFactory(login=login)
        pages = [listed(support.get(CHANGELIST, {"q": "jane", "o": "1", "p": page})) for page in (1, 2)]
        assert pages == [["jane", "janet"], ["mary-jane"]]
        assert listed(support.get(CHANGELIST, {"q": "jane", "o": "-1"})) == ["mary-jane", "janet"]

    def test_the_help_text_says_what_a_term_finds(self, support):
        page = support.get(CHANGELIST).content.decode()
        assert "the exact one first, then those that start with it, then those that hold it" in page
        assert "A term without 3 letters or digits in a row finds only starts." in page

    @pytest.mark.parametrize("term", ["%", "_", "\\", "a%", "%%%example", "x" * 5000, "'; --"])
    def test_odd_terms_are_matched_as_written_never_a_server_error(self, support, term):
        AccountFactory(login="jane", email="jane@example.com")
        response = support.get(CHANGELIST, {"q": term})
        assert response.status_code == 200
        assert listed(response) == []

    @pytest.mark.parametrize("term", ["\x00", "ja\x00ne"])
    def test_a_term_holding_a_nul_is_refused_with_a_message_and_the_list_unsearched(self, support, term, monkeypatch):
        """Django's search form refuses it; the order and the pages follow the same (empty) term."""
        monkeypatch.setattr(admin.site._registry[Account], "list_per_page", 1)
        AccountFactory(login="jane")
        AccountFactory(login="bob")
        responses = [support.get(CHANGELIST, {"q": term, "p": page}) for page in (1, 2)]
        assert [response.status_code for response in responses] == [200, 200]
        assert [listed(response) for response in responses] == [["bob"], ["jane"]]
        assert reported(responses[0]) == ["Null characters are not allowed."]

    def test_an_action_on_searched_accounts_runs_on_the_selected_ones(self, support):
        """The search's order reaches the action's queryset too (get_ordering): it still runs."""
        jane, janet = AccountFactory(login="jane", active=True), AccountFactory(login="janet", active=True)
        data = {"action": "suspend", "_selected_action": [jane.pk], "confirm": "yes", "reason": "fraud"}
        response = support.post(f"{CHANGELIST}?q=jane", data, follow=True)
        assert reported(response) == ["1 account suspended."]
        assert statuses(jane, janet) == [AccountStatus.SUSPENDED, AccountStatus.ACTIVE]


class TestDateRanges:
    @pytest.fixture
    def accounts(self):
        """Made now: dates relative to today."""
        return AccountFactory(login="new"), AccountFactory(login="on", suspended=True)

    @pytest.mark.parametrize("field", ["created_at", "activated_at", "suspended_at"])
    def test_each_date_filters_by_a_range(self, support, accounts, field):
        today = timezone.localdate()
        inside = {f"{field}__range__gte": str(today), f"{field}__range__lte": str(today)}
        before = {f"{field}__range__lte": str(today - datetime.timedelta(days=1))}
        expected = ["on", "new"] if field == "created_at" else ["on"]
        assert listed(support.get(CHANGELIST, inside)) == expected
        assert listed(support.get(CHANGELIST, before)) == []

    def test_the_presets_and_never_set_dates_are_still_offered(self, support, accounts):
        response = support.get(CHANGELIST, {"activated_at__isnull": "True"})
        assert listed(response) == ["new"]
        page = response.content.decode()
        assert "Past 7 days" in page and "No date" in page and 'placeholder="From date"' in page

    def test_a_range_and_a_search_together(self, support, accounts):
        today = str(timezone.localdate())
        response = support.get(CHANGELIST, {"q": "example.com", "suspended_at__range__gte": today})
        assert listed(response) == ["on"]

    @pytest.mark.parametrize(
        "query",
        [
            "created_at__range__gte=yesterday",
            "created_at__range__gte=2026-02-30",
            "created_at__range__lte=2026-01-01%00",
            "created_at__range__gte=0001-01-01",
            "created_at__range__lte=9999-12-31",
            "created_at__range__between=2026-01-01",
            "status__range__gte=2026-01-01",
            "created_at__gte=2026-01-01",  # a plain date lookup: no filter of the list reads it
        ],
    )
    def test_a_date_or_parameter_the_filters_cannot_use_answers_400(self, support, query):
        assert support.get(f"{CHANGELIST}?{query}").status_code == 400

    def test_the_last_day_of_the_calendar_west_of_utc_is_a_400_not_a_500(self, support, settings):
        """Its last moment in New York is past year 9999 in UTC, where Python's datetime would overflow."""
        settings.TIME_ZONE = "America/New_York"
        assert support.get(CHANGELIST, {"created_at__range__lte": "9999-12-31"}).status_code == 400
        assert support.get(CHANGELIST, {"created_at__range__lte": "9999-12-30"}).status_code == 200


def test_the_admin_cannot_change_state_behind_the_services(admin_client):
    account = AccountFactory()
    response = admin_client.post(reverse("admin:accounts_account_change", args=[account.pk]), {"status": "active"})
    assert response.status_code == 403
    assert Account.objects.get(pk=account.pk).status == AccountStatus.PROVISIONED


def test_anonymous_users_are_sent_to_login(client):
    response = client.get(reverse("admin:accounts_account_changelist"))
    assert response.status_code == 302
    assert reverse("admin:login") in response["Location"]


def change_page(account):
    return reverse("admin:accounts_account_change", args=[account.pk])


def act_url(account, action):
    return reverse("admin:accounts_account_act", args=[account.pk, action])


class TestAccountPage:
    def test_offers_the_actions_that_apply_to_the_accounts_status(self, support):
        """An active account offers Suspend, the recovery e-mail and Deprovision; a suspended one Unsuspend
        and Deprovision; a deprovisioned one nothing Support may do (Reprovision is Privacy's)."""
        active, suspended = AccountFactory(active=True), AccountFactory(suspended=True)
        deprovisioned = AccountFactory(deprovisioned=True)
        assert support.get(change_page(active)).context["action_buttons"] == [
            (act_url(active, "suspend"), "Suspend"),
            (act_url(active, "send_password_recovery"), "Send a password-recovery e-mail"),
            (act_url(active, "deprovision"), "Deprovision"),
        ]
        assert support.get(change_page(suspended)).context["action_buttons"] == [
            (act_url(suspended, "unsuspend"), "Unsuspend"),
            (act_url(suspended, "deprovision"), "Deprovision"),
        ]
        assert support.get(change_page(deprovisioned)).context["action_buttons"] == []

    def test_an_auditor_gets_no_action_buttons_and_is_refused_the_action(self, auditor, support):
        """The buttons follow the permissions, and so does the action's own URL."""
        account = AccountFactory(active=True)
        assert auditor.get(change_page(account)).status_code == 403  # an Auditor does not see accounts
        assert auditor.post(act_url(account, "suspend"), {"confirm": "yes", "reason": "x"}).status_code == 403
        assert statuses(account) == [AccountStatus.ACTIVE]

    def test_suspending_from_the_page_asks_why_then_suspends_and_returns_to_the_page(self, support):
        account = AccountFactory(active=True)
        asked = support.get(act_url(account, "suspend"))
        assert asked.status_code == 200 and "Suspend this account?" in asked.content.decode()
        assert asked.context["back"] == change_page(account)
        assert asked.context["title"] == f"Suspend: {account.login}"
        assert statuses(account) == [AccountStatus.ACTIVE]

        done = support.post(act_url(account, "suspend"), {"confirm": "yes", "reason": "chargeback"}, follow=True)
        assert done.redirect_chain == [(change_page(account), 302)]
        assert reported(done) == ["1 account suspended."]
        assert statuses(account) == [AccountStatus.SUSPENDED]

    def test_a_get_never_acts(self, support):
        """Only the confirmation's POST acts: a GET with every field in its query string asks again."""
        account = AccountFactory(active=True)
        support.get(act_url(account, "suspend") + "?confirm=yes&reason=x")
        assert statuses(account) == [AccountStatus.ACTIVE]

    def test_an_action_that_no_longer_applies_is_reported_not_done(self, support):
        """Suspending an account someone else suspended meanwhile says it was skipped, and why."""
        account = AccountFactory(suspended=True)
        done = support.post(act_url(account, "suspend"), {"confirm": "yes", "reason": "twice"}, follow=True)
        assert reported(done)[0] == "0 accounts suspended."
        assert account.login in reported(done)[1]

    def test_unknown_action_or_account_is_a_clear_answer_not_a_500(self, support):
        account = AccountFactory(active=True)
        assert support.get(act_url(account, "delete")).status_code == 404
        gone = reverse("admin:accounts_account_act", args=[999_999, "suspend"])
        assert support.get(gone, follow=True).redirect_chain[-1][0] == reverse("admin:index")

    def test_shows_why_by_whom_and_since_when_it_is_suspended(self, support):
        account = AccountFactory(active=True)
        support.post(act_url(account, "suspend"), {"confirm": "yes", "reason": "chargeback <b>reported</b>"})
        page = support.get(change_page(account)).content.decode()
        assert "by support1" in page
        assert "reason: chargeback &lt;b&gt;reported&lt;/b&gt;" in page

    def test_shows_whether_the_account_has_a_password_never_the_hash(self, support):
        from accounts.services import account_password_hash, account_set_password

        account = AccountFactory(active=True)
        assert "none (the account cannot sign in" in support.get(change_page(account)).content.decode()
        password_hash = account_password_hash("a long enough passphrase 7")
        account_set_password(account=account, password_hash=password_hash, actor=account)
        page = support.get(change_page(account)).content.decode()
        assert "password" in page and password_hash not in page and "argon2" not in page

    def test_lists_the_accounts_latest_audit_rows_with_its_tokens(self, support):
        """The account's trail on its page holds its token rows too (the recovery e-mail support sent)."""
        account = AccountFactory(active=True)
        support.post(act_url(account, "send_password_recovery"), {"confirm": "yes", "reason": "asked by phone"})
        trail = support.get(change_page(account)).context["recent_trail"]
        assert [(e.action, e.resource_type, e.reason) for e in trail[:1]] == [
            ("token.issued", "token", "asked by phone")
        ]
        assert {e.action for e in trail} >= {"account.created", "account.activated", "token.issued"}

    def test_the_account_is_read_once(self, support):
        """Its trail, links and buttons come from the account the page read."""
        account = AccountFactory(active=True)
        with CaptureQueriesContext(connection) as queries:
            assert support.get(change_page(account)).status_code == 200
        reads = [q["sql"] for q in queries.captured_queries if q["sql"].startswith('SELECT "accounts"."id"')]
        assert len(reads) == 1, reads

    def test_the_latest_audit_rows_link_to_their_detail_pages_with_their_time(self, support):
        """The audit table's key leads with the time: a link with it reads one partition's key."""
        account = AccountFactory(active=True)
        response = support.get(change_page(account))
        (latest, *_) = response.context["recent_trail"]
        change = reverse("admin:platform_events_auditevent_change", args=[latest.pk])
        link = re.search(rf'href="({change}\?at=[^"]+)"', response.content.decode()).group(1)
        detail = support.get(html.unescape(link))
        assert detail.status_code == 200 and detail.context["original"].occurred_at == latest.occurred_at

    def test_history_is_the_accounts_audit_trail(self, support):
        account = AccountFactory(active=True)
        response = support.get(reverse("admin:accounts_account_history", args=[account.pk]))
        assert response.status_code == 302
        assert response["Location"] == reverse("admin:platform_events_auditevent_changelist") + f"?account={account.pk}"


class TestDeprovisioning:
    """Support deprovisions; only Privacy (and superusers) reprovision."""

    def test_support_deprovisions_with_a_reason_the_trail_and_the_outbox_say_so(self, support):
        account = AccountFactory(active=True)
        response = admin_action(support, "deprovision", [account], reason="asked by e-mail to close it")
        assert reported(response) == ["1 account deprovisioned."]
        assert statuses(account) == [AccountStatus.DEPROVISIONED]
        event = AuditEvent.objects.get(action="account.deprovisioned", resource_id=str(account.pk))
        assert (event.actor_type, event.actor_display, event.reason) == (
            "USER",
            "support1",
            "asked by e-mail to close it",
        )
        assert OutboxEvent.objects.filter(event_type="account.deprovisioned", aggregate_id=str(account.pk)).exists()

    def test_the_deprovision_confirmation_says_what_happens_and_how_to_undo_it(self, support):
        first, second = AccountFactory.create_batch(2, active=True)
        one = admin_action(support, "deprovision", [first]).context["question"]
        many = admin_action(support, "deprovision", [first, second]).context["question"]
        assert one.startswith("Deprovision this account? It can no longer sign in, the links and codes")
        assert "storage node assignments are retired" in one and "fresh activation e-mail" in one
        assert many.startswith("Deprovision these 2 accounts?")
        assert statuses(first, second) == [AccountStatus.ACTIVE] * 2

    def test_support_is_not_offered_reprovision_and_a_forged_post_is_refused(self, support):
        account = AccountFactory(deprovisioned=True)
        page = support.get(CHANGELIST).content.decode()
        assert 'value="deprovision"' in page and 'value="reprovision"' not in page
        admin_action(support, "reprovision", [account], reason="forged")  # the list's: no such action for Support
        assert statuses(account) == [AccountStatus.DEPROVISIONED]
        assert support.post(act_url(account, "reprovision"), {"confirm": "yes", "reason": "forged"}).status_code == 403
        assert statuses(account) == [AccountStatus.DEPROVISIONED]
        assert not AuditEvent.objects.filter(action="account.reprovisioned").exists()

    def test_privacy_reprovisions_and_a_fresh_activation_token_is_issued(self, privacy):
        account = AccountFactory(deprovisioned=True)
        asked = privacy.get(act_url(account, "reprovision"))
        assert asked.context["question"].startswith("Reprovision this account? It goes back to provisioned")
        done = privacy.post(
            act_url(account, "reprovision"), {"confirm": "yes", "reason": "request withdrawn"}, follow=True
        )
        assert reported(done) == ["1 account reprovisioned."]
        assert statuses(account) == [AccountStatus.PROVISIONED]
        event = AuditEvent.objects.get(action="account.reprovisioned", resource_id=str(account.pk))
        assert (event.actor_display, event.reason) == ("privacy1", "request withdrawn")
        assert Token.objects.filter(account=account, action=TokenAction.ACTIVATION, consumed_at=None).exists()

    def test_privacy_deprovisions_too_and_is_offered_only_these(self, privacy):
        active, deprovisioned = AccountFactory(active=True), AccountFactory(deprovisioned=True)
        assert privacy.get(change_page(active)).context["action_buttons"] == [
            (act_url(active, "deprovision"), "Deprovision")
        ]
        assert privacy.get(change_page(deprovisioned)).context["action_buttons"] == [
            (act_url(deprovisioned, "reprovision"), "Reprovision"),
            (act_url(deprovisioned, "erase"), "Erase now"),
        ]

    def test_refusals_are_reported_per_account_in_one_sentence(self, privacy):
        ann, bob = AccountFactory(deprovisioned=True, login="ann"), AccountFactory(active=True, login="bob")
        again = admin_action(privacy, "deprovision", [ann, bob], reason="asked twice")
        assert reported(again) == ["1 account deprovisioned.", "1 account skipped (already deprovisioned): ann."]
        carl = AccountFactory(active=True, login="carl")
        back = admin_action(privacy, "reprovision", [bob, carl], reason="withdrawn")
        assert reported(back) == ["1 account reprovisioned.", "1 account skipped (not deprovisioned): carl."]
        assert statuses(ann, bob, carl) == [
            AccountStatus.DEPROVISIONED,
            AccountStatus.PROVISIONED,
            AccountStatus.ACTIVE,
        ]

    def test_the_page_shows_since_when_by_whom_and_why_it_is_deprovisioned_and_its_dates(self, support):
        account = AccountFactory(active=True)
        support.post(act_url(account, "deprovision"), {"confirm": "yes", "reason": "closed <b>by request</b>"})
        response = support.get(change_page(account))
        page = response.content.decode()
        assert "by support1" in page and "reason: closed &lt;b&gt;by request&lt;/b&gt;" in page
        assert "Deprovisioned at" in page and "Reprovisioned at" in page
        badge = response.context["adminform"].form.instance.status
        assert badge == AccountStatus.DEPROVISIONED

    def test_an_account_that_is_not_deprovisioned_shows_no_deprovisioning(self, support):
        account = AccountFactory(active=True)
        field = admin.site._registry[Account].deprovisioning(Account.objects.get(pk=account.pk))
        assert field == "—"
        assert "by support1" not in support.get(change_page(account)).content.decode()

    def test_the_list_filters_by_deprovisioning_date(self, support):
        AccountFactory(login="gone", deprovisioned=True)
        AccountFactory(login="here", active=True)
        today = str(timezone.localdate())
        assert listed(support.get(CHANGELIST, {"deprovisioned_at__range__gte": today})) == ["gone"]
        assert listed(support.get(CHANGELIST, {"deprovisioned_at__isnull": "True"})) == ["here"]

    def test_the_audit_trail_reads_both_moves_with_who_why_and_the_status_change(self, privacy):
        account = AccountFactory(active=True)
        admin_action(privacy, "deprovision", [account], reason="asked to close it")
        admin_action(privacy, "reprovision", [account], reason="changed their mind")
        page = privacy.get(reverse("admin:platform_events_auditevent_changelist"), {"account": account.pk})
        rows = page.content.decode().split('id="result_list"')[1]
        text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", rows)).split())
        assert "account. reprovisioned" in text and "account. deprovisioned" in text  # wrapped after the dot
        assert "privacy1" in text and "asked to close it" in text and "status: active → deprovisioned" in text
        assert "changed their mind" in text and "status: deprovisioned → provisioned" in text


class TestErasure:
    """Only Privacy (and superusers) erase, one deprovisioned account at a time, from its page."""

    def test_privacy_erases_after_a_page_that_names_what_goes(self, privacy):
        account = AccountFactory(deprovisioned=True, email="gone.person@example.com", login="goneperson")
        asked = privacy.get(act_url(account, "erase"))
        question = asked.context["question"]
        assert question.startswith(f"Erase account #{account.pk} now? This cannot be undone.")
        for named in (
            "gone.person@example.com",
            "goneperson",
            "password",
            "audit trail",
            "webhook deliveries",
            "task queue",
            "staff log-in records",
            "admin's log",
            "account.erased",
            "(erased)",
        ):
            assert named in question, named
        assert statuses(account) == [AccountStatus.DEPROVISIONED]

        done = privacy.post(
            act_url(account, "erase"), {"confirm": "yes", "reason": "asked by gone.person@example.com"}, follow=True
        )

        assert reported(done) == ["Account erased."]
        assert statuses(account) == [AccountStatus.ERASED]
        event = AuditEvent.objects.get(action="account.erased", resource_id=str(account.pk))
        assert (event.actor_display, event.reason) == ("privacy1", "asked by [erased]")
        page = privacy.get(change_page(account)).content.decode()
        assert f"account #{account.pk} (erased)" in page and "by privacy1" in page
        assert "gone.person" not in page and "goneperson" not in page
        assert privacy.get(change_page(account)).context["action_buttons"] == []

    def test_a_blank_reason_is_asked_again_and_nothing_is_erased(self, privacy):
        account = AccountFactory(deprovisioned=True)
        again = privacy.post(act_url(account, "erase"), {"confirm": "yes", "reason": "   "})
        assert again.status_code == 200 and again.context["form"].errors
        assert statuses(account) == [AccountStatus.DEPROVISIONED]

    def test_an_account_not_deprovisioned_is_not_offered_it_and_a_forged_post_is_skipped(self, privacy):
        account = AccountFactory(active=True, login="stillhere")
        assert (act_url(account, "erase"), "Erase now") not in privacy.get(change_page(account)).context[
            "action_buttons"
        ]
        done = privacy.post(act_url(account, "erase"), {"confirm": "yes", "reason": "forged"}, follow=True)
        assert reported(done) == [
            "No account erased.",
            f"1 account skipped (not deprovisioned): account #{account.pk}.",
        ]
        assert statuses(account) == [AccountStatus.ACTIVE]
        assert not AuditEvent.objects.filter(action="account.erased").exists()

    @pytest.mark.attack
    @pytest.mark.parametrize("role", ["Support", "Auditor", "Integrator"])
    def test_no_other_role_may_erase_not_even_by_a_forged_post(self, role):
        from tests.support import staff_client

        client = staff_client(role)
        account = AccountFactory(deprovisioned=True)
        assert client.get(act_url(account, "erase")).status_code in (403, 302)
        assert client.post(act_url(account, "erase"), {"confirm": "yes", "reason": "forged"}).status_code in (403, 302)
        page = client.get(change_page(account))
        if page.status_code == 200:
            assert (act_url(account, "erase"), "Erase now") not in page.context["action_buttons"]
        assert statuses(account) == [AccountStatus.DEPROVISIONED]

    @pytest.mark.attack
    def test_erase_is_no_list_action_even_for_privacy(self, privacy):
        account = AccountFactory(deprovisioned=True)
        assert 'value="erase"' not in privacy.get(CHANGELIST).content.decode()
        admin_action(privacy, "erase", [account], reason="from the list")
        assert statuses(account) == [AccountStatus.DEPROVISIONED]

    @pytest.mark.attack
    def test_an_outsider_is_sent_to_log_in_and_a_cross_site_post_is_refused(self, client):
        from tests.support import csrf_client

        account = AccountFactory(deprovisioned=True)
        response = client.post(act_url(account, "erase"), {"confirm": "yes", "reason": "x"})
        assert response.status_code == 302 and reverse("admin:login") in response["Location"]
        forged = csrf_client("Privacy", "privacy-csrf").post(
            act_url(account, "erase"), {"confirm": "yes", "reason": "x"}
        )
        assert forged.status_code == 403
        assert statuses(account) == [AccountStatus.DEPROVISIONED]


def test_the_account_page_names_the_identity_provider_and_when_it_deleted_the_user(support):
    from accounts.models import ScimUser
    from lifecycle.scim.provisioning import scim_user_delete
    from platform_events.api.clients import api_client_create

    account = AccountFactory(active=True)
    page = reverse("admin:accounts_account_change", args=[account.pk])
    assert "Identity provider:" in support.get(page).content.decode()
    okta = api_client_create(name="okta", scopes=["scim"], actor=None)[0]
    ScimUser.objects.create(account=account, client=okta, user_name="ann@corp.example", external_id="00u-secret")
    shown = support.get(page).content.decode()
    assert "okta, as ann@corp.example (SCIM, since " in shown and "00u-secret" not in shown
    assert "deleted by the provider" not in shown
    scim_user_delete(client=okta, account=account)
    assert "; deleted by the provider on " in support.get(page).content.decode()
