"""The runtime role against the staff trail (platform_events/sql/0017_staff_trail.sql), as an attacker
holding the app's database login would try it: privileges are held by id, so ids swapped between two
permissions, groups, logins or content types would hand powers over without a change any audit
trigger sees. platform_events/sql/0020_kept_ids.sql refuses every id change."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import DatabaseError, connection, transaction

from platform_events.audit.models import AuditEvent

pytestmark = [pytest.mark.attack, pytest.mark.django_db]
User = get_user_model()


def swap(table: str, first: int, second: int) -> None:
    """Swap two rows' ids in three statements, as the runtime role types them in one transaction (the
    links' foreign keys are checked at commit, when both ids exist again)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET id = -1 WHERE id = %s", [first])
        cursor.execute(f"UPDATE {table} SET id = %s WHERE id = %s", [first, second])
        cursor.execute(f"UPDATE {table} SET id = %s WHERE id = -1", [second])
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the commit's foreign key checks, here


def permission(name: str) -> Permission:
    app_label, codename = name.split(".")
    return Permission.objects.get(content_type__app_label=app_label, codename=codename)


def test_swapping_two_permissions_ids_is_refused_so_support_gains_no_power_unaudited():
    support = Group.objects.get(name="Support")
    view_account, change_user = permission("accounts.view_account"), permission("auth.change_user")
    rows = AuditEvent.objects.count()
    with pytest.raises(DatabaseError, match="auth_permission .* keeps its id"):
        swap("auth_permission", view_account.pk, change_user.pk)
    assert not support.permissions.filter(codename="change_user").exists()
    assert support.permissions.filter(pk=view_account.pk, codename="view_account").exists()
    assert AuditEvent.objects.count() == rows


def test_swapping_two_groups_ids_is_refused():
    support, integrator = Group.objects.get(name="Support"), Group.objects.get(name="Integrator")
    with pytest.raises(DatabaseError, match="auth_group .* keeps its id"):
        swap("auth_group", support.pk, integrator.pk)
    assert Group.objects.get(pk=support.pk).name == "Support"


def test_swapping_two_logins_ids_is_refused_so_memberships_stay_with_their_login():
    sam = User.objects.create_user("sam", is_staff=True)
    sam.groups.set([Group.objects.get(name="Support")])
    ida = User.objects.create_user("ida", is_staff=True)
    ida.groups.set([Group.objects.get(name="Integrator")])
    with pytest.raises(DatabaseError, match="auth_user .* keeps its id"):
        swap("auth_user", sam.pk, ida.pk)
    assert [g.name for g in User.objects.get(username="sam").groups.all()] == ["Support"]


def test_swapping_two_content_types_ids_is_refused():
    account, user = permission("accounts.view_account").content_type, permission("auth.change_user").content_type
    with pytest.raises(DatabaseError, match="django_content_type .* keeps its id"):
        swap("django_content_type", account.pk, user.pk)
