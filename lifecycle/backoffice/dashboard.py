"""The figures of the admin's index page, each only for staff allowed to see what it is about, and
each linked to the admin list it counts, for staff allowed to open that list."""

import math
from dataclasses import dataclass
from datetime import date, timedelta
from urllib.parse import urlencode

from django.contrib.admin import AdminSite
from django.db import connection
from django.db.models import Count, Sum
from django.db.models.functions import TruncDate
from django.urls import reverse
from django.utils import timezone

from accounts.models import Account, AccountStatus
from lifecycle.audit_trail.selectors import with_accounts
from platform_events.audit.models import ActorType, AuditEvent
from platform_events.db.estimates import EXACT_COUNT_LIMIT, estimated_rows
from tokens.models import Job, MailState, Token
from tokens.selectors import MAIL_RUN_TROUBLE, due_mail, mail_runs

CHART_DAYS = 30
# The chart's drawing area inside its SVG (viewBox units): room on the left for the y-axis labels,
# below for the day labels.
CHART_LEFT, CHART_TOP, CHART_WIDTH, CHART_HEIGHT = 40, 12, 660, 170
CHART_VIEWBOX = (CHART_LEFT + CHART_WIDTH + 24, CHART_TOP + CHART_HEIGHT + 26)
CHART_TICKS = 4  # y-axis ticks above zero, at most
MAIL_RUNS_WITHIN = "24h"  # the window of the mail-run figures: one of JobAdmin's "started" choices


@dataclass
class Point:
    x: float
    y: float


@dataclass
class Day:
    day: date
    signups: int
    activations: int
    x: float  # where the day is drawn
    band_x: float  # the day's column, which shows its values on hover
    band_width: float
    signup: Point
    activation: Point


@dataclass
class Chart:
    """Sign-ups and activations per day, drawn as SVG on the server (no external assets): a y-axis
    with a few round ticks, a label every week, each day's values as a hover title and as a table."""

    days: list[date]
    signups: list[int]
    activations: list[int]

    left, top, width, height = CHART_LEFT, CHART_TOP, CHART_WIDTH, CHART_HEIGHT
    viewbox_width, viewbox_height = CHART_VIEWBOX

    @property
    def peak(self) -> int:
        return max([*self.signups, *self.activations, 1])

    @property
    def step(self) -> int:
        """The y-axis step: 1, 2 or 5 times a power of ten, so that at most CHART_TICKS ticks reach the peak."""
        magnitude = 10 ** max(math.floor(math.log10(self.peak / CHART_TICKS)), 0)
        return next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude * CHART_TICKS >= self.peak)

    @property
    def top_value(self) -> int:
        return math.ceil(self.peak / self.step) * self.step

    @property
    def bottom(self) -> int:
        return self.top + self.height

    @property
    def right(self) -> int:
        return self.left + self.width

    @property
    def day_width(self) -> float:
        return self.width / max(len(self.days) - 1, 1)

    def x(self, index: int) -> float:
        return round(self.left + index * self.day_width, 1)

    def y(self, value: int) -> float:
        return round(self.bottom - value * self.height / self.top_value, 1)

    @property
    def tick_label_x(self) -> int:
        return self.left - 6

    @property
    def y_ticks(self) -> list[tuple[int, float]]:
        return [(value, self.y(value)) for value in range(0, self.top_value + 1, self.step)]

    @property
    def x_labels(self) -> list[tuple[date, float]]:
        """A label a week, ending on today."""
        return [(self.days[i], self.x(i)) for i in range(len(self.days) - 1, -1, -7)][::-1]

    @property
    def per_day(self) -> list[Day]:
        return [
            Day(
                day=day,
                signups=signups,
                activations=activations,
                x=self.x(i),
                band_x=round(self.x(i) - self.day_width / 2, 1),
                band_width=round(self.day_width, 1),
                signup=Point(self.x(i), self.y(signups)),
                activation=Point(self.x(i), self.y(activations)),
            )
            for i, (day, signups, activations) in enumerate(zip(self.days, self.signups, self.activations, strict=True))
        ]

    @property
    def signup_points(self) -> str:
        return " ".join(f"{day.signup.x},{day.signup.y}" for day in self.per_day)

    @property
    def activation_points(self) -> str:
        return " ".join(f"{day.activation.x},{day.activation.y}" for day in self.per_day)


@dataclass
class Figure:
    label: str
    value: int
    url: str | None = None  # the list it counts, when the viewer may open it
    more: bool = False  # counted up to EXACT_COUNT_LIMIT: there are more
    note: str = ""


def dashboard(request, site: AdminSite) -> dict:
    """The figures ``request.user`` may see; a figure's link only where the target admin lets them in."""
    user = request.user
    links = Links(request, site)
    figures = {}
    if user.has_perm("accounts.view_account"):
        by_status, figures["accounts_estimated"] = accounts_by_status()
        figures["accounts_by_status"] = by_status
        figures["accounts"] = [
            *(Figure(status, n, links.changelist(Account, status__exact=status)) for status, n in by_status.items()),
            Figure("all", sum(by_status.values()), links.changelist(Account)),
        ]
        figures["chart"] = daily_chart()
    if user.has_perm("tokens.view_token"):
        figures["mail_queue"] = mail_queue()
        figures["mail"] = mail_figures(figures["mail_queue"], links)
    if user.has_perm("tokens.view_job"):
        figures["mail_runs"] = mail_run_figures(links)
    if user.has_perm("platform_events.view_auditevent"):
        # Exclude, not keep staff:, so rows written before actor ids had a kind still show.
        staff_actions = AuditEvent.objects.filter(actor_type=ActorType.USER).exclude(
            actor_id__startswith=f"{Account.audit_kind}:"
        )
        # Each row with the login of the account it is about (one SELECT; a subquery per row shown).
        figures["staff_actions"] = list(with_accounts(staff_actions).order_by("-occurred_at")[:10])
        figures["staff_rows"] = [(event, links.audit_rows(event)) for event in figures["staff_actions"]]
        figures["audit_url"] = links.changelist(AuditEvent, actor_type__exact=ActorType.USER)
    return figures


class Links:
    """URLs of admin pages, only for a viewer the page's own ModelAdmin would let in (view or change)."""

    def __init__(self, request, site: AdminSite):
        self.request, self.site = request, site

    def allowed(self, model) -> bool:
        return self.site.is_registered(model) and self.site.get_model_admin(model).has_view_or_change_permission(
            self.request
        )

    def changelist(self, model, **query) -> str | None:
        if not self.allowed(model):
            return None
        url = reverse(f"{self.site.name}:{model._meta.app_label}_{model._meta.model_name}_changelist")
        return f"{url}?{urlencode(query)}" if query else url

    def change(self, model, pk) -> str | None:
        if not self.allowed(model):
            return None
        return reverse(f"{self.site.name}:{model._meta.app_label}_{model._meta.model_name}_change", args=[pk])

    def audit_rows(self, event: AuditEvent) -> str | None:
        """The rows of one staff action: those of its request (a bulk action writes one per account),
        else the trail of what it acted on. The audit list has no detail page."""
        if event.request_id:
            return self.changelist(AuditEvent, q=event.request_id)
        return self.changelist(AuditEvent, resource_type=event.resource_type, resource_id=event.resource_id)


def accounts_by_status() -> tuple[dict[str, int], bool]:
    """Accounts per status: counted on a small table, estimated from the planner's statistics on a large one."""
    if estimated_rows("accounts") < EXACT_COUNT_LIMIT:
        counted = dict(Account.objects.order_by().values_list("status").annotate(Count("id")))
        return {status: counted.get(status, 0) for status in AccountStatus.values}, False
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT v::text, round(f * (SELECT reltuples FROM pg_class WHERE oid = 'accounts'::regclass))::bigint
            FROM pg_stats, unnest(most_common_vals::text::text[], most_common_freqs) AS m(v, f)
            WHERE tablename = 'accounts' AND attname = 'status'
            """
        )
        estimated = dict(cursor.fetchall())
    # Statuses too rare to be among the most common values share what the common ones leave.
    rare = [status for status in AccountStatus.values if status not in estimated]
    left = max(estimated_rows("accounts") - sum(estimated.values()), 0)
    return {
        status: estimated.get(status, round(left / len(rare)) if rare else 0) for status in AccountStatus.values
    }, True


def daily_chart() -> Chart:
    today = timezone.localdate()
    days = [today - timedelta(days=n) for n in range(CHART_DAYS - 1, -1, -1)]
    since = timezone.now() - timedelta(days=CHART_DAYS)
    signups = _per_day(Account.objects.filter(created_at__gte=since), "created_at")
    activations = _per_day(Account.objects.filter(activated_at__gte=since), "activated_at")
    return Chart(
        days=days, signups=[signups.get(d, 0) for d in days], activations=[activations.get(d, 0) for d in days]
    )


def _per_day(queryset, field: str) -> dict[date, int]:
    rows = queryset.annotate(day=TruncDate(field)).order_by().values("day").annotate(n=Count("id"))
    return {row["day"]: row["n"] for row in rows}


def mail_queue() -> dict:
    """How many e-mails are due now (counted up to EXACT_COUNT_LIMIT, "more than" past it), and since
    when the oldest waits. Both read the due-mail index, so they cost what the queue holds."""
    depth = _count_up_to_limit(due_mail())
    # Tokens live equally long, so the first to expire is the oldest.
    oldest = due_mail().order_by("expires_at").values_list("created_at", flat=True).first()
    return {
        "depth": min(depth, EXACT_COUNT_LIMIT),
        "more": depth > EXACT_COUNT_LIMIT,
        "oldest": oldest,
        "oldest_age": timezone.now() - oldest if oldest else None,
    }


def mail_figures(queue: dict, links: Links) -> list[Figure]:
    """Due, retrying and dead mail, each linked to the token list filtered to its mail state. Due mail
    is queued mail (or retrying mail past its backoff) that a run would claim now: its link shows
    every queued e-mail, also those waiting for their account (README, "Mailroom")."""
    retrying = _count_up_to_limit(Token.objects.filter(mail_state=MailState.RETRYING))  # tokens_due_mail_idx
    dead = _count_up_to_limit(Token.objects.filter(mail_state=MailState.DEAD))  # tokens_dead_mail_idx
    oldest = f"the oldest has waited {_age(queue['oldest_age'])}" if queue["oldest_age"] else ""
    return [
        Figure(
            "due now",
            queue["depth"],
            links.changelist(Token, mail_state__exact=MailState.QUEUED),
            more=queue["more"],
            note=oldest,
        ),
        Figure(
            "retrying",
            min(retrying, EXACT_COUNT_LIMIT),
            links.changelist(Token, mail_state__exact=MailState.RETRYING),
            more=retrying > EXACT_COUNT_LIMIT,
            note="sent again after a backoff",
        ),
        Figure(
            "dead",
            min(dead, EXACT_COUNT_LIMIT),
            links.changelist(Token, mail_state__exact=MailState.DEAD),
            more=dead > EXACT_COUNT_LIMIT,
            note="not sent; Retry mailing now sends those still valid",
        ),
    ]


def mail_run_figures(links: Links) -> dict:
    """The mail runs of the last 24 hours (JobAdmin's filter of the same name counts the same rows),
    those with failed mail or an error, those not finished, and the last run. They read the index on
    (job_type, started_at); an idle run leaves no row (tokens/mailroom/drain.py)."""
    since = timezone.now() - timedelta(hours=24)
    recent = (
        mail_runs()
        .filter(started_at__gte=since)
        .aggregate(runs=Count("id"), sent=Sum("sent", default=0), trouble=Count("id", filter=MAIL_RUN_TROUBLE))
    )
    unfinished = mail_runs().filter(finished_at__isnull=True).count()
    last = mail_runs().order_by("-started_at", "-id").first()
    return {
        "figures": [
            Figure("runs", recent["runs"], links.changelist(Job, started=MAIL_RUNS_WITHIN)),
            Figure("e-mails sent", recent["sent"], links.changelist(Job, started=MAIL_RUNS_WITHIN)),
            Figure(
                "with failed mail or an error",
                recent["trouble"],
                links.changelist(Job, started=MAIL_RUNS_WITHIN, outcome="trouble"),
            ),
        ],
        "unfinished": Figure("not finished", unfinished, links.changelist(Job, outcome="unfinished")),
        "last": last,
        "last_url": links.change(Job, last.pk) if last else None,
    }


def _count_up_to_limit(queryset) -> int:
    return queryset.order_by()[: EXACT_COUNT_LIMIT + 1].count()


def _age(age: timedelta) -> str:
    """A wait in words, to the minute: "less than a minute", "3 minutes", "2 hours 5 minutes"."""
    minutes = int(age.total_seconds() // 60)
    if minutes < 1:
        return "less than a minute"
    hours, minutes = divmod(minutes, 60)
    parts = [f"{hours} hour{'s' if hours != 1 else ''}"] if hours else []
    if minutes or not hours:
        parts.append(f"{minutes} minute{'s' if minutes != 1 else ''}")
    return " ".join(parts)
