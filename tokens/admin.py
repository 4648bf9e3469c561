from django.contrib import admin

from platform_events.admin import ReadOnlyModelAdmin
from tokens.models import Job, Token

TOKEN_FIELDS = [
    "id",
    "account",
    "action",
    "created_at",
    "expires_at",
    "consumed_at",
    "superseded_at",
    "failed_attempts",
]


@admin.register(Token)
class TokenAdmin(ReadOnlyModelAdmin):
    # Never the secret or the code: they are credentials.
    list_display = ["id", "account", "action", "created_at", "expires_at", "consumed_at", "failed_attempts"]
    list_filter = ["action"]
    list_select_related = ["account"]
    fields = TOKEN_FIELDS
    readonly_fields = TOKEN_FIELDS


@admin.register(Job)
class JobAdmin(ReadOnlyModelAdmin):
    list_display = ["id", "job_type", "started_at", "finished_at", "claimed", "sent", "failed", "error"]
    list_filter = ["job_type"]
