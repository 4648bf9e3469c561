"""The admin's user pages (lifecycle/backoffice/staff_admin.py): the add page asks for the role and says
which roles exist and what each may do; what it makes is a staff login in that role. Every change made
on these pages, and a staff member's own password change, is audited with who made it."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.test import Client
from django.urls import reverse

from lifecycle.backoffice.roles import ROLES
from platform_events.audit.models import AuditEvent

pytestmark = pytest.mark.django_db
ADD = reverse("admin:auth_user_add")


def test_the_add_page_names_each_role_and_what_it_may_do(admin_client):
    response = admin_client.get(ADD)
    page = response.content.decode()
    for role in ROLES.values():
        assert f"<li><strong>{role.name}</strong>: {role.may}.</li>" in page
    assert "A superuser (Superuser status, on the login's page) may do everything." in page
    assert response.context["adminform"].form["is_staff"].value() is True  # every user here is staff


def test_the_change_page_names_the_roles_too(admin_client, admin_user):
    page = admin_client.get(reverse("admin:auth_user_change", args=[admin_user.pk])).content.decode()
    assert all(f"<strong>{name}</strong>" in page for name in ROLES)


def test_the_add_page_makes_a_staff_login_in_the_role_chosen(admin_client):
    form = {
        "username": "jo",
        "usable_password": "true",
        "password1": "a-long-Passw0rd-for-jo",
        "password2": "a-long-Passw0rd-for-jo",
        "is_staff": "on",
        "groups": [Group.objects.get(name="Integrator").pk],
    }
    response = admin_client.post(ADD, form)
    assert response.status_code == 302, response.context["adminform"].form.errors
    user = get_user_model().objects.get(username="jo")
    assert user.is_staff and [group.name for group in user.groups.all()] == ["Integrator"]


# Changes made here are audited with the staff member who made them (platform_events/sql/0017_staff_trail.sql)


def staff_rows(since=None) -> list[tuple]:
    """The staff and group rows, oldest first: (action, actor id, resource id, request id set)."""
    rows = AuditEvent.objects.filter(resource_type__in=["staff_user", "group"]).order_by("occurred_at")
    if since is not None:
        rows = rows.filter(occurred_at__gt=since)
    return [(row.action, row.actor_id, row.resource_id, row.request_id is not None) for row in rows]


def now_in_trail():
    return AuditEvent.objects.order_by("-occurred_at").values_list("occurred_at", flat=True).first()


def change_form(user, **changes) -> dict:
    """The user's change form as the page submits it, with ``changes``."""
    form = {
        "username": user.username,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "email": user.email,
        "is_active": "on" if user.is_active else "",
        "is_staff": "on" if user.is_staff else "",
        "is_superuser": "on" if user.is_superuser else "",
        "groups": [group.pk for group in user.groups.all()],
        "user_permissions": [],
        "date_joined_0": user.date_joined.strftime("%Y-%m-%d"),
        "date_joined_1": user.date_joined.strftime("%H:%M:%S"),
    }
    return {key: value for key, value in {**form, **changes}.items() if value != ""}


@pytest.fixture
def support_user():
    user = get_user_model().objects.create_user("sam", password="an-old-Passw0rd", is_staff=True)
    user.groups.set([Group.objects.get(name="Support")])
    return user


def test_making_a_support_user_superuser_and_auditor_is_audited_with_the_superuser_as_actor(
    admin_client, admin_user, support_user
):
    since = now_in_trail()
    groups = [Group.objects.get(name=name).pk for name in ("Support", "Auditor")]
    form = change_form(support_user, is_superuser="on", groups=groups)
    response = admin_client.post(reverse("admin:auth_user_change", args=[support_user.pk]), form)
    assert response.status_code == 302, response.context["adminform"].form.errors
    actor, sam = f"staff:{admin_user.pk}", str(support_user.pk)
    assert staff_rows(since) == [
        ("staff_user.changed", actor, sam, True),
        ("staff_user.group_added", actor, sam, True),
    ]
    assert len({row.request_id for row in AuditEvent.objects.filter(occurred_at__gt=since)}) == 1


def test_a_password_set_by_a_superuser_or_by_its_owner_is_audited_with_who_set_it(
    admin_client, admin_user, support_user
):
    since, old_hash = now_in_trail(), support_user.password
    new = {"password1": "a-new-Passw0rd-for-sam", "password2": "a-new-Passw0rd-for-sam", "usable_password": "true"}
    response = admin_client.post(reverse("admin:auth_user_password_change", args=[support_user.pk]), new)
    assert response.status_code == 302
    support_user.refresh_from_db()  # the session holds a digest of the password
    set_by_admin = support_user.password
    own = Client()
    own.force_login(support_user)
    mine = {"old_password": new["password1"], "new_password1": "my-own-Passw0rd!", "new_password2": "my-own-Passw0rd!"}
    assert own.post(reverse("admin:password_change"), mine).url == reverse("admin:password_change_done")
    sam = str(support_user.pk)
    assert staff_rows(since) == [
        ("staff_user.password_changed", f"staff:{admin_user.pk}", sam, True),
        ("staff_user.password_changed", f"staff:{support_user.pk}", sam, True),
    ]
    hashes = [old_hash, get_user_model().objects.get(pk=support_user.pk).password, set_by_admin]
    for row in AuditEvent.objects.filter(occurred_at__gt=since):
        assert not any(digest in str([row.diff_before, row.diff_after, row.reason]) for digest in hashes)


def test_a_login_added_and_deleted_here_is_audited_with_the_superuser_as_actor(admin_client, admin_user):
    since = now_in_trail()
    form = {
        "username": "jo",
        "usable_password": "true",
        "password1": "a-long-Passw0rd-for-jo",
        "password2": "a-long-Passw0rd-for-jo",
        "is_staff": "on",
        "groups": [Group.objects.get(name="Auditor").pk],
    }
    assert admin_client.post(ADD, form).status_code == 302
    jo = get_user_model().objects.get(username="jo")
    delete = admin_client.post(reverse("admin:auth_user_delete", args=[jo.pk]), {"post": "yes"})
    assert delete.status_code == 302
    actor, jo = f"staff:{admin_user.pk}", str(jo.pk)
    assert staff_rows(since) == [
        ("staff_user.created", actor, jo, True),
        ("staff_user.group_added", actor, jo, True),
        ("staff_user.group_removed", actor, jo, True),
        ("staff_user.deleted", actor, jo, True),
    ]


def test_a_permission_granted_to_a_group_here_is_audited_with_the_superuser_as_actor(admin_client, admin_user):
    group = Group.objects.get(name="Auditor")
    added = Permission.objects.get(codename="change_user", content_type__app_label="auth")
    since = now_in_trail()
    form = {"name": group.name, "permissions": [*group.permissions.values_list("pk", flat=True), added.pk]}
    response = admin_client.post(reverse("admin:auth_group_change", args=[group.pk]), form)
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert staff_rows(since) == [("group.permission_granted", f"staff:{admin_user.pk}", str(group.pk), True)]
    row = AuditEvent.objects.get(occurred_at__gt=since)
    assert row.diff_after == {"group": "Auditor", "permission": "auth.change_user"}


def test_logins_deleted_from_the_list_are_audited_with_the_superuser_as_actor(admin_client, admin_user, support_user):
    since = now_in_trail()
    data = {"action": "delete_selected", "_selected_action": [support_user.pk], "post": "yes"}
    assert admin_client.post(reverse("admin:auth_user_changelist"), data).status_code == 302
    actor, sam = f"staff:{admin_user.pk}", str(support_user.pk)
    assert staff_rows(since) == [
        ("staff_user.group_removed", actor, sam, True),
        ("staff_user.deleted", actor, sam, True),
    ]
