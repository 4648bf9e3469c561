from django.contrib import admin, messages
from django.utils.translation import ngettext
from rangefilter.filters import DateRangeQuickSelectListFilterBuilder

from platform_events.audit import audit_context
from platform_events.read_only_admin import ReadOnlyModelAdmin
from tokens.mailroom.retry import retry_now
from tokens.models import Job, Token, TokenState
from tokens.selectors import token_state, tokens_in_state, tokens_search

# What a token page may show: never the secret or the code (they are credentials), nor the
# mailroom's lease bookkeeping. Every token page below shows these fields or fewer.
SHOWN_FIELDS = [
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


def shown(*leave_out: str) -> list[str]:
    return [field for field in SHOWN_FIELDS if field not in leave_out]


class TokenInline(admin.TabularInline):
    """An account's tokens on its page (accounts/admin.py)."""

    model = Token
    fields = readonly_fields = shown(
        "id", "account", "mail_attempts", "mail_next_attempt_at", "mailed_at", "mail_error"
    )
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


class TokenStateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return TokenState.choices

    def queryset(self, request, queryset):
        if self.value() is None:
            return queryset
        return tokens_in_state(queryset, TokenState(self.value()))


@admin.register(Token)
class TokenAdmin(ReadOnlyModelAdmin):
    # Shown fields (the rest are on the token's page) and the state they add up to.
    list_display = [
        "id",
        "account",
        "action",
        "state",
        "created_at",
        "expires_at",
        "consumed_at",
        "mail_state",
        "mail_attempts",
        "mail_error",
    ]
    list_filter = [
        TokenStateFilter,
        "mail_state",
        "action",
        ("created_at", DateRangeQuickSelectListFilterBuilder()),
        ("expires_at", DateRangeQuickSelectListFilterBuilder()),
    ]
    list_select_related = ["account"]
    # Shows the search box; the search itself is tokens_search (never by secret or code).
    search_fields = ["=id", "account__login", "account__email"]
    search_help_text = (
        "A token id, or its account's login or e-mail as the account search finds it (exact, its start,"
        " or a part of 3 or more letters or digits). Never a secret or a code."
    )
    fields = readonly_fields = SHOWN_FIELDS
    actions = ["retry_mail_now"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(state=token_state())

    def get_search_results(self, request, queryset, search_term):
        return tokens_search(queryset, search_term), False

    @admin.display(description="state")
    def state(self, token):
        return TokenState(token.state).label

    @admin.action(permissions=["retry_mail"], description="Retry mailing now")
    def retry_mail_now(self, request, queryset):
        selected = queryset.count()
        with audit_context(request=request):
            retried = retry_now(queryset, actor=request.user)
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
