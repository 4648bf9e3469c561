"""The audit trail in the admin (lifecycle/audit_trail/admin.py), as support staff and auditors read it:
rows name their account by login and e-mail; a login or e-mail finds an account's whole trail; one
account's trail is a link (?account=<id>) that says what it is filtered to; diffs read as labels and
times; rows link to their detail page and to every row of their request; read-only throughout."""

import json
import re
import uuid
from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from accounts.services import account_suspend
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.context import audit_context
from platform_events.audit.models import AuditEvent
from tests.support import admin_action, connect_as_owner
from tokens.links import secret_to_text
from tokens.selectors import live_token
from tokens.services import token_consume, token_send_password_recovery

pytestmark = pytest.mark.django_db

TRAIL = reverse("admin:platform_events_auditevent_changelist")


def text(response) -> str:
    """The page as a person reads it: no tags, one space between words."""
    return shown(response.content.decode())


def shown(html: str) -> str:
    """HTML as a person reads it: each tag a space (a <br> parts two lines), one space between words; a
    <wbr> (where a long name may wrap) is none."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html.replace("<wbr>", "")))


def rows(response) -> list[AuditEvent]:
    assert response.status_code == 200, response.status_code
    return list(response.context["cl"].result_list)


def row_html(response, event) -> str:
    """The HTML of one row of the list, the whole <tr> holding its detail link (the time column comes
    before the link: a row cut from the link would hold only the diff's times, which the event's own
    time matches only while both fall in the same second)."""
    page = response.content.decode()
    link = page.index(reverse("admin:platform_events_auditevent_change", args=[event.pk]))
    return page[page.rindex("<tr", 0, link) : page.index("</tr>", link)]


def delete_account(sql, account) -> None:
    """Delete an account as the retention does (its tokens go with it), each deletion audited."""
    sql("DELETE FROM accounts WHERE id = %s", [account.pk])


@pytest.fixture
def jane(support):
    """An active account, suspended by support (with a reason), sent a recovery e-mail first."""
    account = AccountFactory(active=True, login="jane", email="Jane@Example.com")
    with audit_context(reason="support sent a recovery e-mail, reason: lost phone"):
        token_send_password_recovery(account=account, actor=None)
    admin_action(support, "suspend", [account], reason="chargeback")
    return account


class TestRowsNameTheirAccount:
    def test_an_account_row_names_the_account_by_login_and_email_with_a_link_to_its_page(self, support, jane):
        response = support.get(TRAIL)
        suspended = AuditEvent.objects.get(action="account.suspended")
        html = row_html(response, suspended)
        assert f'<a href="{reverse("admin:accounts_account_change", args=[jane.pk])}">jane</a>' in html
        assert "Jane@Example.com" in html

    def test_a_token_row_names_the_account_its_diff_names(self, support, jane):
        """token.issued is about a token; the row names the token and its account, by login and e-mail."""
        response = support.get(TRAIL)
        issued = AuditEvent.objects.filter(action="token.issued", diff_after__action="password_recovery").get()
        row = shown(row_html(response, issued))
        assert f"token {issued.resource_id} of account jane" in row and "Jane@Example.com" in row

    def test_a_deleted_accounts_rows_keep_its_login_and_email(self, support, jane, sql):
        """Its rows, its tokens' rows and its deletion name it from what the trail kept, marked deleted, unlinked."""
        delete_account(sql, jane)
        response = support.get(TRAIL)
        for action in ("account.suspended", "token.issued", "account.deleted"):
            event = AuditEvent.objects.filter(action=action).first()
            html = row_html(response, event)
            assert "jane (deleted)" in shown(html) and "Jane@Example.com" in html, action
            assert reverse("admin:accounts_account_change", args=[jane.pk]) not in html

    def test_an_auditor_sees_the_names_without_links_to_pages_it_may_not_open(self, auditor, jane):
        response = auditor.get(TRAIL)
        assert "jane" in text(response)
        page = response.content.decode()
        assert reverse("admin:accounts_account_change", args=[jane.pk]) not in page
        assert "/admin/tokens/token/" not in page

    def test_a_page_costs_the_same_queries_for_two_accounts_or_twelve(self, support):
        """Names come with the rows (subqueries of one SELECT), not one query per row."""

        def queries_for_the_list() -> int:
            with CaptureQueriesContext(connection) as queries:
                assert support.get(TRAIL).status_code == 200
            return len(queries)

        AccountFactory.create_batch(2, active=True)
        few = queries_for_the_list()
        AccountFactory.create_batch(10, active=True)
        assert queries_for_the_list() == few


class TestSearch:
    def test_a_login_finds_the_accounts_rows_and_its_tokens_rows(self, support, jane):
        AccountFactory(login="joe", email="joe@example.com")
        found = rows(support.get(TRAIL, {"q": "JANE"}))
        assert {(e.resource_type, e.account_ref) for e in found} == {("account", str(jane.pk)), ("token", str(jane.pk))}
        assert {"account.suspended", "token.issued", "token.consumed"} <= {e.action for e in found}

    def test_an_email_finds_the_same_trail_ignoring_case(self, support, jane):
        by_login = rows(support.get(TRAIL, {"q": "jane"}))
        assert rows(support.get(TRAIL, {"q": " jane@example.COM "})) == by_login

    def test_a_deleted_accounts_login_and_email_still_find_its_trail(self, support, jane, sql):
        delete_account(sql, jane)
        for term in ("jane", "jane@example.com"):
            found = rows(support.get(TRAIL, {"q": term}))
            assert {"account.created", "account.suspended", "token.issued", "account.deleted"} <= {
                e.action for e in found
            }
            assert {e.account_ref for e in found} == {str(jane.pk)}, term

    def test_a_resource_id_still_finds_its_rows(self, support, jane):
        found = rows(support.get(TRAIL, {"q": str(jane.pk)}))
        assert {e.resource_id for e in found} == {str(jane.pk)}

    def test_search_by_actor_id_of_either_kind(self, support):
        """Actor ids say their kind: account:<id> finds what the account did, staff:<id> what the staff member did."""
        account = AccountFactory(login="jane")
        token_consume(secret=bytes(live_token(account=account).secret), actor=account)
        admin_action(support, "suspend", [account], reason="chargeback")
        staff = AuditEvent.objects.get(action="account.suspended").actor_id
        by_account = rows(support.get(TRAIL, {"q": f"account:{account.pk}"}))
        by_staff = rows(support.get(TRAIL, {"q": staff}))
        assert {e.action for e in by_account} == {"account.activated", "token.consumed"}
        assert [e.action for e in by_staff] == ["account.suspended"] and staff.startswith("staff:")

    def test_search_by_correlation_or_request_id(self, support, jane):
        event = AuditEvent.objects.get(action="account.suspended")
        assert rows(support.get(TRAIL, {"q": str(event.request_id)})) == [event]

    @pytest.mark.parametrize("term", ["nobody", "nobody@example.com", "x" * 300, "%", "jane%"])
    def test_a_term_that_names_nothing_finds_nothing(self, support, jane, term):
        assert rows(support.get(TRAIL, {"q": term})) == []

    def test_a_term_with_a_nul_is_refused_with_a_message(self, support, jane):
        """Django's search form refuses it (and lists every row, unsearched); nothing reaches the database."""
        response = support.get(TRAIL, {"q": "ja\x00ne"})
        assert response.status_code == 200 and "Null characters are not allowed." in text(response)


class TestOneAccountsTrail:
    def test_lists_the_accounts_rows_and_its_tokens_rows_only(self, support, jane):
        AccountFactory(login="joe")
        found = rows(support.get(TRAIL, {"account": jane.pk}))
        assert {e.account_ref for e in found} == {str(jane.pk)}
        assert {"account.created", "token.issued", "token.consumed", "account.suspended"} <= {e.action for e in found}

    def test_says_which_account_with_a_link_that_shows_all_rows(self, support, jane):
        response = support.get(TRAIL, {"account": jane.pk})
        assert "Filtered to account jane (Jane@Example.com) — show all rows" in text(response)
        assert '<a href="?">show all rows</a>' in response.content.decode()

    def test_keeps_other_filters_and_its_link_to_all_rows_keeps_them_too(self, support, jane):
        response = support.get(TRAIL, {"account": jane.pk, "action__exact": "token.issued"})
        assert {e.action for e in rows(response)} == {"token.issued"}
        assert '<a href="?action__exact=token.issued">show all rows</a>' in response.content.decode()

    def test_a_deleted_accounts_trail_is_still_named(self, support, jane, sql):
        delete_account(sql, jane)
        response = support.get(TRAIL, {"account": jane.pk})
        assert "account.deleted" in {e.action for e in rows(response)}
        assert "Filtered to account jane (Jane@Example.com), deleted" in text(response)

    def test_an_id_nothing_names_gives_an_empty_list_that_says_so(self, support, jane):
        response = support.get(TRAIL, {"account": 987654})
        assert rows(response) == []
        assert "Filtered to account #987654, not known" in text(response)

    @pytest.mark.parametrize("value", ["abc", "", "1.5", "-1", "²", "9" * 19, "1\x00"])
    def test_a_value_that_is_no_account_id_answers_400_with_a_message(self, support, jane, value, settings):
        settings.DEBUG = False
        response = support.get(TRAIL, {"account": value})
        assert response.status_code == 400
        assert "This link does not work" in response.content.decode()

    def test_the_old_link_of_the_account_page_lists_its_own_rows_and_offers_its_tokens(self, support, jane):
        """?resource_type=account&resource_id=<id> keeps working (old links), says so, and links to ?account=."""
        response = support.get(TRAIL, {"resource_type": "account", "resource_id": jane.pk})
        assert {(e.resource_type, e.resource_id) for e in rows(response)} == {("account", str(jane.pk))}
        assert "Filtered to account jane (Jane@Example.com), its own rows only" in text(response)
        assert f'<a href="?account={jane.pk}">with its tokens&#x27; rows</a>' in response.content.decode()


class TestDiffs:
    def test_a_change_reads_label_before_after_with_a_dash_for_nothing(self, support, jane):
        response = support.get(TRAIL)
        row = shown(row_html(response, AuditEvent.objects.get(action="account.suspended")))
        assert "status: active → suspended" in row
        assert re.search(r"suspended at: — → \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\b", row), row
        assert "suspended_at" not in row and "None" not in row

    def test_times_are_in_the_admins_time_zone_to_the_second(self, support, jane, settings):
        settings.TIME_ZONE = "Asia/Kolkata"  # UTC+05:30: no hour-only offset hides a wrong zone
        event = AuditEvent.objects.get(action="account.suspended")
        expected = timezone.localtime(event.occurred_at).strftime("%Y-%m-%d %H:%M:%S")
        suspended_at = timezone.localtime(timezone.datetime.fromisoformat(event.diff_after["suspended_at"])).strftime(
            "%Y-%m-%d %H:%M:%S"
        )
        row = shown(row_html(support.get(TRAIL), event))
        assert expected in row and f"suspended at: — → {suspended_at}" in row
        assert row.strip().startswith(expected)  # the time column's, not only the diff's
        assert "+00:00" not in row and not re.search(r":\d\d\.\d{6}", row)

    @pytest.mark.django_db(transaction=True)
    def test_a_credential_in_a_diff_is_never_shown(self, support):
        """Rows written before the triggers hid them (or by hand) show "(hidden)", on the list and the detail page."""
        before, after = {"code": "12345", "secret": "\\xdeadbeef"}, {"code": "54321", "account": 1}
        written_by_owner("token.history_rewritten", "token", before, after)
        event = AuditEvent.objects.get(action="token.history_rewritten")
        for page in (support.get(TRAIL), support.get(detail_url(event))):
            assert "12345" not in page.content.decode() and "54321" not in page.content.decode()
            assert "deadbeef" not in page.content.decode() and "(hidden)" in text(page)


def written_by_owner(action: str, resource_type: str, before: dict, after: dict) -> None:
    """An audit row as only the owner can write one (by hand, or an old trigger's), committed."""
    with connect_as_owner(autocommit=True) as owner:
        owner.execute(
            "SELECT audit_record(%s, %s, '1', %s, %s)", [action, resource_type, json.dumps(before), json.dumps(after)]
        )


def detail_url(event) -> str:
    change = reverse("admin:platform_events_auditevent_change", args=[event.pk])
    return f"{change}?{urlencode({'at': event.occurred_at.isoformat()})}"


class TestTheList:
    def test_each_row_links_to_its_detail_page_with_the_reason_and_diff_in_full(self, support, jane):
        long_reason = "the bank called again: " + "details of the chargeback " * 10
        with audit_context(reason=long_reason):
            account_suspend(account=AccountFactory(active=True, login="joe"), actor=None)
        event = AuditEvent.objects.get(action="account.suspended", reason=long_reason)
        listed = support.get(TRAIL)
        assert long_reason not in text(listed)  # cut on the list, whole in the title and on the detail page
        assert f'title="{long_reason}"' in row_html(listed, event)
        change = reverse("admin:platform_events_auditevent_change", args=[event.pk])
        link = re.search(rf'href="({change}\?at=[^"]+)"', listed.content.decode()).group(1).replace("&amp;", "&")
        detail = support.get(link)
        assert detail.status_code == 200
        assert long_reason.strip() in text(detail)
        assert "status active suspended" in text(detail)  # the diff's table: field, before, after

    def test_the_detail_page_reads_the_row_by_its_time_and_id(self, support, jane):
        """The table's key is (occurred_at, id): a link with the time reads one key, not every partition."""
        event = AuditEvent.objects.get(action="account.suspended")
        with CaptureQueriesContext(connection) as queries:
            assert support.get(detail_url(event)).status_code == 200
        reads = [q["sql"] for q in queries.captured_queries if 'FROM "audit_events"' in q["sql"]]
        assert reads and all('"audit_events"."occurred_at" =' in sql for sql in reads[:1]), reads

    def test_the_detail_page_opens_without_the_time_too(self, support, jane):
        event = AuditEvent.objects.get(action="account.suspended")
        response = support.get(reverse("admin:platform_events_auditevent_change", args=[event.pk]))
        assert response.status_code == 200 and "chargeback" in text(response)

    def test_without_the_time_the_row_is_read_by_its_id_index(self, support, jane, sql):
        """Not every partition's key read whole (the key leads with the time): the hash index on id
        (platform_events/sql/0030_admin_reads.sql), plan read with seq scans off as on a large table."""
        event = AuditEvent.objects.get(action="account.suspended")
        sql("SET LOCAL enable_seqscan = off")
        with CaptureQueriesContext(connection) as queries:
            assert support.get(reverse("admin:platform_events_auditevent_change", args=[event.pk])).status_code == 200
        (query, *_) = [q["sql"] for q in queries.captured_queries if 'FROM "audit_events"' in q["sql"]]
        plan = "\n".join(row for (row,) in sql(f"EXPLAIN {query}"))
        assert "_id_idx" in plan and not re.search(r"audit_events\w*_pkey", plan), plan

    @pytest.mark.parametrize("at", ["yesterday", "2026-13-45T00:00:00+00:00", "2026-01-01T00:00:00"])
    def test_a_detail_link_with_a_bad_time_still_opens_the_row(self, support, jane, at):
        event = AuditEvent.objects.get(action="account.suspended")
        url = reverse("admin:platform_events_auditevent_change", args=[event.pk])
        assert support.get(url, {"at": at}).status_code == 200

    @pytest.mark.django_db(transaction=True)
    def test_text_from_a_row_is_escaped_never_markup(self, support):
        """A reason, and a diff value, are whatever someone typed: the list shows them as text."""
        markup = '<img src=x onerror="alert(1)">'
        with audit_context(reason=markup + "x" * 80):  # cut, so the title holds it too
            account_suspend(account=AccountFactory(active=True, login="joe", email="joe@example.com"), actor=None)
        page = support.get(TRAIL).content.decode()
        assert "<img src=x" not in page and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page

    @pytest.mark.django_db(transaction=True)
    def test_a_diff_value_is_escaped_never_markup(self, support):
        written_by_owner("account.changed", "account", {"email": "a@example.com"}, {"email": "<b>bold</b>"})
        page = support.get(TRAIL).content.decode()
        assert "<b>bold</b>" not in page and "&lt;b&gt;bold&lt;/b&gt;" in page

    @pytest.mark.django_db(transaction=True)  # the owner's row is committed: the clean-up after such tests removes it
    def test_a_long_diff_shows_three_lines_and_the_rest_under_more(self, support):
        before = {f"field_{n}": n for n in range(5)}
        after = {f"field_{n}": n + 1 for n in range(5)}
        written_by_owner("account.changed", "account", before, after)
        html = row_html(support.get(TRAIL), AuditEvent.objects.get(action="account.changed"))
        listed_lines, _, more = html.partition("<details>")
        assert shown(listed_lines).count("→") == 3
        assert "<summary>2 more</summary>" in more and "field 4" in more

    def test_request_and_correlation_ids_link_to_all_rows_they_wrote(self, support):
        correlation = uuid.uuid4()
        accounts = AccountFactory.create_batch(2, active=True)
        with audit_context(correlation_id=correlation):
            admin_action(support, "suspend", accounts, reason="fraud ring")
        AccountFactory(active=True)
        suspended = AuditEvent.objects.filter(action="account.suspended")
        request_id = suspended.first().request_id
        html = support.get(TRAIL).content.decode()
        assert f'href="{TRAIL}?request_id={request_id}"' in html
        assert f'href="{TRAIL}?correlation_id={correlation}"' in html
        for parameter, value in (("request_id", request_id), ("correlation_id", correlation)):
            response = support.get(TRAIL, {parameter: value})
            assert set(rows(response)) == set(suspended), parameter
            assert f"Filtered to {parameter.split('_')[0]} {value} — show all rows" in text(response)

    def test_the_date_range_keeps_the_rows_of_those_days(self, support, jane):
        today = timezone.localdate()
        inside = support.get(TRAIL, {"occurred_at__range__gte": today, "occurred_at__range__lte": ""})
        before = support.get(TRAIL, {"occurred_at__range__lte": today - timedelta(days=1)})
        assert rows(inside) and rows(before) == []

    def test_the_account_page_links_to_its_audit_trail_which_shows_the_diff(self, support, jane):
        """The account page's "Audit trail" opens the account's trail, its tokens' rows included."""
        page = support.get(reverse("admin:accounts_account_change", args=[jane.pk])).content.decode()
        link = f"{TRAIL}?account={jane.pk}"
        assert link in page
        trail = support.get(link)
        assert {e.resource_type for e in rows(trail)} == {"account", "token"}
        assert "status: active → suspended" in text(trail)


class TestActors:
    def test_each_row_names_the_database_role_that_wrote_it_beside_the_claimed_actor(self, support):
        """A runtime-role session can claim any actor by SET LOCAL; the role it wrote as is shown too."""
        account = AccountFactory(active=True)
        admin_action(support, "suspend", [account], reason="chargeback")
        assert "support1 staff from 127.0.0.1, as lifecycle_app" in text(support.get(TRAIL))

    def test_an_account_acting_for_itself_is_shown_as_an_account(self, support):
        """The kind in the actor's id is shown, so an end user is not taken for a staff member."""
        account = AccountFactory(login="jane")
        token_consume(secret=bytes(live_token(account=account).secret), actor=account)
        assert "jane account, as lifecycle_app" in text(support.get(TRAIL))


class TestReadOnly:
    def test_no_audit_or_admin_page_shows_a_secret_or_code(self, support):
        account = AccountFactory()
        token = live_token(account=account)
        event = AuditEvent.objects.filter(action="token.issued").first()
        for url in (
            TRAIL,
            f"{TRAIL}?account={account.pk}",
            detail_url(event),
            reverse("admin:accounts_account_change", args=[account.pk]),
            reverse("admin:tokens_token_changelist"),
        ):
            page = support.get(url).content.decode()
            assert token.code not in page and secret_to_text(token.secret) not in page

    def test_the_detail_page_changes_nothing(self, support, jane):
        event = AuditEvent.objects.get(action="account.suspended")
        response = support.post(detail_url(event), {"reason": "rewritten"})
        assert response.status_code == 403
        assert AuditEvent.objects.get(pk=event.pk).reason == "chargeback"
