"""The audit trail exported as CSV (lifecycle/audit_trail/export.py, the list's "Export CSV" button):
Auditors and superusers only; the list's own filter and search; streamed and bounded; audited before
it is sent; no cell a spreadsheet would run; no secret."""

import csv
import io

import pytest
from django.http import StreamingHttpResponse
from django.urls import reverse
from django.utils import timezone

from lifecycle.audit_trail import export
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.context import audit_context
from platform_events.audit.models import AuditAction, AuditEvent
from tests.support import admin_action
from tokens.links import secret_to_text
from tokens.selectors import live_token

pytestmark = pytest.mark.django_db

TRAIL = reverse("admin:platform_events_auditevent_changelist")
EXPORT = reverse("admin:platform_events_auditevent_export")


def exported(response) -> list[dict]:
    assert response.status_code == 200, response.status_code
    assert isinstance(response, StreamingHttpResponse)
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def listed(client, query: str) -> list[AuditEvent]:
    return list(client.get(f"{TRAIL}?{query}").context["cl"].result_list)


@pytest.fixture
def jane(support):
    account = AccountFactory(active=True, login="jane", email="jane@example.com")
    admin_action(support, "suspend", [account], reason="chargeback")
    AccountFactory(active=True, login="joe", email="joe@example.com")
    return account


def test_an_auditor_exports_the_rows_the_list_shows_in_its_order(auditor, jane):
    query = f"account={jane.pk}&q=jane"
    rows = exported(auditor.post(f"{EXPORT}?{query}"))
    assert [row["id"] for row in rows] == [str(event.pk) for event in listed(auditor, query)]
    assert {row["account_login"] for row in rows} == {"jane"}
    assert {row["account_email"] for row in rows} == {"jane@example.com"}
    suspended = next(row for row in rows if row["action"] == "account.suspended")
    assert suspended["reason"] == "chargeback" and suspended["actor_display"] == "support1"
    assert '"status": "suspended"' in suspended["diff_after"]


def test_the_file_is_named_and_sent_as_a_download(auditor, jane):
    response = auditor.post(f"{EXPORT}?account={jane.pk}")
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="audit-trail-')


def test_the_export_is_audited_with_who_which_filter_and_how_many_rows(auditor, jane):
    rows = exported(auditor.post(f"{EXPORT}?account={jane.pk}", REMOTE_ADDR="192.0.2.9"))
    event = AuditEvent.objects.get(action=AuditAction.AUDIT_EXPORTED)
    assert (event.actor_display, event.actor_id.split(":")[0], event.actor_ip) == ("auditor1", "staff", "192.0.2.9")
    assert event.resource_type == "audit_trail" and event.resource_id.startswith("audit-trail-")
    assert event.diff_after["query"] == f"account={jane.pk}" and event.diff_after["rows"] == len(rows)
    assert event.request_id is not None


def test_the_exports_own_row_is_not_in_the_file(auditor, jane):
    """The file holds the rows that occurred before the export began."""
    rows = exported(auditor.post(EXPORT))
    assert AuditAction.AUDIT_EXPORTED not in {row["action"] for row in rows}
    assert len(rows) == AuditEvent.objects.exclude(action=AuditAction.AUDIT_EXPORTED).count()


def test_support_may_not_export_and_sees_no_button(support, jane):
    assert "Export CSV" not in support.get(TRAIL).content.decode()
    assert support.post(EXPORT).status_code == 403
    assert not AuditEvent.objects.filter(action=AuditAction.AUDIT_EXPORTED).exists()


def test_auditors_and_superusers_see_the_button_with_the_lists_query(auditor, admin_client, jane):
    for client in (auditor, admin_client):
        page = client.get(f"{TRAIL}?account={jane.pk}").content.decode()
        assert f'action="{EXPORT}?account={jane.pk}"' in page and "Export CSV" in page


def test_a_get_exports_nothing_and_leads_back_to_the_list(auditor, jane):
    """An export writes an audit row: only the list's button (a POST, with its CSRF token) starts one."""
    response = auditor.get(f"{EXPORT}?account={jane.pk}")
    assert response.status_code == 302 and response["Location"] == f"{TRAIL}?account={jane.pk}"
    assert not AuditEvent.objects.filter(action=AuditAction.AUDIT_EXPORTED).exists()


def test_past_the_limit_it_refuses_with_a_message_and_exports_nothing(auditor, jane, monkeypatch):
    limit = len(listed(auditor, f"account={jane.pk}")) - 1
    monkeypatch.setattr(export, "EXPORT_ROW_LIMIT", limit)
    response = auditor.post(f"{EXPORT}?account={jane.pk}", follow=True)
    assert response.redirect_chain[-1][0] == f"{TRAIL}?account={jane.pk}"
    assert f"An export holds at most {limit:,} rows, and this list has more." in response.content.decode()
    assert not AuditEvent.objects.filter(action=AuditAction.AUDIT_EXPORTED).exists()


def test_up_to_the_limit_it_exports(auditor, jane, monkeypatch):
    monkeypatch.setattr(export, "EXPORT_ROW_LIMIT", 2)
    assert len(exported(auditor.post(f"{EXPORT}?action__exact=account.created"))) == 2


@pytest.mark.parametrize("query", ["account=abc", "occurred_at__range__gte=yesterday", "secret=1"])
def test_a_filter_the_list_refuses_exports_nothing(auditor, jane, query):
    assert auditor.post(f"{EXPORT}?{query}").status_code == 400
    assert not AuditEvent.objects.filter(action=AuditAction.AUDIT_EXPORTED).exists()


@pytest.mark.parametrize("reason", ['=HYPERLINK("http://evil.example")', "+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1"])
def test_a_cell_a_spreadsheet_would_run_starts_with_a_quote(auditor, reason):
    with audit_context(reason=reason):
        AccountFactory()
    rows = exported(auditor.post(EXPORT))
    assert {row["reason"] for row in rows if row["action"] == "account.created"} == {"'" + reason}


def test_the_file_holds_no_secret_or_code(auditor):
    account = AccountFactory()
    token = live_token(account=account)
    body = b"".join(auditor.post(EXPORT).streaming_content).decode()
    assert token.code not in body and secret_to_text(token.secret) not in body and bytes(token.secret).hex() not in body


def test_a_credential_a_diff_holds_is_hidden_in_the_file():
    """Rows written before the triggers hid them (or by hand) leave the file as "(hidden)"."""
    event = AuditEvent(
        occurred_at=timezone.now(), action="token.history_rewritten", resource_type="token", resource_id="1",
        actor_type="SYSTEM", actor_id="x", result="SUCCESS",
        diff_before={"code": "12345", "secret": "\\xdeadbeef"}, diff_after={"code": "54321", "account": 1},
    )  # fmt: skip
    body = "".join(export.csv_lines([event]))
    assert "12345" not in body and "54321" not in body and "deadbeef" not in body
    assert '""code"": ""(hidden)""' in body and '""account"": 1' in body


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("Mozilla/5.0;=3+4;x", "Mozilla/5.0;'=3+4;x"),
        ("a,@SUM(1)|-2\t+3", "a,'@SUM(1)|'-2\t'+3"),
        ("Mozilla/5.0 (X11; Linux x86_64)", "Mozilla/5.0 (X11; Linux x86_64)"),  # a space after it: no cell starts
        ('{"a": [1, -2]}', '{"a": [1, -2]}'),
        ("=1;=2", "'=1;'=2"),
    ],
)
def test_a_formula_start_after_a_separator_inside_a_value_is_guarded(value, cell):
    assert export.guarded(value) == cell
