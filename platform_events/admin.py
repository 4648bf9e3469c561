from django.contrib import admin


class ReadOnlyModelAdmin(admin.ModelAdmin):
    """An admin that shows rows and never writes them (state changes go through the services)."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
