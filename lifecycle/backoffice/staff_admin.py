"""The admin's user pages, for staff logins (end users are accounts, not users): the add page asks for
the role too, and both pages say which roles exist and what each may do (lifecycle/backoffice/roles.py)."""

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.utils.html import format_html, format_html_join

from lifecycle.backoffice.roles import ROLES


def roles_help() -> str:
    return format_html(
        "One role per login; each is a group:<ul>{}</ul>A superuser (Superuser status, on the login's page) may do"
        " everything.",
        format_html_join("", "<li><strong>{}</strong>: {}.</li>", ((role.name, role.may) for role in ROLES.values())),
    )


class StaffUserAdmin(UserAdmin):
    add_fieldsets = (*UserAdmin.add_fieldsets, ("Role", {"fields": ("is_staff", "groups")}))

    def get_changeform_initial_data(self, request):
        # Every user here is staff: the people who use the product are accounts.
        return {"is_staff": True, **super().get_changeform_initial_data(request)}

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        formfield = super().formfield_for_manytomany(db_field, request, **kwargs)
        if db_field.name == "groups":
            formfield.help_text = roles_help()
        return formfield


admin.site.unregister(get_user_model())
admin.site.register(get_user_model(), StaffUserAdmin)
