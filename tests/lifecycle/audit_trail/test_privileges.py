"""The rows about staff logins, groups and permissions as the audit pages show them
(lifecycle/audit_trail/privileges.py): one sentence each ("made superuser", "added to group Auditor",
"permission auth.change_user granted to group Support"), about the login or group by name."""

import re
from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.urls import reverse

from lifecycle.audit_trail.privileges import privilege_change, privilege_subject
from platform_events.audit.models import AuditAction, AuditEvent

pytestmark = pytest.mark.django_db

TRAIL = reverse("admin:platform_events_auditevent_changelist")


def shown(html: str) -> str:
    """HTML as a person reads it: each tag a space, one space between words; a <wbr> is none."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html.replace("<wbr>", "")))


def row_text(response, event) -> str:
    """One row of the list as a person reads it."""
    page = response.content.decode()
    link = page.index(reverse("admin:platform_events_auditevent_change", args=[event.pk]))
    return shown(page[page.rindex("<tr", 0, link) : page.index("</tr>", link)])


def row(action: str) -> AuditEvent:
    return AuditEvent.objects.filter(action=action).order_by("-occurred_at").first()


@pytest.fixture
def sam(sql):
    """A Support login made superuser, moved to Auditor, and Support granted auth.change_user: by raw SQL
    as the runtime role."""
    user = get_user_model().objects.create_user("sam", password="an-old-Passw0rd", is_staff=True)
    user.groups.set([Group.objects.get(name="Support")])
    auditor, support = Group.objects.get(name="Auditor"), Group.objects.get(name="Support")
    permission = Permission.objects.get(codename="change_user", content_type__app_label="auth")
    sql("UPDATE auth_user SET is_superuser = true WHERE id = %s", [user.pk])
    sql("INSERT INTO auth_user_groups (user_id, group_id) VALUES (%s, %s)", [user.pk, auditor.pk])
    sql("INSERT INTO auth_group_permissions (group_id, permission_id) VALUES (%s, %s)", [support.pk, permission.pk])
    return user


def test_the_list_reads_each_staff_row_as_a_sentence_about_the_login_or_group(auditor, sam, sql):
    (runtime,) = sql("SELECT session_user")[0]
    response = auditor.get(TRAIL)
    # time, actor (the database role, no one claimed), action, about, reason, changes
    assert f"UTC {runtime} system staff_user.changed staff user sam — made superuser " in row_text(
        response, row("staff_user.changed")
    )
    assert "staff user sam — added to group Auditor " in row_text(response, row("staff_user.group_added"))
    granted = row_text(response, row("group.permission_granted"))
    assert "group Support — permission auth.change_user granted to group Support " in granted


def test_the_detail_page_says_the_sentence_above_the_fields_by_their_labels(auditor, sam):
    event = row("staff_user.changed")
    url = reverse("admin:platform_events_auditevent_change", args=[event.pk])
    page = shown(auditor.get(url, {"at": event.occurred_at.isoformat()}).content.decode())
    assert "Changes: made superuser field before after superuser status no yes username sam " in page


def test_those_who_may_open_the_login_and_group_pages_get_links_to_them(admin_client, auditor, sam):
    user_page = reverse("admin:auth_user_change", args=[sam.pk])
    group_page = reverse("admin:auth_group_change", args=[Group.objects.get(name="Support").pk])
    assert user_page in admin_client.get(TRAIL).content.decode()
    assert group_page in admin_client.get(TRAIL).content.decode()
    page = auditor.get(TRAIL).content.decode()  # an Auditor may not open them
    assert user_page not in page and group_page not in page


def test_a_login_named_like_markup_is_shown_as_text(auditor):
    get_user_model().objects.create_user("<b>x</b>", is_staff=True)
    page = auditor.get(TRAIL).content.decode()
    assert "staff user &lt;b&gt;x&lt;/b&gt;" in page and "<b>x</b>" not in page


def event(action: str, before: dict | None = None, after: dict | None = None, resource_type: str = "staff_user"):
    return SimpleNamespace(action=action, resource_type=resource_type, diff_before=before, diff_after=after)


@pytest.mark.parametrize(
    ("row", "sentence"),
    [
        (event("staff_user.created", None, {"username": "jo", "is_staff": True, "is_superuser": True, "is_active": True}),
         "created (staff, superuser)"),
        (event("staff_user.created", None, {"username": "jo", "is_staff": False, "is_superuser": False, "is_active": False}),
         "created (inactive)"),
        (event("staff_user.changed", {"is_superuser": True, "is_staff": False}, {"is_superuser": False, "is_staff": True}),
         "no longer superuser, made staff"),
        (event("staff_user.changed", {"username": "jo", "is_active": True}, {"username": "joe", "is_active": False}),
         "renamed from jo to joe, deactivated: cannot sign in"),
        (event("staff_user.changed", {"is_active": False}, {"username": "jo", "is_active": True}), "reactivated"),
        (event("staff_user.password_changed", None, {"username": "jo"}), "password changed"),
        (event("staff_user.password_removed", None, {"username": "jo"}), "password removed: no password signs in"),
        (event("staff_user.deleted", {"username": "jo", "is_staff": True, "is_superuser": False, "is_active": True}),
         "deleted (staff)"),
        (event("staff_user.group_removed", {"username": "jo", "group": "Support"}), "removed from group Support"),
        (event("staff_user.permission_granted", None, {"username": "jo", "permission": "auth.view_user"}),
         "permission auth.view_user granted"),
        (event("staff_user.permission_revoked", {"username": "jo", "permission": "auth.view_user"}),
         "permission auth.view_user revoked"),
        (event("group.permission_revoked", {"group": "Support", "permission": "auth.view_user"}, None, "group"),
         "permission auth.view_user revoked from group Support"),
        (event("group.created", None, {"group": "Night"}, "group"), "created"),
        (event("group.renamed", {"group": "Night"}, {"group": "Day"}, "group"), "renamed from Night to Day"),
        (event("group.deleted", {"group": "Day"}, None, "group"), "deleted"),
        (event("permission.renamed", {"permission": "accounts.view_account"}, {"permission": "auth.change_user"},
               "permission"),
         "permission accounts.view_account renamed to auth.change_user: whoever held it holds the new name"),
        (event("content_type.renamed", {"content_type": "accounts.account"}, {"content_type": "auth.user"},
               "content_type"),
         "content type accounts.account renamed to auth.user: its permissions with it"),
        (event("account.suspended", {"status": "active"}, {"status": "suspended"}, "account"), None),
    ],
)  # fmt: skip
def test_each_action_reads_as_a_sentence(row, sentence):
    assert privilege_change(row) == sentence


def test_every_staff_and_group_action_has_a_sentence():
    prefixes = ("staff_user.", "group.", "permission.", "content_type.")
    actions = [action for action in AuditAction.values if action.startswith(prefixes)]
    assert len(actions) == 16
    for action in actions:
        assert privilege_change(event(action, {}, {})), action


def test_a_row_names_its_login_or_group_even_after_a_rename_or_deletion():
    assert privilege_subject(event("staff_user.deleted", {"username": "jo"})) == "jo"
    assert privilege_subject(event("staff_user.changed", {"username": "jo"}, {"username": "joe"})) == "joe"
    assert privilege_subject(event("group.deleted", {"group": "Day"}, None, "group")) == "Day"
    assert privilege_subject(event("account.created", None, {"login": "jo"}, "account")) is None


def test_a_link_to_one_logins_rows_says_its_name_above_the_list_deleted_or_not(auditor, sam, sql):
    narrowed = {"resource_type": "staff_user", "resource_id": sam.pk}
    assert "Filtered to staff user sam — show all rows" in shown(auditor.get(TRAIL, narrowed).content.decode())
    sql("DELETE FROM auth_user_groups WHERE user_id = %s", [sam.pk])
    sql("DELETE FROM auth_user WHERE id = %s", [sam.pk])
    assert "Filtered to staff user sam — show all rows" in shown(auditor.get(TRAIL, narrowed).content.decode())
    group = Group.objects.get(name="Auditor")
    narrowed = {"resource_type": "group", "resource_id": group.pk}
    assert "Filtered to group Auditor — show all rows" in shown(auditor.get(TRAIL, narrowed).content.decode())
