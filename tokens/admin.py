from datetime import timedelta

from django.contrib import admin, messages
from django.utils import timezone
from django.utils.html import format_html
from django.utils.text import Truncator
from django.utils.translation import ngettext
from rangefilter.filters import DateRangeQuickSelectListFilterBuilder

from platform_events.admin_kit.display import time_column, when
from platform_events.admin_kit.read_only import QuickRowLinks, ReadOnly, ReadOnlyModelAdmin
from platform_events.audit.context import audit_context
from tokens.mailroom.retry import retry_now
from tokens.models import Job, MailState, Token, TokenState
from tokens.selectors import MAIL_RUN_TROUBLE, mail_runs, token_state, tokens_in_state, tokens_search

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
    "failed_mail_attempts",
    "mail_next_attempt_at",
    "mailed_at",
    "mail_error",
]


def shown(*leave_out: str) -> list[str]:
    return [field for field in SHOWN_FIELDS if field not in leave_out]


class TokenInline(ReadOnly, admin.TabularInline):
    """An account's tokens on its page (lifecycle/backoffice/accounts.py)."""

    model = Token
    fields = readonly_fields = shown(
        "id", "account", "failed_mail_attempts", "mail_next_attempt_at", "mailed_at", "mail_error"
    )
    extra = 0
    show_change_link = True


class TokenStateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return TokenState.choices

    def queryset(self, request, queryset):
        if self.value() is None:
            return queryset
        return tokens_in_state(queryset, TokenState(self.value()))


class TokenChangeList(QuickRowLinks):
    # What the list's columns read: never the secret, the code or their digests, nor the account's
    # other columns (2 ms of the 36 ms of CPU a page took at 1,000,000 accounts, bench/admin.py).
    LISTED_FIELDS = [
        "id",
        "action",
        "account__login",
        "mail_state",
        "mail_attempts",
        "mail_error",
        "created_at",
        "expires_at",
    ]

    def get_queryset(self, request, exclude_parameters=None):
        return super().get_queryset(request, exclude_parameters).only(*self.LISTED_FIELDS)


# Labels by value, looked up per row (a model's get_<field>_display rebuilds its choices per call).
MAIL_STATE_LABELS, STATE_LABELS = dict(MailState.choices), dict(TokenState.choices)


@admin.register(Token)
class TokenAdmin(ReadOnlyModelAdmin):
    # Seven columns fit 1366 px beside the filters; the rest (consumed, the mail error) is on the
    # token's page, and the error on hover over its mail state.
    list_display = [
        "id",
        "account_login",
        "action",
        "state",
        "mail",
        time_column("created_at"),
        time_column("expires_at"),
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

    def get_changelist(self, request, **kwargs):
        return TokenChangeList

    def get_search_results(self, request, queryset, search_term):
        return tokens_search(queryset, search_term), False

    @admin.display(description="state")
    def state(self, token):
        return STATE_LABELS[token.state]

    @admin.display(description="account", ordering="account__login")
    def account_login(self, token):
        return token.account.login

    @admin.display(description="mail", ordering="mail_state")
    def mail(self, token):
        """The mail state, with its failed attempts once there were any (a send does not count, so a
        token mailed again on request is just "Sent"); the last error on hover."""
        label = MAIL_STATE_LABELS.get(token.mail_state, token.mail_state)
        if token.mail_attempts:
            failed = ngettext("%d failed attempt", "%d failed attempts", token.mail_attempts) % token.mail_attempts
            label += f" after {failed}" if token.mail_state == MailState.SENT else f" ({failed})"
        return format_html('<span title="{}">{}</span>', token.mail_error, label) if token.mail_error else label

    @admin.display(description="failed mail attempts")
    def failed_mail_attempts(self, token):
        return token.mail_attempts

    @admin.action(permissions=["retry_mail"], description="Retry mailing now")
    def retry_mail_now(self, request, queryset):
        """No confirmation page, unlike the admin kit's row actions: it only puts mail the mailroom
        already owes back at the front of its queue (one UPDATE for the selection), changes no account
        and asks no reason, so Django's plain action and its report fit."""
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
        """tokens.retry_mail (Support has it; superusers have every permission): not change_token,
        which no role has, since tokens change only through the services."""
        return request.user.has_perm("tokens.retry_mail")


class MailRunStartedFilter(admin.SimpleListFilter):
    """Runs started in the last day or week, as the dashboard counts them (lifecycle/backoffice/dashboard.py)."""

    title = "when it started"
    parameter_name = "started"
    WITHIN = {"24h": timedelta(hours=24), "7d": timedelta(days=7)}

    def lookups(self, request, model_admin):
        return [("24h", "in the last 24 hours"), ("7d", "in the last 7 days")]

    def queryset(self, request, queryset):
        if self.value() not in self.WITHIN:
            return queryset
        return queryset.filter(started_at__gte=timezone.now() - self.WITHIN[self.value()])


class MailRunOutcomeFilter(admin.SimpleListFilter):
    title = "outcome"
    parameter_name = "outcome"

    def lookups(self, request, model_admin):
        return [
            ("trouble", "failed mail or an error"),
            ("unfinished", "not finished (running, or killed and not closed yet)"),
        ]

    def queryset(self, request, queryset):
        if self.value() == "trouble":
            return queryset.filter(MAIL_RUN_TROUBLE)
        if self.value() == "unfinished":
            return queryset.filter(finished_at__isnull=True)
        return queryset


@admin.register(Job)
class JobAdmin(ReadOnlyModelAdmin):
    """The mail runs (``jobs``): one row per drain run that claimed mail, read-only. The list says what
    each column means, from the fields' help texts (templates/admin/tokens/job/change_list.html)."""

    # (column, the field whose verbose name and help text it shows)
    COLUMNS = [
        ("id", "id"),
        ("started", "started_at"),
        ("finished", "finished_at"),
        ("claimed", "claimed"),
        ("sent", "sent"),
        ("failed", "failed"),
        ("error_summary", "error"),
    ]
    list_display = [column for column, _ in COLUMNS]
    list_filter = [MailRunStartedFilter, MailRunOutcomeFilter]
    fields = readonly_fields = [
        "id",
        "job_type",
        "started_at",
        "progress_at",
        "finished_at",
        "claimed",
        "sent",
        "failed",
        "error",
        "last_seq",
    ]

    def get_queryset(self, request):
        return mail_runs()

    def changelist_view(self, request, extra_context=None):
        fields = [Job._meta.get_field(name) for _, name in self.COLUMNS]
        meanings = [(field.verbose_name, field.help_text) for field in fields if field.help_text]
        return super().changelist_view(request, {**(extra_context or {}), "column_meanings": meanings})

    # To the second: runs are seconds apart.
    @admin.display(description="started", ordering="started_at")
    def started(self, job):
        return when(job.started_at)

    @admin.display(description="finished", ordering="finished_at")
    def finished(self, job):
        """An unfinished run says when it last made progress: running, or killed if that was long ago."""
        if job.finished_at:
            return format_html('<span class="nowrap">{}</span>', when(job.finished_at))
        return format_html(
            'not yet <span class="quiet">(last progress <span class="nowrap">{}</span>)</span>',
            when(job.progress_at or job.started_at),
        )

    @admin.display(description="error")
    def error_summary(self, job):
        """The first 80 characters; the whole error on hover and on the run's page."""
        if not job.error:
            return "—"
        return format_html('<span title="{}">{}</span>', job.error, Truncator(job.error).chars(80))
