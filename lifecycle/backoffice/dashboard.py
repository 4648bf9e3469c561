"""The figures of the admin's index page, each only for staff allowed to see what it is about, and
each linked to the admin list it counts, for staff allowed to open that list."""

import math
from dataclasses import dataclass
from datetime import date, timedelta
from functools import cached_property
from urllib.parse import urlencode

from django.contrib.admin import AdminSite
from django.urls import reverse
from django.utils import timezone

from accounts.daily_counts import sign_ups_and_activations
from accounts.models import Account
from accounts.selectors import account_counts_by_status
from lifecycle.audit_trail.privileges import privilege_change, privilege_subject
from lifecycle.audit_trail.selectors import latest_staff_actions
from platform_events.audit.models import ActorType, AuditEvent
from platform_events.db.estimates import EXACT_COUNT_LIMIT
from tokens.models import Job, MailState, Token
from tokens.selectors import (
    due_mail_count,
    last_mail_run,
    mail_count,
    mail_run_counts,
    oldest_due_mail_issued_at,
    unfinished_mail_runs_count,
)

# The chart's drawing area inside its SVG (viewBox units): room on the left for the y-axis labels,
# below for the day labels.
CHART_LEFT, CHART_TOP, CHART_WIDTH, CHART_HEIGHT = 40, 12, 660, 170
CHART_VIEWBOX = (CHART_LEFT + CHART_WIDTH + 24, CHART_TOP + CHART_HEIGHT + 26)
CHART_TICKS = 4  # y-axis ticks above zero, at most
MAIL_RUNS_WITHIN = "24h"  # the window of the mail-run figures: one of JobAdmin's "started" choices
STAFF_ACTIONS_SHOWN = 10


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
    with a few round ticks, a label every week, each day's values as a hover title and as a table.
    What the drawing reads several times per day is worked out once (cached_property)."""

    days: list[date]
    signups: list[int]
    activations: list[int]

    left, top, width, height = CHART_LEFT, CHART_TOP, CHART_WIDTH, CHART_HEIGHT
    viewbox_width, viewbox_height = CHART_VIEWBOX

    @cached_property
    def peak(self) -> int:
        return max([*self.signups, *self.activations, 1])

    @cached_property
    def step(self) -> int:
        """The y-axis step: 1, 2 or 5 times a power of ten, so that at most CHART_TICKS ticks reach the peak."""
        magnitude = 10 ** max(math.floor(math.log10(self.peak / CHART_TICKS)), 0)
        return next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude * CHART_TICKS >= self.peak)

    @cached_property
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

    @cached_property
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
        figures["staff_actions"] = latest_staff_actions(STAFF_ACTIONS_SHOWN)
        for event in figures["staff_actions"]:  # a login's or group's row: by name, with what changed
            event.privilege_subject, event.privilege_change = privilege_subject(event), privilege_change(event)
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
    """Accounts per status, counted below EXACT_COUNT_LIMIT accounts, estimated above (then True)."""
    return account_counts_by_status(exact_below=EXACT_COUNT_LIMIT)


def daily_chart() -> Chart:
    """The last 30 days: those that are over as they were counted once (accounts/daily_counts.py), today live."""
    per_day = sign_ups_and_activations()
    return Chart(
        days=list(per_day),
        signups=[signups for signups, _ in per_day.values()],
        activations=[activations for _, activations in per_day.values()],
    )


def mail_queue() -> dict:
    """How many e-mails are due now (counted up to EXACT_COUNT_LIMIT, "more than" past it), and since
    when the oldest waits. Both read the due-mail index, so they cost what the queue holds."""
    depth = due_mail_count(up_to=EXACT_COUNT_LIMIT + 1)
    oldest = oldest_due_mail_issued_at()
    return {
        "depth": min(depth, EXACT_COUNT_LIMIT),
        "more": depth > EXACT_COUNT_LIMIT,
        "oldest": oldest,
        "oldest_age": timezone.now() - oldest if oldest else None,
    }


def mail_figures(queue: dict, links: Links) -> list[Figure]:
    """Due, retrying and dead mail, each linked to the token list filtered to its mail state. Due mail
    is queued mail (or retrying mail past its backoff) that a run would claim now: its link shows
    every queued e-mail, also those waiting for their account (docs/mailroom.md, "Due mail")."""
    retrying = mail_count(MailState.RETRYING, up_to=EXACT_COUNT_LIMIT + 1)
    dead = mail_count(MailState.DEAD, up_to=EXACT_COUNT_LIMIT + 1)
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
    recent = mail_run_counts(since=timezone.now() - timedelta(hours=24))
    unfinished = unfinished_mail_runs_count()
    last = last_mail_run()
    return {
        "figures": [
            Figure("runs", recent.runs, links.changelist(Job, started=MAIL_RUNS_WITHIN)),
            Figure("e-mails sent", recent.sent, links.changelist(Job, started=MAIL_RUNS_WITHIN)),
            Figure(
                "with failed mail or an error",
                recent.trouble,
                links.changelist(Job, started=MAIL_RUNS_WITHIN, outcome="trouble"),
            ),
        ],
        "unfinished": Figure("not finished", unfinished, links.changelist(Job, outcome="unfinished")),
        "last": last,
        "last_url": links.change(Job, last.pk) if last else None,
    }


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
