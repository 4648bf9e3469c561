"""Staff privileges in the audit trail, in a real browser at 1366×768: a superuser makes a Support login
superuser and Auditor on its admin page, and the audit list reads those changes (and a grant typed in
SQL by the runtime role) as sentences that fit the screen. With SCREENSHOTS set, each page is saved."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import connection

from tests.browser.conftest import PASSWORD, SCREEN, log_in, navigating, needs_chromium, shoot, staff_user
from tests.browser.test_audit_trail_in_a_browser import table_fits

pytestmark = [pytest.mark.django_db(transaction=True), needs_chromium]


def test_a_superuser_grant_made_in_the_admin_reads_as_sentences_in_the_trail(browser, live_server):
    get_user_model().objects.create_superuser("admin", password=PASSWORD)
    sam = staff_user("sam", "Support")
    support = Group.objects.get(name="Support")
    permission = Permission.objects.get(codename="change_user", content_type__app_label="auth")
    with connection.cursor() as cursor:  # the runtime role, as psql
        cursor.execute(
            "INSERT INTO auth_group_permissions (group_id, permission_id) VALUES (%s, %s)", [support.pk, permission.pk]
        )
    page = browser.new_page(viewport=SCREEN)
    log_in(page, live_server, "admin")

    page.goto(f"{live_server.url}/admin/auth/user/{sam.pk}/change/")
    page.check("#id_is_superuser")
    page.select_option("#id_groups_from", label="Auditor")  # the two-list widget: chosen, then moved across
    page.click("#id_groups_add")
    navigating(page, lambda: page.click("input[name=_save]"))
    assert get_user_model().objects.get(pk=sam.pk).is_superuser

    page.goto(f"{live_server.url}/admin/platform_events/auditevent/?resource_type=staff_user&resource_id={sam.pk}")
    shoot(page, "audit-list-staff-user")
    table = page.locator("#result_list")
    assert table_fits(page)
    text = table.inner_text()
    assert "made superuser" in text and "added to group Auditor" in text and "staff user sam" in text
    made = table.locator("tbody tr").filter(has_text="made superuser")
    assert "admin" in made.inner_text() and "staff from" in made.inner_text()

    page.goto(f"{live_server.url}/admin/platform_events/auditevent/?resource_type=group&resource_id={support.pk}")
    shoot(page, "audit-list-group")
    assert "permission auth.change_user granted to group Support" in page.locator("#result_list").inner_text()
