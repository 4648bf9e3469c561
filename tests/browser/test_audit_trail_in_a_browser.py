"""The audit trail in a real browser (Playwright driving Debian's Chromium against a live server), at
1366×768: Support reads one account's trail with its token events and opens a row's detail; an
Auditor exports the filtered trail as CSV. With SCREENSHOTS set, each page is also saved there."""

import csv
import io
import uuid
from pathlib import Path

import pytest
from django.db import connection, transaction

from accounts.services import account_suspend
from lifecycle.demo.factories import AccountFactory
from platform_events.api.clients import api_client_create, api_client_revoke
from platform_events.audit.context import audit_context
from platform_events.audit.models import AuditAction, AuditEvent
from platform_events.db.history import history_rewrite
from tests.browser.conftest import SCREEN, log_in, needs_chromium, shoot, staff_user
from tokens.services import token_send_password_recovery

pytestmark = [pytest.mark.django_db(transaction=True), needs_chromium]
RECOVERY_REASON = "support sent a recovery e-mail, reason: the customer called from a new phone and lost access"


def table_fits(page) -> bool:
    """Whether the list's table fits its box and the page the screen (no column cut off or scrolled to)."""
    table, box, whole = page.evaluate(
        "[document.querySelector('#result_list').scrollWidth, document.querySelector('.results').clientWidth,"
        " document.documentElement.scrollWidth]"
    )
    return table <= box and whole <= SCREEN["width"]


@pytest.fixture
def jane():
    """An account with a trail: created, activated, a recovery e-mail sent by support, suspended; beside
    it another account whose rows must stay out of jane's trail."""
    jane = AccountFactory(active=True, login="jane", email="jane@example.com")
    AccountFactory(active=True, login="joe", email="joe@example.com")
    support = staff_user("support1", "Support")
    with audit_context(reason=RECOVERY_REASON, origin=origin()):
        token_send_password_recovery(account=jane, actor=support)
    chargeback = "chargeback reported by the bank on 2026-11-20, card ending 4242; see ticket 1187"
    with audit_context(reason=chargeback, origin=origin()):
        account_suspend(account=jane, actor=support)
    return jane


def origin() -> dict:
    """Where a staff action came from, as a request would give it (its own request id)."""
    return {
        "actor_ip": "192.0.2.7",
        "actor_user_agent": "Mozilla/5.0 (X11; Linux x86_64)",
        "request_id": str(uuid.uuid4()),
    }


def test_the_audit_trail_of_one_account_with_its_token_events(browser, live_server, jane):
    page = browser.new_page(viewport=SCREEN)
    log_in(page, live_server, "support1")

    page.goto(f"{live_server.url}/admin/platform_events/auditevent/")
    shoot(page, "audit-list")
    table = page.locator("#result_list")
    assert table_fits(page)
    assert table.locator("th:has-text('Changes')").is_visible()
    assert "joe" in table.inner_text()

    # The account page's History button links here (?account=<id>).
    page.goto(f"{live_server.url}/admin/platform_events/auditevent/?account={jane.pk}")
    shoot(page, "audit-list-one-account")
    banner = page.locator(".narrowed").inner_text()
    assert "Filtered to account jane (jane@example.com)" in banner and "show all rows" in banner
    rows = table.locator("tbody tr")
    text = table.inner_text()
    assert "joe" not in text
    assert "token.issued" in text and "account.suspended" in text and "account.created" in text
    recovery = rows.filter(has_text="token.issued").filter(has_text="password_recovery")
    assert recovery.count() == 1
    assert "of account jane" in recovery.inner_text()
    assert "support sent a recovery e-mail" in recovery.inner_text()
    assert table_fits(page)

    suspended = rows.filter(has_text="account.suspended")
    assert "status: active → suspended" in suspended.inner_text()
    with page.expect_navigation():
        suspended.locator("th a").click()
    shoot(page, "audit-detail")
    detail = page.locator("#content-main").inner_text()
    assert "card ending 4242; see ticket 1187" in detail  # the reason in full, cut on the list
    assert "suspended at" in detail and "active" in detail

    page.goto(f"{live_server.url}/admin/platform_events/auditevent/?account={jane.pk}")
    with page.expect_navigation():
        page.click(".narrowed a:text('show all rows')")
    assert "joe" in page.locator("#result_list").inner_text()
    page.close()


def test_the_list_fits_the_screen_with_the_longest_names_and_values(browser, live_server, jane):
    """At 1366×768 beside the filters, with the widest a row gets (one of the longest action names, and
    long values cut to their 40 characters in the changes), no column is cut off or scrolled to, and the
    page has no horizontal scroll."""
    client, _ = api_client_create(name="partner-billing-integration-production", scopes=["accounts:read"], actor=None)
    api_client_revoke(client=client, reason="rotated after the partner's engineer left the company", actor=None)
    with transaction.atomic(), history_rewrite(), connection.cursor() as cursor:
        cursor.execute("UPDATE accounts SET created_at = created_at - interval '30 days' WHERE id = %s", [jane.pk])
    assert AuditEvent.objects.filter(action="account.history_rewritten").exists()
    page = browser.new_page(viewport=SCREEN)
    log_in(page, live_server, "support1")
    page.goto(f"{live_server.url}/admin/platform_events/auditevent/")
    shoot(page, "audit-list-longest")
    assert page.evaluate("document.documentElement.scrollWidth") <= SCREEN["width"]
    assert table_fits(page)
    assert "account.history_rewritten" in page.locator("#result_list").inner_text()
    page.close()


def test_csv_export_as_auditor(browser, live_server, jane):
    staff_user("auditor1", "Auditor")
    page = browser.new_page(viewport=SCREEN)
    log_in(page, live_server, "auditor1")
    page.goto(f"{live_server.url}/admin/platform_events/auditevent/?account={jane.pk}")
    shown = page.locator("#result_list tbody tr").count()
    shoot(page, "audit-list-auditor-export")

    with page.expect_download() as download_info:
        page.click("button:text('Export CSV')")
    download = download_info.value
    assert download.suggested_filename.startswith("audit-trail-") and download.suggested_filename.endswith(".csv")
    rows = list(csv.DictReader(io.StringIO(Path(download.path()).read_text())))
    assert len(rows) == shown
    assert {row["account_login"] for row in rows} == {"jane"}
    assert {"token.issued", "account.suspended"} <= {row["action"] for row in rows}

    exported = AuditEvent.objects.get(action=AuditAction.AUDIT_EXPORTED)
    assert exported.actor_display == "auditor1" and exported.resource_id == download.suggested_filename
    assert exported.diff_after["rows"] == shown and exported.diff_after["query"] == f"account={jane.pk}"
    page.close()
