"""A plain, read-only view of accounts; the back-office admin with its actions is issue #4."""

from django.contrib import admin

from accounts.models import Account
from platform_events.admin import ReadOnlyModelAdmin
from tokens.models import Token


class TokenInline(admin.TabularInline):
    model = Token
    # Never the secret or the code: they are credentials.
    fields = ["action", "created_at", "expires_at", "consumed_at", "superseded_at", "failed_attempts"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Account)
class AccountAdmin(ReadOnlyModelAdmin):
    list_display = ["login", "email", "status", "created_at", "activated_at", "suspended_at"]
    list_filter = ["status"]
    search_fields = ["=login", "=email"]
    readonly_fields = [field.name for field in Account._meta.fields]
    inlines = [TokenInline]
