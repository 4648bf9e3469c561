"""The outbox's events in the back-office, read-only: what was published, about which account or
endpoint, with its payload and a link to its webhook deliveries."""

from django.contrib import admin
from django.db.models import BooleanField, Value
from django.urls import reverse
from django.utils.html import format_html

from platform_events.admin_kit.display import pretty_json
from platform_events.admin_kit.lookups import value_fits
from platform_events.admin_kit.read_only import ReadOnlyModelAdmin
from platform_events.outbox.models import TEST_EVENT_TYPE, EventType, OutboxEvent


class EventTypeFilter(admin.SimpleListFilter):
    """The known types, without a SELECT DISTINCT over the whole outbox."""

    title = "type"
    parameter_name = "event_type"

    def lookups(self, request, model_admin):
        return [*EventType.choices, (TEST_EVENT_TYPE, TEST_EVENT_TYPE)]

    def queryset(self, request, queryset):
        return queryset if self.value() is None else queryset.filter(event_type=self.value())


class AggregateFilter(admin.SimpleListFilter):
    """``?aggregate_id=7``: the events of account 7 (the account page's "Events" links here), or of
    one endpoint (its test events). Shown only while it filters."""

    title = "about"
    parameter_name = "aggregate_id"

    @staticmethod
    def value_fits(value: str) -> bool:
        return value_fits(OutboxEvent, "aggregate_id", value)

    def lookups(self, request, model_admin):
        return [] if self.value() is None else [(self.value(), self.value())]

    def queryset(self, request, queryset):
        return queryset if self.value() is None else events_about(queryset, self.value())


def events_about(queryset, aggregate_id: str):
    # The index leads with the type: name them, rather than scan by id alone.
    return queryset.filter(aggregate_type__in=["account", "webhook_endpoint"], aggregate_id=aggregate_id)


@admin.register(OutboxEvent)
class OutboxEventAdmin(ReadOnlyModelAdmin):
    list_display = ["seq", "event_type", "about", "created_at", "deliveries"]
    list_display_links = ["seq", "event_type"]
    list_filter = [AggregateFilter, EventTypeFilter]
    search_fields = ["aggregate_id"]  # exactly: get_search_results
    search_help_text = "An account's id (7), or an endpoint's id for its test events."
    fields = ["seq", "event_type", "about", "created_at", "payload_pretty", "deliveries", "id"]
    readonly_fields = fields

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        if not term:
            return queryset, False
        if not value_fits(OutboxEvent, "aggregate_id", term):
            return queryset.none(), False
        return events_about(queryset, term), False

    def get_queryset(self, request):
        return with_account_links(super().get_queryset(request), request)

    @admin.display(description="about")
    def about(self, event):
        return aggregate(event, event.links_accounts)

    @admin.display(description="deliveries")
    def deliveries(self, event):
        url = reverse("admin:platform_events_webhookdelivery_changelist")
        return format_html('<a href="{}?event={}">deliveries →</a>', url, event.pk)

    @admin.display(description="payload")
    def payload_pretty(self, event):
        return pretty_json(shown_payload(event.payload, event.links_accounts))


def aggregate(event: OutboxEvent, links_accounts: bool) -> str:
    """'account 7', linked to the account's page for those who may open it."""
    text = f"{event.aggregate_type.replace('_', ' ')} {event.aggregate_id}"
    if event.aggregate_type == "account" and links_accounts and event.aggregate_id.isdigit():
        url = reverse("admin:accounts_account_change", args=[event.aggregate_id])
        return format_html('<a href="{}" style="white-space: nowrap;">{}</a>', url, text)
    return format_html('<span style="white-space: nowrap;">{}</span>', text)


# What an event's data says of a person (accounts/sql/0013_outbox.sql, account_event_data()): shown
# only to those whose role may read accounts. Integrators see events and deliveries to connect
# partners, not to read every login and address the Accounts pages are closed to them for.
PERSONAL_FIELDS = ("login", "email", "previous_email")
HIDDEN = "(hidden: your role does not read accounts)"


def shown_payload(payload: dict, may_read_accounts: bool) -> dict:
    """The payload as this user may see it: whole, or with the person's login and addresses hidden."""
    data = payload.get("data")
    if may_read_accounts or not isinstance(data, dict) or not data.keys() & set(PERSONAL_FIELDS):
        return payload
    return {**payload, "data": {key: HIDDEN if key in PERSONAL_FIELDS else value for key, value in data.items()}}


def with_account_links(queryset, request):
    """Rows that know whether this user may open account pages (their "about" links there, or says it)."""
    allowed = request.user.has_perm("accounts.view_account")
    return queryset.annotate(links_accounts=Value(allowed, output_field=BooleanField()))
