"""Webhooks in the back-office: the endpoints (add, change, rotate the secret, pause, resume, enable,
send a test event) and their deliveries (read-only; send again).

Its pages link to accounts' pages and to the audit trail by their URL names only: platform_events
imports no app.

A signing secret is shown once, on a page of its own answering the POST that made it (never a
message kept in the session, never a form field afterwards), not cached (``Cache-Control: no-store``).
Every change goes through platform_events/webhooks/endpoints.py, whose triggers audit it.
"""

from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.decorators import method_decorator
from django.utils.html import format_html
from django.utils.translation import ngettext
from django.views.decorators.debug import sensitive_post_parameters

from platform_events.admin_kit.lookups import DeclaredLookupsOnly, value_fits
from platform_events.admin_kit.pages import NAMED_ON_CONFIRMATION, add_form, confirmation, shown_once, when
from platform_events.admin_kit.read_only import ReadOnlyModelAdmin
from platform_events.audit.context import audit_context
from platform_events.outbox.admin import aggregate, pretty_json, with_account_links
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
    secret_checked,
)
from platform_events.webhooks.models import DeliveryStatus, EndpointStatus, WebhookDelivery, WebhookSubscription

# Deliveries still to be sent (first time, or again after a failure).
WAITING = [DeliveryStatus.PENDING, DeliveryStatus.FAILED]
STATUS_COLOURS = {
    EndpointStatus.ACTIVE: "#1b7a1b",
    EndpointStatus.PAUSED: "#8a6d00",
    EndpointStatus.DISABLED_DEAD: "#b00020",
    DeliveryStatus.PENDING: "#555",
    DeliveryStatus.DELIVERED: "#1b7a1b",
    DeliveryStatus.FAILED: "#8a6d00",
    DeliveryStatus.PERMANENTLY_FAILED: "#b00020",
}


def badge(status, label: str) -> str:
    return format_html(
        '<span style="color: #fff; background: {}; padding: 1px 8px; border-radius: 8px;">{}</span>',
        STATUS_COLOURS[status],
        label,
    )


# Endpoints


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
        cleaned = super().clean()
        if self.errors:
            return cleaned
        try:
            endpoint_fields_checked(
                url=cleaned["url"], events=cleaned["events"], owner=cleaned["owner"], description=cleaned["description"]
            )
        except EndpointError as refusal:
            self.add_error(refusal.field, str(refusal))
        return cleaned


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
        cleaned = super().clean()
        if self.errors:
            return cleaned
        try:
            endpoint_fields_checked(
                url=cleaned["url"],
                events=cleaned["events"],
                owner=cleaned["owner_id"],
                description=cleaned.get("description") or "",
            )
        except EndpointError as refusal:
            self.add_error({"owner": "owner_id"}.get(refusal.field, refusal.field), str(refusal))
        return cleaned


class ReasonForm(forms.Form):
    reason = forms.CharField(
        label="Reason (kept in the audit trail; optional)",
        required=False,
        max_length=1000,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
    )


@dataclass(frozen=True)
class EndpointAction:
    """A button of the endpoint page: the service it calls, what to say once done, and when it applies."""

    label: str
    question: str
    service: Callable
    done: str
    applies_to: Callable[[WebhookSubscription], bool]


ENDPOINT_ACTIONS = {
    "rotate_secret": EndpointAction(
        "Rotate the secret",
        "A new secret is made and shown once; the current one keeps signing beside it for the overlap"
        " (WEBHOOKS_SECRET_OVERLAP_HOURS), time enough to install the new one at the receiver.",
        endpoint_rotate_secret,
        "",  # answered by the secret's page
        lambda endpoint: True,
    ),
    "pause": EndpointAction(
        "Pause",
        "Nothing is sent to it until it is resumed; its events keep being queued meanwhile.",
        endpoint_pause,
        "Paused: nothing is sent to it until it is resumed.",
        lambda endpoint: endpoint.status == EndpointStatus.ACTIVE,
    ),
    "resume": EndpointAction(
        "Resume",
        "What was queued while it was paused is sent first.",
        endpoint_resume,
        "Resumed: what was queued meanwhile is being sent.",
        lambda endpoint: endpoint.status == EndpointStatus.PAUSED,
    ),
    "enable": EndpointAction(
        "Enable",
        "It was disabled after failing; enabled, it receives new events again and its failures are cleared."
        " Events published while it was disabled were not queued for it.",
        endpoint_enable,
        "Enabled: it receives new events again.",
        lambda endpoint: endpoint.status == EndpointStatus.DISABLED_DEAD,
    ),
    "send_test": EndpointAction(
        "Send a test event",
        "A webhook.test event is queued for this endpoint alone.",
        endpoint_send_test,
        "Test event queued; its delivery is in the list below.",
        lambda endpoint: endpoint.status != EndpointStatus.DISABLED_DEAD,
    ),
}


@admin.register(WebhookSubscription)
class WebhookSubscriptionAdmin(DeclaredLookupsOnly, admin.ModelAdmin):
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

    def get_urls(self):
        act = self.admin_site.admin_view(self.act_view)
        return [
            path("<path:object_id>/act/<str:action>/", act, name="platform_events_webhooksubscription_act"),
            *super().get_urls(),
        ]

    # The columns

    @admin.display(description="events")
    def event_list(self, endpoint):
        return ", ".join(endpoint.events)

    @admin.display(description="status", ordering="status")
    def status_and_reason(self, endpoint):
        status = badge(endpoint.status, EndpointStatus(endpoint.status).label)
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
            text += f"; the previous secret signs too until {endpoint.previous_secret_until:%Y-%m-%d %H:%M:%S %Z}"
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
                return self._secret_page(request, endpoint, secret, "The endpoint was added.")
        return add_form(
            request,
            self,
            form,
            fields=["url", "events", "owner", "description", "secret"],
            title="Add a webhook endpoint",
            submit="Add the endpoint and show its secret",
        )

    def _secret_page(self, request, endpoint, secret: str, done: str) -> TemplateResponse:
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

    # The page's buttons

    def change_view(self, request, object_id, form_url="", extra_context=None):
        endpoint = self.get_object(request, object_id)
        if endpoint is None:
            return super().change_view(request, object_id, form_url, extra_context)
        buttons = []
        if self.has_change_permission(request, endpoint):
            buttons = [
                (reverse("admin:platform_events_webhooksubscription_act", args=[endpoint.pk, name]), action.label)
                for name, action in ENDPOINT_ACTIONS.items()
                if action.applies_to(endpoint)
            ]
        context = {
            "action_buttons": buttons,
            "deliveries_url": f"{reverse('admin:platform_events_webhookdelivery_changelist')}"
            f"?subscription__id__exact={endpoint.pk}",
            "trail_url": f"{reverse('admin:platform_events_auditevent_changelist')}"
            f"?resource_type=webhook_endpoint&resource_id={endpoint.pk}"
            if request.user.has_perm("platform_events.view_auditevent")
            else None,
        }
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), **context})

    def act_view(self, request, object_id, action):
        """One button of the endpoint page: its confirmation (GET), then the service (POST)."""
        if action not in ENDPOINT_ACTIONS:
            raise Http404(f"No such action: {action}")
        endpoint = self.get_object(request, object_id)
        if endpoint is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if not self.has_change_permission(request, endpoint):
            raise PermissionDenied
        chosen = ENDPOINT_ACTIONS[action]
        page = reverse("admin:platform_events_webhooksubscription_change", args=[endpoint.pk])
        form = ReasonForm(request.POST if request.method == "POST" and request.POST.get("confirm") else None)
        if not form.is_valid():
            return confirmation(
                request,
                self,
                title=f"{chosen.label}: {endpoint.url}",
                question=chosen.question,
                items=[f"{endpoint.url} ({endpoint.owner_id}, {EndpointStatus(endpoint.status).label})"],
                form=form,
                button=chosen.label,
                back=page,
            )
        try:
            with audit_context(reason=form.cleaned_data["reason"] or None, request=request):
                outcome = chosen.service(endpoint, actor=request.user)
        except EndpointError as refusal:
            self.message_user(request, str(refusal), messages.WARNING)
            return HttpResponseRedirect(page)
        if action == "rotate_secret":
            return self._secret_page(request, endpoint, outcome, "The secret was rotated.")
        self.message_user(request, chosen.done, messages.SUCCESS)
        return HttpResponseRedirect(page)


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


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyModelAdmin):
    # Nine columns fit 1366 px beside the filters, with short headings; when it was queued is on its page.
    list_display = ["event_type", "about", "endpoint", "status_badge", "tries", "http", "ms", "next_try", "last_try"]
    list_display_links = ["event_type"]
    list_filter = [EventFilter, "status", "subscription"]
    list_select_related = ["event", "subscription"]
    actions = ["redeliver"]
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

    def get_urls(self):
        again = self.admin_site.admin_view(self.redeliver_view)
        return [
            path("<path:object_id>/redeliver/", again, name="platform_events_webhookdelivery_redeliver"),
            *super().get_urls(),
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
        return badge(delivery.status, DeliveryStatus(delivery.status).label)

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
        return format_html("<pre style='white-space: pre-wrap;'>{}</pre>", delivery.http_response_body_excerpt or "—")

    @admin.display(description="event")
    def event_link(self, delivery):
        url = reverse("admin:platform_events_outboxevent_change", args=[delivery.event_id])
        return format_html('<a href="{}">{} (#{})</a>', url, delivery.event_id, delivery.event.seq)

    @admin.display(description="payload")
    def payload(self, delivery):
        return pretty_json(delivery.event.payload)

    def get_queryset(self, request):
        return with_account_links(super().get_queryset(request), request)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        context = {}
        if self.has_redeliver_permission(request):
            context["action_buttons"] = [
                (reverse("admin:platform_events_webhookdelivery_redeliver", args=[object_id]), "Send again")
            ]
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), **context})

    @admin.action(permissions=["redeliver"], description="Send the selected deliveries again")
    def redeliver(self, request, queryset):
        return self._confirm_and_redeliver(
            request, queryset, back=reverse("admin:platform_events_webhookdelivery_changelist")
        )

    def redeliver_view(self, request, object_id):
        if not self.has_redeliver_permission(request):
            raise PermissionDenied
        delivery = self.get_object(request, object_id)
        if delivery is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        page = reverse("admin:platform_events_webhookdelivery_change", args=[delivery.pk])
        answer = self._confirm_and_redeliver(request, self.get_queryset(request).filter(pk=delivery.pk), back=page)
        return answer or HttpResponseRedirect(page)

    def has_redeliver_permission(self, request):
        return request.user.has_perm("platform_events.redeliver_webhookdelivery")

    def _confirm_and_redeliver(self, request, queryset, *, back):
        if request.POST.get("confirm") != "yes":
            _, _, description = self.get_action("redeliver")
            return confirmation(
                request,
                self,
                title=description,
                question=ngettext(
                    "This delivery is sent again as soon as a dispatcher is free (one already waiting is left as it is).",
                    "These deliveries are sent again as soon as a dispatcher is free (those already waiting are left as they are).",
                    len(queryset),
                ),
                items=[
                    f"{delivery.event.event_type} to {delivery.subscription.url} — {DeliveryStatus(delivery.status).label}"
                    for delivery in queryset[:NAMED_ON_CONFIRMATION]
                ],
                more=max(0, len(queryset) - NAMED_ON_CONFIRMATION),
                selected=[delivery.pk for delivery in queryset],
                action="redeliver",
                button="Send again",
                back=back,
            )
        selected = queryset.count()
        with audit_context(request=request):
            sent = deliveries_redeliver(queryset, actor=request.user)
        message = ngettext("%(count)d delivery sent again.", "%(count)d deliveries sent again.", sent) % {"count": sent}
        if left := selected - sent:
            message += " " + ngettext(
                "%(count)d was already waiting to be sent.", "%(count)d were already waiting to be sent.", left
            ) % {"count": left}
        self.message_user(request, message, messages.SUCCESS if sent else messages.INFO)
        return None
