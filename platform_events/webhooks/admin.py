"""Webhooks in the back-office: the endpoints (add, change, rotate the secret, pause, resume, enable,
send a test event) and their deliveries (read-only; send again).

Its pages link to accounts' pages and to the audit trail by their URL names only: platform_events
imports no app.

A signing secret is shown once, on a page of its own answering the POST that made it (never a
message kept in the session, never a form field afterwards), not cached (``Cache-Control: no-store``).
Every change goes through platform_events/webhooks/endpoints.py, whose triggers audit it.
"""

from urllib.parse import urlsplit

from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.utils.html import format_html
from django.views.decorators.debug import sensitive_post_parameters

from platform_events.admin_kit.actions import Reason, RowAction, always
from platform_events.admin_kit.display import Tone, badge, preformatted, pretty_json, when
from platform_events.admin_kit.lookups import DeclaredLookupsOnly, value_fits
from platform_events.admin_kit.pages import add_page, shown_once
from platform_events.admin_kit.read_only import ReadOnlyModelAdmin
from platform_events.audit.context import audit_context
from platform_events.audit.row_actions import AuditedRowActions
from platform_events.outbox.admin import aggregate, shown_payload, with_account_links
from platform_events.outbox.models import EventType, OutboxEvent
from platform_events.webhooks.endpoints import (
    OWNER_MAX_LENGTH,
    URL_MAX_LENGTH,
    EndpointError,
    deliveries_redeliver,
    endpoint_change,
    endpoint_create,
    endpoint_enable,
    endpoint_fields_checked,
    endpoint_pause,
    endpoint_resume,
    endpoint_rotate_secret,
    endpoint_send_test,
    made_for_former_url,
    secret_checked,
)
from platform_events.webhooks.models import DeliveryStatus, EndpointStatus, WebhookDelivery, WebhookSubscription

# Deliveries still to be sent (first time, or again after a failure).
WAITING = [DeliveryStatus.PENDING, DeliveryStatus.FAILED]
STATUS_TONES = {
    EndpointStatus.ACTIVE: Tone.GOOD,
    EndpointStatus.PAUSED: Tone.CAUTION,
    EndpointStatus.DISABLED_DEAD: Tone.BAD,
    DeliveryStatus.PENDING: Tone.QUIET,
    DeliveryStatus.DELIVERED: Tone.GOOD,
    DeliveryStatus.FAILED: Tone.CAUTION,
    DeliveryStatus.PERMANENTLY_FAILED: Tone.BAD,
}


def status_badge(status, label: str) -> str:
    return badge(label, STATUS_TONES[status])


# Endpoints


def checked_by_the_service(form, *, owner_field: str) -> dict:
    """A form's endpoint fields through the service's own check (endpoint_fields_checked), its refusal
    shown beside the field it names."""
    cleaned = form.cleaned_data
    if form.errors:
        return cleaned
    try:
        endpoint_fields_checked(
            url=cleaned["url"],
            events=cleaned["events"],
            owner=cleaned[owner_field],
            description=cleaned.get("description") or "",
        )
    except EndpointError as refusal:
        form.add_error(owner_field if refusal.field == "owner" else refusal.field, str(refusal))
    return cleaned


class EndpointFieldsForm(forms.Form):
    """What staff choose of an endpoint; checked by the service's own rules (endpoint_fields_checked)."""

    url = forms.CharField(
        label="URL",
        max_length=URL_MAX_LENGTH,
        strip=False,
        widget=forms.URLInput(attrs={"size": 70}),
        help_text="Where the events are POSTed: https only.",
    )
    events = forms.MultipleChoiceField(
        choices=EventType.choices, widget=forms.CheckboxSelectMultiple, help_text="The event types it receives."
    )
    owner = forms.CharField(max_length=OWNER_MAX_LENGTH, help_text="Whose endpoint: a partner or a service.")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3, "cols": 60}))

    def clean(self):
        super().clean()
        return checked_by_the_service(self, owner_field="owner")


class EndpointAddForm(EndpointFieldsForm):
    # Never rendered back: a refused form shows the field empty again.
    secret = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off", "size": 50}),
        help_text="Leave empty for a new one (best). Only to keep a secret the receiver already has: whsec_ and base64.",
    )

    def clean_secret(self):
        secret = self.cleaned_data["secret"]
        if not secret:
            return None
        try:
            return secret_checked(secret)
        except EndpointError as refusal:
            raise forms.ValidationError(str(refusal)) from None


class EndpointChangeForm(forms.ModelForm):
    """The endpoint page's form: no secret field (a secret is only ever rotated)."""

    events = EndpointFieldsForm.base_fields["events"]

    class Meta:
        model = WebhookSubscription
        fields = ["url", "events", "owner_id", "description"]
        widgets = {"url": forms.URLInput(attrs={"size": 70})}

    def clean(self):
        super().clean()
        return checked_by_the_service(self, owner_field="owner_id")


def endpoint_action(label: str, service, question: str, done: str, applies_to, **options) -> RowAction:
    """A button of the endpoint page: the service it calls (with the staff member; the reason, optional,
    goes to the audit trail), and when the page offers it."""
    return RowAction(
        label,
        run=lambda endpoint, actor, reason: service(endpoint, actor=actor),
        question=(question, question),
        done=(f"%(count)d endpoint {done}", f"%(count)d endpoints {done}"),
        none_done="Nothing was changed.",
        reason=Reason.OPTIONAL,
        describe=lambda endpoint: f"{endpoint.url} ({endpoint.owner_id}, {EndpointStatus(endpoint.status).label})",
        name=lambda endpoint: endpoint.url,
        applies_to=applies_to,
        refused=(EndpointError,),
        **options,
    )


ENDPOINT_ACTIONS = {
    "rotate_secret": endpoint_action(
        "Rotate the secret",
        endpoint_rotate_secret,
        "A new secret is made and shown once; the current one keeps signing beside it for the overlap"
        " (WEBHOOKS_SECRET_OVERLAP_HOURS), time enough to install the new one at the receiver.",
        "given a new secret.",
        always,
        answer="rotated_secret_page",
    ),
    "pause": endpoint_action(
        "Pause",
        endpoint_pause,
        "Nothing is sent to it until it is resumed; its events keep being queued meanwhile.",
        "paused: nothing is sent to it until it is resumed.",
        lambda endpoint: endpoint.status == EndpointStatus.ACTIVE,
    ),
    "resume": endpoint_action(
        "Resume",
        endpoint_resume,
        "What was queued while it was paused is sent first.",
        "resumed: what was queued meanwhile is being sent.",
        lambda endpoint: endpoint.status == EndpointStatus.PAUSED,
    ),
    "enable": endpoint_action(
        "Enable",
        endpoint_enable,
        "It was disabled after failing; enabled, it receives new events again and its failures are cleared."
        " Events published while it was disabled were not queued for it.",
        "enabled: it receives new events again.",
        lambda endpoint: endpoint.status == EndpointStatus.DISABLED_DEAD,
    ),
    "send_test": endpoint_action(
        "Send a test event",
        endpoint_send_test,
        "A webhook.test event is queued for this endpoint alone.",
        "sent a test event; its delivery is in the list below.",
        lambda endpoint: endpoint.status != EndpointStatus.DISABLED_DEAD,
    ),
}


@admin.register(WebhookSubscription)
class WebhookSubscriptionAdmin(AuditedRowActions, DeclaredLookupsOnly, admin.ModelAdmin):
    list_display = [
        "url",
        "owner_id",
        "event_list",
        "status_and_reason",
        "failure_count",
        "last_success_at",
        "last_failure_at",
        "waiting",
    ]
    list_filter = ["status"]
    show_facets = admin.ShowFacets.NEVER
    search_fields = ["url", "owner_id"]
    search_help_text = "Part of the URL or of the owner's name."
    form = EndpointChangeForm
    add_form_template = "admin/add_form_shown_once.html"
    row_actions = ENDPOINT_ACTIONS
    # What the dispatcher and the services keep: shown, never edited here.
    readonly_fields = [
        "status_and_reason",
        "failure_count",
        "failing_since",
        "last_success_at",
        "last_failure_at",
        "secret_state",
        "created_at",
        "updated_at",
        "id",
    ]
    fieldsets = [
        (None, {"fields": ["url", "events", "owner_id", "description"]}),
        ("State", {"fields": readonly_fields}),
    ]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(waiting_count=Count("deliveries", filter=Q(deliveries__status__in=WAITING)))
        )

    # The columns

    @admin.display(description="events")
    def event_list(self, endpoint):
        return ", ".join(endpoint.events)

    @admin.display(description="status", ordering="status")
    def status_and_reason(self, endpoint):
        status = status_badge(endpoint.status, EndpointStatus(endpoint.status).label)
        if endpoint.disabled_reason:
            return format_html("{}<br>{}", status, endpoint.disabled_reason)
        return status

    @admin.display(description="waiting", ordering="waiting_count")
    def waiting(self, endpoint):
        """Deliveries still to send, linked to them."""
        url = reverse("admin:platform_events_webhookdelivery_changelist")
        return format_html('<a href="{}?subscription__id__exact={}">{}</a>', url, endpoint.pk, endpoint.waiting_count)

    @admin.display(description="secret")
    def secret_state(self, endpoint):
        """When the secret changed and under which key it is encrypted; never the secret."""
        text = f"encrypted under key {endpoint.secret_key_id}"
        if endpoint.previous_secret_until:
            text += f"; the previous secret signs too until {when(endpoint.previous_secret_until)}"
        return text

    # Adding: the secret's page answers the POST

    @method_decorator(sensitive_post_parameters("secret"))
    def add_view(self, request, form_url="", extra_context=None):
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = EndpointAddForm(request.POST if request.method == "POST" else None)
        if form.is_valid():
            data = form.cleaned_data
            try:
                with audit_context(request=request):
                    endpoint, secret = endpoint_create(
                        url=data["url"],
                        events=data["events"],
                        owner=data["owner"],
                        description=data["description"],
                        secret=data["secret"],
                        actor=request.user,
                    )
            except EndpointError as refusal:
                form.add_error(refusal.field, str(refusal))
            else:
                return self.secret_page(request, endpoint, secret, "The endpoint was added.")
        return add_page(
            self, request, form, title="Add a webhook endpoint", submit="Add the endpoint and show its secret"
        )

    def rotated_secret_page(self, request, endpoint, secret: str) -> TemplateResponse:
        return self.secret_page(request, endpoint, secret, "The secret was rotated.")

    def secret_page(self, request, endpoint, secret: str, done: str) -> TemplateResponse:
        return shown_once(
            request,
            self,
            endpoint,
            template="admin/platform_events/webhooksubscription/secret.html",
            title="The endpoint's signing secret",
            label="Signing secret",
            secret=secret,
            done=done,
        )

    # Changing: only what the service lets staff change

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        with audit_context(request=request):
            endpoint_change(
                obj,
                url=data["url"],
                events=data["events"],
                owner=data["owner_id"],
                description=data.get("description") or "",
                actor=request.user,
            )

    def delete_model(self, request, obj):
        with audit_context(actor=request.user, request=request):
            super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        with audit_context(actor=request.user, request=request):
            super().delete_queryset(request, queryset)

    # The page: its buttons (ENDPOINT_ACTIONS, for those who may change it), its deliveries and trail

    def change_view(self, request, object_id, form_url="", extra_context=None):
        context = {
            "deliveries_url": f"{reverse('admin:platform_events_webhookdelivery_changelist')}"
            f"?subscription__id__exact={object_id}",
            "trail_url": f"{reverse('admin:platform_events_auditevent_changelist')}"
            f"?resource_type=webhook_endpoint&resource_id={object_id}"
            if request.user.has_perm("platform_events.view_auditevent")
            else None,
        }
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), **context})


# Deliveries


class EventFilter(admin.SimpleListFilter):
    """``?event=<id>``: one event's deliveries (the events list links here). Shown only while it filters."""

    title = "event"
    parameter_name = "event"

    @staticmethod
    def value_fits(value: str) -> bool:
        return value_fits(WebhookDelivery, "event", value)

    def lookups(self, request, model_admin):
        if self.value() is None:
            return []
        event = OutboxEvent.objects.filter(pk=self.value()).first()
        return [(self.value(), str(event) if event else f"{self.value()}, not known")]

    def queryset(self, request, queryset):
        return queryset if self.value() is None else queryset.filter(event=self.value())


def redeliver(delivery, *, actor, reason) -> int:
    """Send one delivery again: 1, or 0 when it is already waiting to be sent; refused when it was made
    for the endpoint's former URL."""
    if made_for_former_url(delivery):
        raise EndpointError(
            "This delivery was made before its endpoint's URL changed; it is not sent to the new one.",
            code="made-for-former-url",
            reason="made for the endpoint's former URL",
        )
    return deliveries_redeliver(WebhookDelivery.objects.filter(pk=delivery.pk), actor=actor)


DELIVERY_ACTIONS = {
    "redeliver": RowAction(
        "Send again",
        run=redeliver,
        question=(
            "This delivery is sent again as soon as a dispatcher is free (one already waiting is left as it is).",
            "These deliveries are sent again as soon as a dispatcher is free (those already waiting are left as they are).",
        ),
        done=("%(count)d delivery sent again.", "%(count)d deliveries sent again."),
        already=("%(count)d was already waiting to be sent.", "%(count)d were already waiting to be sent."),
        reason=Reason.NONE,
        describe=lambda delivery: (
            f"{delivery.event.event_type} to {delivery.subscription.url} — {DeliveryStatus(delivery.status).label}"
        ),
        applies_to=lambda delivery: not made_for_former_url(delivery),
        refused=(EndpointError,),
        own_url=True,
    ),
}


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(AuditedRowActions, ReadOnlyModelAdmin):
    # Nine columns fit 1366 px beside the filters, with short headings; when it was queued is on its page.
    list_display = ["event_type", "about", "endpoint", "status_badge", "tries", "http", "ms", "next_try", "last_try"]
    list_display_links = ["event_type"]
    list_filter = [EventFilter, "status", "subscription"]
    list_select_related = ["event", "subscription"]
    row_actions = DELIVERY_ACTIONS
    actions = list(DELIVERY_ACTIONS)
    fieldsets = [
        (None, {"fields": ["event_type", "about", "endpoint", "status_badge", "attempts"]}),
        ("Last attempt", {"fields": ["http_status", "latency_ms", "response", "last_attempt_at", "first_attempt_at"]}),
        ("Next", {"fields": ["next_retry_at", "lease_until"]}),
        ("Event", {"fields": ["event_link", "payload", "created_at", "id"]}),
    ]
    readonly_fields = [
        "event_type",
        "about",
        "endpoint",
        "status_badge",
        "attempts",
        "http_status",
        "latency_ms",
        "response",
        "last_attempt_at",
        "first_attempt_at",
        "next_retry_at",
        "lease_until",
        "event_link",
        "payload",
        "created_at",
        "id",
    ]

    @admin.display(description="event", ordering="event__event_type")
    def event_type(self, delivery):
        return delivery.event.event_type

    @admin.display(description="about")
    def about(self, delivery):
        return aggregate(delivery.event, delivery.links_accounts)

    @admin.display(description="endpoint", ordering="subscription__owner_id")
    def endpoint(self, delivery):
        """Its owner and host, linked to the endpoint's page; the whole URL on hover."""
        endpoint = delivery.subscription
        url = reverse("admin:platform_events_webhooksubscription_change", args=[endpoint.pk])
        host = urlsplit(endpoint.url).netloc
        return format_html('<a href="{}" title="{}">{}</a><br>{}', url, endpoint.url, endpoint.owner_id, host)

    @admin.display(description="status", ordering="status")
    def status_badge(self, delivery):
        return status_badge(delivery.status, DeliveryStatus(delivery.status).label)

    @admin.display(description="tries", ordering="attempts")
    def tries(self, delivery):
        return delivery.attempts

    @admin.display(description="HTTP", ordering="http_status")
    def http(self, delivery):
        return delivery.http_status or "—"

    @admin.display(description="ms", ordering="latency_ms")
    def ms(self, delivery):
        return "—" if delivery.latency_ms is None else delivery.latency_ms

    @admin.display(description="next try", ordering="next_retry_at")
    def next_try(self, delivery):
        # Only a delivery still to send has a next try; a delivered one's column is history.
        return when(delivery.next_retry_at) if delivery.status in WAITING else "—"

    @admin.display(description="last try", ordering="last_attempt_at")
    def last_try(self, delivery):
        return when(delivery.last_attempt_at)

    @admin.display(description="response")
    def response(self, delivery):
        return preformatted(delivery.http_response_body_excerpt or "—")

    @admin.display(description="event")
    def event_link(self, delivery):
        url = reverse("admin:platform_events_outboxevent_change", args=[delivery.event_id])
        return format_html('<a href="{}">{} (#{})</a>', url, delivery.event_id, delivery.event.seq)

    @admin.display(description="payload")
    def payload(self, delivery):
        return pretty_json(shown_payload(delivery.event.payload, delivery.links_accounts))

    def get_queryset(self, request):
        return with_account_links(super().get_queryset(request), request)

    @admin.action(permissions=["redeliver"], description="Send the selected deliveries again")
    def redeliver(self, request, queryset):
        return self.confirm_and_run(request, queryset, "redeliver")

    def has_redeliver_permission(self, request):
        return request.user.has_perm("platform_events.redeliver_webhookdelivery")
