"""The figures of the admin's index page, each only for staff allowed to see what it is about."""

from dataclasses import dataclass
from datetime import date, timedelta

from django.db import connection
from django.db.models import Count
from django.db.models.functions import TruncDate
from django.utils import timezone

from accounts.models import Account, AccountStatus
from platform_events.db.estimates import EXACT_COUNT_LIMIT, estimated_rows
from platform_events.models import ActorType, AuditEvent
from tokens.selectors import due_mail

CHART_DAYS = 30
CHART_WIDTH, CHART_HEIGHT = 600, 160


@dataclass
class Chart:
    """Sign-ups and activations per day, drawn as SVG polylines on the server (no external assets)."""

    days: list[date]
    signups: list[int]
    activations: list[int]

    @property
    def peak(self) -> int:
        return max([*self.signups, *self.activations, 1])

    def points(self, series: list[int]) -> str:
        step = CHART_WIDTH / max(len(series) - 1, 1)
        return " ".join(
            f"{i * step:.1f},{CHART_HEIGHT - value * CHART_HEIGHT / self.peak:.1f}" for i, value in enumerate(series)
        )

    @property
    def signup_points(self) -> str:
        return self.points(self.signups)

    @property
    def activation_points(self) -> str:
        return self.points(self.activations)


def dashboard(user) -> dict:
    figures = {}
    if user.has_perm("accounts.view_account"):
        figures["accounts_by_status"], figures["accounts_estimated"] = accounts_by_status()
        figures["chart"] = daily_chart()
    if user.has_perm("tokens.view_token"):
        figures["mail_queue"] = mail_queue()
    if user.has_perm("platform_events.view_auditevent"):
        # Exclude, not keep staff:, so rows written before actor ids had a kind still show.
        staff_actions = AuditEvent.objects.filter(actor_type=ActorType.USER).exclude(
            actor_id__startswith=f"{Account.audit_kind}:"
        )
        figures["staff_actions"] = list(staff_actions.order_by("-occurred_at")[:10])
    return figures


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
    depth = due_mail().order_by()[: EXACT_COUNT_LIMIT + 1].count()
    # Tokens live equally long, so the first to expire is the oldest.
    oldest = due_mail().order_by("expires_at").values_list("created_at", flat=True).first()
    return {
        "depth": min(depth, EXACT_COUNT_LIMIT),
        "more": depth > EXACT_COUNT_LIMIT,
        "oldest": oldest,
        "oldest_age": timezone.now() - oldest if oldest else None,
    }
