"""The rows about staff logins, groups and permissions as people read them: "made superuser", "added to
group Auditor", "permission accounts.change_account granted to group Support".

platform_events/sql/0017_staff_trail.sql writes them: a staff_user row carries the login's username, a
group row the group's name, a permission is named as has_perm() reads it (app label and codename).
"""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce

from platform_events.audit.models import AuditAction, AuditEvent, ResourceType

# The resource types of these rows, and the model and field that name each.
PRIVILEGE_KINDS = {ResourceType.STAFF_USER: (get_user_model(), "username"), ResourceType.GROUP: (Group, "name")}
UNKNOWN = "?"  # a field a row does not hold (a row is written by the triggers only)
# A flag of the login: what setting it says, what clearing it says.
FLAGS = {
    "is_superuser": ("made superuser", "no longer superuser"),
    "is_staff": ("made staff", "no longer staff"),
    "is_active": ("reactivated", "deactivated: cannot sign in"),
}


def privilege_change(event) -> str | None:
    """The row as one sentence, or None for a row about something else."""
    before, after = event.diff_before or {}, event.diff_after or {}
    either = {**before, **after}
    permission, group = either.get("permission", UNKNOWN), either.get("group", UNKNOWN)
    match event.action:
        case AuditAction.STAFF_USER_CREATED:
            return f"created{_standing(after)}"
        case AuditAction.STAFF_USER_CHANGED:
            return ", ".join(_changes(before, after)) or "changed"
        case AuditAction.STAFF_USER_PASSWORD_CHANGED:
            return "password changed"
        case AuditAction.STAFF_USER_PASSWORD_REMOVED:
            return "password removed: no password signs in"
        case AuditAction.STAFF_USER_DELETED:
            return f"deleted{_standing(before)}"
        case AuditAction.STAFF_USER_GROUP_ADDED:
            return f"added to group {group}"
        case AuditAction.STAFF_USER_GROUP_REMOVED:
            return f"removed from group {group}"
        case AuditAction.STAFF_USER_PERMISSION_GRANTED:
            return f"permission {permission} granted"
        case AuditAction.STAFF_USER_PERMISSION_REVOKED:
            return f"permission {permission} revoked"
        case AuditAction.GROUP_PERMISSION_GRANTED:
            return f"permission {permission} granted to group {group}"
        case AuditAction.GROUP_PERMISSION_REVOKED:
            return f"permission {permission} revoked from group {group}"
        case AuditAction.GROUP_CREATED:
            return "created"
        case AuditAction.GROUP_RENAMED:
            return f"renamed from {before.get('group', UNKNOWN)} to {after.get('group', UNKNOWN)}"
        case AuditAction.GROUP_DELETED:
            return "deleted"
        case AuditAction.PERMISSION_RENAMED:
            return (
                f"permission {before.get('permission', UNKNOWN)} renamed to {after.get('permission', UNKNOWN)}:"
                " whoever held it holds the new name"
            )
        case AuditAction.CONTENT_TYPE_RENAMED:
            return (
                f"content type {before.get('content_type', UNKNOWN)} renamed to {after.get('content_type', UNKNOWN)}:"
                " its permissions with it"
            )
    return None


def privilege_subject(event) -> str | None:
    """The login's username or the group's name the row is about (a permission's or content type's id), or
    None for a row about something else."""
    before, after = event.diff_before or {}, event.diff_after or {}
    if event.resource_type == ResourceType.STAFF_USER:
        return after.get("username") or before.get("username")
    if event.resource_type == ResourceType.GROUP:
        return after.get("group") or before.get("group")
    if event.resource_type in (ResourceType.PERMISSION, ResourceType.CONTENT_TYPE):
        return event.resource_id
    return None


def privilege_label(resource_type: str, resource_id: int) -> str:
    """ "staff user sam", "group Auditor": by the live name, else by the one its newest row kept
    (a deleted login), else by id."""
    model, field = PRIVILEGE_KINDS[resource_type]
    name = model.objects.filter(pk=resource_id).values_list(field, flat=True).first()
    if name is None:
        key = "username" if resource_type == ResourceType.STAFF_USER else "group"
        kept = (
            AuditEvent.objects.filter(resource_type=resource_type, resource_id=str(resource_id))
            .order_by("-occurred_at")
            .values_list(Coalesce(KT(f"diff_after__{key}"), KT(f"diff_before__{key}")), flat=True)
        )
        name = kept.first()
    return f"{ResourceType(resource_type).label} {name or f'#{resource_id}'}"


def _changes(before: dict, after: dict) -> list[str]:
    changes = []
    if "username" in before:
        changes.append(f"renamed from {before['username']} to {after.get('username', UNKNOWN)}")
    for key, (set_, cleared) in FLAGS.items():
        if key in before and key in after:
            changes.append(set_ if after[key] else cleared)
    return changes


def _standing(fields: dict) -> str:
    """ " (staff, superuser)", " (staff, inactive)", or nothing for a login that holds none of it."""
    held = [name for key, name in (("is_staff", "staff"), ("is_superuser", "superuser")) if fields.get(key)]
    if fields.get("is_active") is False:
        held.append("inactive")
    return f" ({', '.join(held)})" if held else ""
