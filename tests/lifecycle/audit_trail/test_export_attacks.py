"""Attacks on the audit trail's CSV export (lifecycle/audit_trail/export.py): auditors only, by POST
with the CSRF token, itself audited; no 500 for a bad query, no spreadsheet formula and no credential
in a cell."""

import csv
import io

import pytest

from accounts.services import account_suspend
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.context import audit_context
from platform_events.audit.models import AuditEvent
from tests.support import act_url, csrf_client, quiet, staff_client
from tokens.links import secret_to_text
from tokens.models import Token

pytestmark = [pytest.mark.attack, pytest.mark.django_db]

EXPORT = "/admin/platform_events/auditevent/export/"


def test_export_is_refused_to_support(support):
    AccountFactory(active=True)
    response = quiet(support).post(EXPORT)
    assert response.status_code == 403
    assert not AuditEvent.objects.filter(action="audit.exported").exists()


def test_export_by_get_exports_nothing_and_records_nothing(auditor):
    AccountFactory(active=True)
    response = quiet(auditor).get(EXPORT)
    assert response.status_code == 302
    assert not AuditEvent.objects.filter(action="audit.exported").exists()


def test_export_without_csrf_is_refused():
    AccountFactory(active=True)
    client = csrf_client("Auditor", "auditor_csrf")
    response = client.post(EXPORT)
    assert response.status_code == 403
    assert not AuditEvent.objects.filter(action="audit.exported").exists()


def export_rows(client, query="") -> list[dict]:
    response = client.post(EXPORT + (f"?{query}" if query else ""))
    assert response.status_code == 200, response.status_code
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def test_export_is_itself_audited_with_its_query(auditor):
    account = AccountFactory(active=True)
    rows = export_rows(auditor, f"account={account.pk}")
    assert rows
    exported = AuditEvent.objects.get(action="audit.exported")
    assert exported.diff_after["query"] == f"account={account.pk}"
    assert exported.diff_after["rows"] == len(rows)
    assert exported.actor_id.startswith("staff:")


def test_export_filtered_to_one_account_holds_only_that_account(auditor):
    mine, other = AccountFactory(active=True), AccountFactory(active=True, login="other", email="other@example.com")
    rows = export_rows(auditor, f"account={mine.pk}")
    assert rows and all(row["account_id"] == str(mine.pk) for row in rows)
    assert "other@example.com" not in str(rows)
    assert other


@pytest.mark.parametrize("query", ["q=" + "x" * 100_000, "q=a%00b", "account=1e3", "o=99", "request_id=x"])
def test_export_with_bad_query_never_500s(auditor, query):
    AccountFactory(active=True)
    response = quiet(auditor).post(f"{EXPORT}?{query}")
    assert response.status_code in (200, 302, 400), response.status_code


FORMULAS = ['=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(1)", "\t=1", "\r=1"]


@pytest.mark.parametrize("formula", FORMULAS)
def test_export_guards_formulas_in_reason_and_user_agent(auditor, formula):
    account = AccountFactory(active=True)
    client = staff_client("Support", "support_ua")
    client.post(act_url(account.pk), {"confirm": "yes", "reason": f"x{formula}"}, HTTP_USER_AGENT=formula)
    with audit_context(reason=formula):
        account_suspend(account=AccountFactory(active=True), actor=None)
    rows = export_rows(auditor)
    cells = [cell for row in rows for cell in row.values()]
    assert cells
    for cell in cells:
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), repr(cell)


def test_export_holds_no_credential(auditor):
    account = AccountFactory()
    token = Token.objects.filter(account=account).latest("id")
    rows = export_rows(auditor)
    text = str(rows)
    assert secret_to_text(token.secret) not in text
    assert bytes(token.secret).hex() not in text
    assert f'"code": "{token.code}"' not in text


@pytest.mark.parametrize("separator", [";", ",", "\t", "|"])
def test_export_guards_a_formula_after_a_separator_inside_a_cell(auditor, separator):
    """Opened with ";" (or a tab) as the list separator, "Mozilla/5.0;=3+4;x" would be three cells, the
    second a formula: every cell is quoted, and a formula start after a separator is neutralised."""
    agent = f"Mozilla/5.0{separator}=3+4{separator}x{separator}@SUM(1){separator}-2"
    client = staff_client("Support", "support_sep")
    client.post(act_url(AccountFactory(active=True).pk), {"confirm": "yes", "reason": agent}, HTTP_USER_AGENT=agent)
    response = auditor.post(EXPORT)
    text = b"".join(response.streaming_content).decode()
    assert agent not in text
    cells = [cell for row in csv.reader(io.StringIO(text)) for cell in row]
    pieces = [piece for cell in cells for piece in cell.split(separator)]
    assert [piece for piece in pieces if piece.startswith(("=", "+", "-", "@"))] == []
    assert text.startswith('"occurred_at"') or text.startswith('"')  # every cell quoted, the header's too


@pytest.mark.parametrize("line_break", ["\n", "\r\n"])
def test_export_guards_a_formula_after_a_line_break_inside_a_cell(auditor, line_break):
    """A reason typed on two lines: a spreadsheet that reads the file with another list separator loses
    track of the quotes, and a line break inside a cell then starts a row whose first cell is a formula."""
    reason = f'chargeback{line_break}=HYPERLINK("http://x"){line_break}+1'
    with audit_context(reason=reason):
        account_suspend(account=AccountFactory(active=True), actor=None)
    response = auditor.post(EXPORT)
    text = b"".join(response.streaming_content).decode()
    cells = [cell for row in csv.reader(io.StringIO(text)) for cell in row]
    pieces = [piece for cell in cells for piece in cell.splitlines()]
    assert "chargeback" in text
    assert [piece for piece in pieces if piece.startswith(("=", "+", "-", "@"))] == []
