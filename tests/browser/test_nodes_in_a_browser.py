"""Storage nodes in a real browser (Playwright driving Debian's Chromium against a live server): an
Integrator reads the nodes' loads, marks one downed with a reason from the list's action, and the node
is downed and audited; a superuser reads an account's assignments on its page.

With SCREENSHOTS set, each page is also saved there at 1366×768."""

import pytest
from django.contrib.auth import get_user_model

from accounts.nodes import services
from accounts.nodes.models import Node
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.models import AuditEvent
from tests.browser.conftest import PASSWORD, SCREEN, log_in, navigating, needs_chromium, shoot, staff_user

pytestmark = [pytest.mark.django_db(transaction=True), needs_chromium]

SERVICE = "sync-1.5"


def nodes_at_several_loads() -> None:
    services.service_add(service=SERVICE, pattern="{node}/1.5/{uid}")
    services.service_add(service="sync-1.1", pattern="{node}/1.1/{uid}")
    for url, capacity, load, downed, backoff in (
        ("https://sync-1.us-west.example.com", 1000, 120, False, False),
        ("https://sync-2.us-west.example.com", 1000, 560, False, True),
        ("https://sync-3.us-east.example.com", 800, 760, False, False),
        ("https://sync-4.us-east.example.com", 500, 505, True, False),
    ):
        services.node_add(
            service=SERVICE, node=url, capacity=capacity, current_load=load, downed=downed, backoff=backoff, actor=None
        )
    services.node_add(service="sync-1.1", node="https://legacy-1.example.com", capacity=50, current_load=3, actor=None)


def test_an_integrator_marks_a_node_downed_with_a_reason(browser, live_server):
    staff_user("integrator1", "Integrator")
    nodes_at_several_loads()
    page = browser.new_page(viewport=SCREEN)
    log_in(page, live_server, "integrator1")

    page.goto(f"{live_server.url}/admin/accounts/node/")
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == 5
    assert "95% · 760 / 800" in rows.filter(has_text="sync-3").inner_text()
    shoot(page, "nodes-list")

    page.check("#result_list tbody tr:has-text('sync-3') input.action-select")
    page.select_option("select[name=action]", "mark_downed")
    navigating(page, lambda: page.click("button[name=index]"))
    assert "A downed node is given no new account" in page.locator("#content").inner_text()
    page.click("input[type=submit][value='Mark the selected nodes downed']")  # no reason: the browser asks
    assert page.locator("#id_reason:invalid").count() == 1
    page.fill("#id_reason", "Disk errors on sync-3; draining it.")
    shoot(page, "nodes-confirm-downed")
    navigating(page, lambda: page.click("input[type=submit][value='Mark the selected nodes downed']"))

    assert page.locator(".messagelist").inner_text() == "1 node marked downed."
    assert Node.objects.get(node="https://sync-3.us-east.example.com").downed is True
    event = AuditEvent.objects.get(action="node.changed")
    assert (event.actor_display, event.reason, event.diff_after) == (
        "integrator1",
        "Disk errors on sync-3; draining it.",
        {"downed": True},
    )
    shoot(page, "nodes-list-after")

    navigating(page, lambda: page.click("a.addlink"))
    page.select_option("#id_service", label=SERVICE)
    page.fill("#id_node", "https://sync-3.us-east.example.com")
    page.fill("#id_capacity", "10")
    navigating(page, lambda: page.click("input[name=_save]"))
    assert "nodes: the service already has a node of that name" in page.locator(".errorlist").inner_text()
    assert Node.objects.count() == 5
    shoot(page, "nodes-add-refused")


def test_a_superuser_reads_an_accounts_assignments_on_its_page(browser, live_server):
    get_user_model().objects.create_superuser("root", password=PASSWORD)
    nodes_at_several_loads()
    account = AccountFactory(active=True)
    first = services.assignment_allocate(
        service=SERVICE, account_id=account.id, client_state="aabbccddeeff00112233445566778899", keys_changed_at=1000
    )
    services.assignment_update(first, client_state="0123456789abcdef0123456789abcdef", keys_changed_at=2000)
    services.assignment_allocate(service="sync-1.1", account_id=account.id, generation=3)
    page = browser.new_page(viewport=SCREEN)
    log_in(page, live_server, "root")

    page.goto(f"{live_server.url}/admin/accounts/account/{account.pk}/change/")
    section = page.locator("#node_assignments-group")
    text = section.inner_text()
    assert "sync-1.5" in text and "sync-1.1" in text and "replaced" in text and "live" in text
    assert "aabbcc…" in text and "aabbccddeeff00112233445566778899" not in page.content()
    section.scroll_into_view_if_needed()
    shoot(page, "nodes-account-page")
