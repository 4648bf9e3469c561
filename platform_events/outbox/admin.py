"""The outbox's events in the back-office, read-only: what was published, about which account or
endpoint, with its payload, a link to its webhook deliveries and, beside it, its publication to Kafka
(docs/kafka.md) when it has one. Nothing here changes a publication: only the relay moves it."""

from django.conf import settings
from django.contrib import admin
from django.db.models import BooleanField, CharField, Value
from django.db.models.expressions import RawSQL
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from platform_events.admin_kit.display import Tone, badge, pretty_json, when
from platform_events.admin_kit.lookups import value_fits
from platform_events.admin_kit.read_only import ReadOnlyModelAdmin
from platform_events.kafka.selectors import Publication, publication_of
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


# An event's publication in one word, read per listed row by its primary key (one query for the page).
KAFKA_STATE = RawSQL(
    "SELECT CASE WHEN p.status = 'PUBLISHED' THEN 'published' WHEN p.status = 'CANCELLED' THEN 'cancelled'"
    " WHEN p.attempts > 0 THEN 'retrying' ELSE 'waiting' END"
    " FROM event_publications p WHERE p.event_id = outbox_events.id",
    [],
    output_field=CharField(),
)
KAFKA_TONES = {"published": Tone.GOOD, "waiting": Tone.QUIET, "retrying": Tone.CAUTION, "cancelled": Tone.QUIET}


class KafkaFilter(admin.SimpleListFilter):
    """The events still waiting for the relay, or those it published, read from the publication rows
    (the waiting ones through their partial index)."""

    title = "Kafka"
    parameter_name = "kafka"
    CHOICES = {
        "waiting": "SELECT event_id FROM event_publications WHERE status = 'PENDING'",
        "published": "SELECT event_id FROM event_publications WHERE status = 'PUBLISHED'",
    }

    def lookups(self, request, model_admin):
        return [("waiting", "not published yet"), ("published", "published")]

    def queryset(self, request, queryset):
        if self.value() is None:
            return queryset
        return queryset.filter(id__in=RawSQL(self.CHOICES[self.value()], []))


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
    fields = ["seq", "event_type", "about", "created_at", "payload_pretty", "deliveries", "kafka", "id"]
    readonly_fields = fields

    def get_list_display(self, request):
        """The Kafka column and filter while this installation publishes (KAFKA_BOOTSTRAP_SERVERS)."""
        return [*self.list_display, "kafka_state"] if settings.KAFKA_BOOTSTRAP_SERVERS else self.list_display

    def get_list_filter(self, request):
        return [*self.list_filter, KafkaFilter] if settings.KAFKA_BOOTSTRAP_SERVERS else self.list_filter

    def get_fields(self, request, obj=None):
        """The publication beside the deliveries, only for an event that has one."""
        fields = list(super().get_fields(request, obj))
        if obj is None or publication(obj) is None:
            fields.remove("kafka")
        return fields

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        if not term:
            return queryset, False
        if not value_fits(OutboxEvent, "aggregate_id", term):
            return queryset.none(), False
        return events_about(queryset, term), False

    def get_queryset(self, request):
        queryset = with_account_links(super().get_queryset(request), request)
        if settings.KAFKA_BOOTSTRAP_SERVERS:
            queryset = queryset.annotate(kafka_state=KAFKA_STATE)
        return queryset

    @admin.display(description="about")
    def about(self, event):
        return aggregate(event, event.links_accounts)

    @admin.display(description="deliveries")
    def deliveries(self, event):
        url = reverse("admin:platform_events_webhookdelivery_changelist")
        return format_html('<a href="{}?event={}">deliveries →</a>', url, event.pk)

    @admin.display(description="Kafka")
    def kafka_state(self, event):
        state = getattr(event, "kafka_state", None)
        return "—" if state is None else badge(state, KAFKA_TONES[state])

    @admin.display(description="Kafka")
    def kafka(self, event):
        shown = publication(event)
        return "—" if shown is None else publication_table(event, shown)

    @admin.display(description="payload")
    def payload_pretty(self, event):
        return pretty_json(shown_payload(event.payload, event.links_accounts))


def publication(event: OutboxEvent) -> Publication | None:
    """The event's publication, read once for its page (which asks for its fields several times)."""
    if not hasattr(event, "_publication"):
        event._publication = publication_of(event.pk)
    return event._publication


def publication_table(event: OutboxEvent, publication: Publication) -> str:
    """Where the event went and what the broker said, or why it still waits."""
    if publication.status == "PUBLISHED":
        state = "published"
    elif publication.status == "CANCELLED":
        state = "cancelled"
    else:
        state = "retrying" if publication.attempts else "waiting"
    rows = [
        ("status", badge(state, KAFKA_TONES[state])),
        ("topic", (publication.topic_prefix or settings.KAFKA_TOPIC_PREFIX) + event.aggregate_type),
        ("partition", "—" if publication.partition is None else publication.partition),
        ("offset", "—" if publication.offset is None else publication.offset),
        ("attempts", f"{publication.attempts} refused by the broker" if publication.attempts else "0"),
        ("last error", publication.last_error or "—"),
        ("published at", when(publication.published_at)),
    ]
    if publication.status == "CANCELLED":
        rows.append(("next attempt", "never: cancelled when its account was erased"))
    elif publication.status != "PUBLISHED":
        if publication.claimed:
            due = "a relay is sending it now"
        elif publication.held_back_by is not None:
            due = f"after the account's earlier event #{publication.held_back_by}, still unpublished"
        elif publication.next_attempt_at <= timezone.now():
            due = "due now, for the next relay to claim"
        else:
            due = when(publication.next_attempt_at)
        rows.append(("next attempt", due))
    return format_html(
        '<table class="kafka-publication"><tbody>{}</tbody></table>',
        format_html_join("", '<tr><th scope="row">{}</th><td>{}</td></tr>', rows),
    )


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
