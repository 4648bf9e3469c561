"""Staff logins, their groups and their permissions in the audit trail (platform_events/sql/0017_staff_trail.sql):
a change by any client, the runtime role's raw SQL included, leaves a row naming the database role beside
the actor the application claims; a sign-in's last_login leaves none; no row holds a password hash."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import DatabaseError, connection, transaction

from platform_events.audit.context import audit_context
from platform_events.audit.models import AuditEvent

pytestmark = pytest.mark.django_db
User = get_user_model()


@pytest.fixture
def support_user():
    user = User.objects.create_user("sam", password="an-old-Passw0rd", is_staff=True)
    user.groups.set([Group.objects.get(name="Support")])
    return user


def sql(statement: str, params=()) -> None:
    """A statement as the runtime role types it (the tests' default connection is that role)."""
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


def rows_after(mark: AuditEvent | None = None, *, everything: bool = False):
    """The staff and group rows (``everything``: all rows) written since ``mark``, oldest first, as
    (action, resource, before, after)."""
    rows = AuditEvent.objects.order_by("occurred_at")
    if not everything:
        rows = rows.filter(resource_type__in=["staff_user", "group"])
    if mark is not None:
        rows = rows.filter(occurred_at__gt=mark.occurred_at)
    return [(row.action, f"{row.resource_type}:{row.resource_id}", row.diff_before, row.diff_after) for row in rows]


def last_row() -> AuditEvent | None:
    return AuditEvent.objects.order_by("-occurred_at").first()


def runtime_login() -> str:
    return connection.settings_dict["USER"]


def test_the_runtime_roles_raw_superuser_grant_leaves_a_row_naming_the_database_role(support_user):
    """UPDATE auth_user SET is_superuser = true, typed by the runtime role, is audited as that role."""
    mark = last_row()
    sql("UPDATE auth_user SET is_superuser = true WHERE id = %s", [support_user.pk])
    assert rows_after(mark) == [
        ("staff_user.changed", f"staff_user:{support_user.pk}", {"is_superuser": False},
         {"username": "sam", "is_superuser": True}),
    ]  # fmt: skip
    row = last_row()
    assert (row.actor_type, row.actor_id, row.db_user) == ("SYSTEM", runtime_login(), runtime_login())


def test_a_raw_group_permission_grant_and_revocation_leave_rows_with_both_names():
    group = Group.objects.get(name="Support")
    permission = Permission.objects.get(codename="change_user", content_type__app_label="auth")
    mark = last_row()
    sql("INSERT INTO auth_group_permissions (group_id, permission_id) VALUES (%s, %s)", [group.pk, permission.pk])
    sql("DELETE FROM auth_group_permissions WHERE group_id = %s AND permission_id = %s", [group.pk, permission.pk])
    named = {"group": "Support", "permission": "auth.change_user"}
    assert rows_after(mark) == [
        ("group.permission_granted", f"group:{group.pk}", None, named),
        ("group.permission_revoked", f"group:{group.pk}", named, None),
    ]
    assert last_row().db_user == runtime_login()


def test_groups_and_own_permissions_of_a_login_are_audited_moved_links_too(support_user):
    auditor, support = Group.objects.get(name="Auditor"), Group.objects.get(name="Support")
    permission = Permission.objects.get(codename="view_user", content_type__app_label="auth")
    mark = last_row()
    sql("UPDATE auth_user_groups SET group_id = %s WHERE user_id = %s", [auditor.pk, support_user.pk])
    support_user.user_permissions.add(permission)
    support_user.user_permissions.remove(permission)
    sam = f"staff_user:{support_user.pk}"
    assert rows_after(mark) == [
        ("staff_user.group_removed", sam, {"username": "sam", "group": "Support"}, None),
        ("staff_user.group_added", sam, None, {"username": "sam", "group": "Auditor"}),
        ("staff_user.permission_granted", sam, None, {"username": "sam", "permission": "auth.view_user"}),
        ("staff_user.permission_revoked", sam, {"username": "sam", "permission": "auth.view_user"}, None),
    ]
    assert support.pk != auditor.pk


def test_creation_deactivation_renaming_and_deletion_are_audited():
    mark = last_row()
    user = User.objects.create_user("kit", password="a-Passw0rd-for-kit", is_staff=True)
    sql("UPDATE auth_user SET is_active = false, is_staff = false, username = 'kit2' WHERE id = %s", [user.pk])
    sql("DELETE FROM auth_user WHERE id = %s", [user.pk])
    kit = f"staff_user:{user.pk}"
    assert rows_after(mark) == [
        ("staff_user.created", kit, None,
         {"username": "kit", "is_staff": True, "is_superuser": False, "is_active": True}),
        ("staff_user.changed", kit, {"username": "kit", "is_staff": True, "is_active": True},
         {"username": "kit2", "is_staff": False, "is_active": False}),
        ("staff_user.deleted", kit,
         {"username": "kit2", "is_staff": False, "is_superuser": False, "is_active": False}, None),
    ]  # fmt: skip


def test_a_changed_password_is_a_row_that_says_so_and_holds_no_hash(support_user):
    old_hash = support_user.password
    mark = last_row()
    support_user.set_password("a-new-Passw0rd-for-sam")
    support_user.save()
    support_user.set_unusable_password()
    support_user.save(update_fields=["password"])
    sam = f"staff_user:{support_user.pk}"
    assert rows_after(mark) == [
        ("staff_user.password_changed", sam, None, {"username": "sam"}),
        ("staff_user.password_removed", sam, None, {"username": "sam"}),
    ]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM audit_events WHERE concat_ws(' ', diff_before, diff_after, reason) ~ %s",
            ["argon2|pbkdf2|bcrypt|scrypt|md5\\$|sha1\\$|\\$[0-9a-zA-Z+/]{20,}"],
        )
        assert cursor.fetchone() == (0,)
    assert old_hash.startswith("argon2")


def test_a_sign_ins_last_login_and_a_change_of_name_or_e_mail_write_no_row(support_user, client):
    mark = last_row()
    sql("UPDATE auth_user SET last_login = now(), first_name = 'Sam', email = 'sam@example.com' WHERE id = %s",
        [support_user.pk])  # fmt: skip
    signed_in = client.post("/admin/login/", {"username": "sam", "password": "an-old-Passw0rd"})
    assert signed_in.status_code == 302
    User.objects.get(pk=support_user.pk).save()  # every column written again, none changed
    assert rows_after(mark) == []
    assert User.objects.get(pk=support_user.pk).last_login is not None


def test_the_claimed_actor_is_recorded_beside_the_database_role(support_user, admin_user):
    with transaction.atomic(), audit_context(actor=admin_user, reason="covering the night shift"):
        sql("UPDATE auth_user SET is_superuser = true WHERE id = %s", [support_user.pk])
    row = last_row()
    assert (row.action, row.actor_type, row.actor_id, row.actor_display, row.reason, row.db_user) == (
        "staff_user.changed", "USER", f"staff:{admin_user.pk}", admin_user.username, "covering the night shift",
        runtime_login(),
    )  # fmt: skip


def test_a_group_renamed_created_or_deleted_is_audited():
    mark = last_row()
    group = Group.objects.create(name="Night shift")
    resource = f"group:{group.pk}"
    sql("UPDATE auth_group SET name = 'Support 2' WHERE id = %s", [group.pk])
    group.delete()
    assert rows_after(mark) == [
        ("group.created", resource, None, {"group": "Night shift"}),
        ("group.renamed", resource, {"group": "Night shift"}, {"group": "Support 2"}),
        ("group.deleted", resource, {"group": "Support 2"}, None),
    ]


def test_the_runtime_role_cannot_silence_the_staff_triggers(support_user):
    for statement in (
        "ALTER TABLE auth_user DISABLE TRIGGER after_staff_user_update_audit",
        "DROP TRIGGER after_group_permission_audit ON auth_group_permissions",
        "SET session_replication_role = replica",
    ):
        with pytest.raises(DatabaseError, match="must be owner|permission denied"), transaction.atomic():
            sql(statement)


def test_renaming_a_permission_or_its_content_type_is_audited_as_it_changes_what_holders_may_do():
    """Support holds accounts.view_account by its id: renamed to auth.change_user, Support could change staff."""
    permission = Permission.objects.get(codename="view_account", content_type__app_label="accounts")
    user_type = Permission.objects.get(codename="change_user").content_type
    mark = last_row()
    sql("UPDATE auth_permission SET codename = 'view_account_old' WHERE codename = 'view_account'")
    sql("UPDATE auth_permission SET codename = 'change_user_x' WHERE codename = 'change_user'")
    sql("UPDATE auth_permission SET codename = 'change_user', content_type_id = %s WHERE id = %s",
        [user_type.pk, permission.pk])  # fmt: skip
    sql("UPDATE django_content_type SET model = 'user2' WHERE id = %s", [user_type.pk])
    sql("UPDATE auth_permission SET name = 'Can see accounts' WHERE id = %s", [permission.pk])  # a label only
    change_user = Permission.objects.get(codename="change_user_x").pk
    assert rows_after(mark, everything=True) == [
        (
            "permission.renamed",
            f"permission:{permission.pk}",
            {"permission": "accounts.view_account"},
            {"permission": "accounts.view_account_old"},
        ),
        (
            "permission.renamed",
            f"permission:{change_user}",
            {"permission": "auth.change_user"},
            {"permission": "auth.change_user_x"},
        ),
        (
            "permission.renamed",
            f"permission:{permission.pk}",
            {"permission": "accounts.view_account_old"},
            {"permission": "auth.change_user"},
        ),
        (
            "content_type.renamed",
            f"content_type:{user_type.pk}",
            {"content_type": "auth.user"},
            {"content_type": "auth.user2"},
        ),
    ]  # the name, a label only, wrote nothing
