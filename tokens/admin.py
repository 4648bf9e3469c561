from django.contrib import admin, messages
from django.utils.translation import ngettext

from platform_events.read_only_admin import ReadOnlyModelAdmin
from tokens.mailroom.retry import retry_now
from tokens.models import Job, Token

# Never the secret or the code: they are credentials.
TOKEN_FIELDS = [
    "id",
    "account",
    "action",
    "created_at",
    "expires_at",
    "consumed_at",
    "superseded_at",
    "failed_attempts",
    "mail_state",
    "mail_attempts",
    "mail_next_attempt_at",
    "mailed_at",
    "mail_error",
]


@admin.register(Token)
class TokenAdmin(ReadOnlyModelAdmin):
    list_display = [
        "id",
        "account",
        "action",
        "created_at",
        "expires_at",
        "consumed_at",
        "mail_state",
        "mail_attempts",
        "mail_error",
    ]
    list_filter = ["mail_state", "action"]
    list_select_related = ["account"]
    fields = TOKEN_FIELDS
    readonly_fields = TOKEN_FIELDS
    actions = ["retry_mail_now"]

    @admin.action(permissions=["retry_mail"], description="Retry mailing now")
    def retry_mail_now(self, request, queryset):
        selected = queryset.count()
        retried = retry_now(queryset)
        self.message_user(
            request,
            ngettext("%d token will be mailed on the next run.", "%d tokens will be mailed on the next run.", retried)
            % retried,
            messages.SUCCESS,
        )
        if skipped := selected - retried:
            self.message_user(
                request,
                ngettext(
                    "%d skipped: not dead or retrying, or no longer valid (expired, used, replaced).",
                    "%d skipped: not dead or retrying, or no longer valid (expired, used, replaced).",
                    skipped,
                )
                % skipped,
                messages.WARNING,
            )

    def has_retry_mail_permission(self, request):
        return request.user.has_perm("tokens.change_token")


@admin.register(Job)
class JobAdmin(ReadOnlyModelAdmin):
    list_display = ["id", "job_type", "started_at", "finished_at", "claimed", "sent", "failed", "error"]
    list_filter = ["job_type"]
