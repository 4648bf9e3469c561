"""The admin's user and group pages, for staff logins (end users are accounts, not users): the add page
asks for the role too, and both pages say which roles exist and what each may do
(lifecycle/backoffice/roles.py). Every change made here, password changes included, is audited with
the staff member who made it (the triggers of platform_events/sql/0017_staff_trail.sql write the rows)."""

from contextlib import contextmanager

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils.html import format_html, format_html_join

from lifecycle.backoffice.roles import ROLES
from platform_events.audit.context import audit_context


def roles_help() -> str:
    return format_html(
        "One role per login; each is a group:<ul>{}</ul>A superuser (Superuser status, on the login's page) may do"
        " everything.",
        format_html_join("", "<li><strong>{}</strong>: {}.</li>", ((role.name, role.may) for role in ROLES.values())),
    )


@contextmanager
def staff_change(request):
    """One transaction that names the staff member and the request to the triggers: the login's row and
    its groups and permissions, saved one after the other, are one audited change."""
    with transaction.atomic(), audit_context(actor=request.user, request=request):
        yield


class AuditedChanges:
    """Adding, changing and deleting, each inside staff_change()."""

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        with staff_change(request):
            return super().changeform_view(request, object_id, form_url, extra_context)

    def delete_view(self, request, object_id, extra_context=None):
        with staff_change(request):
            return super().delete_view(request, object_id, extra_context)

    def delete_queryset(self, request, queryset):  # the list's "Delete selected"
        with staff_change(request):
            super().delete_queryset(request, queryset)


class StaffUserAdmin(AuditedChanges, UserAdmin):
    add_fieldsets = (*UserAdmin.add_fieldsets, ("Role", {"fields": ("is_staff", "groups")}))

    def get_changeform_initial_data(self, request):
        # Every user here is staff: the people who use the product are accounts.
        return {"is_staff": True, **super().get_changeform_initial_data(request)}

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        formfield = super().formfield_for_manytomany(db_field, request, **kwargs)
        if db_field.name == "groups":
            formfield.help_text = roles_help()
        return formfield

    def user_change_password(self, request, id, form_url=""):
        with staff_change(request):
            return super().user_change_password(request, id, form_url)


class StaffGroupAdmin(AuditedChanges, GroupAdmin):
    pass


admin.site.unregister(get_user_model())
admin.site.register(get_user_model(), StaffUserAdmin)
admin.site.unregister(Group)
admin.site.register(Group, StaffGroupAdmin)
