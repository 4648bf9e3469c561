"""API clients in the back-office: add one (its key shown once), change its scopes, revoke it with a
reason. The model and services are platform_events/api/models.py and clients.py.

A key is shown once, on a page of its own answering the POST that made it: never in a URL, a message
kept in the session, a form field afterwards, a log or the audit trail (only its SHA-256 is stored,
and the first characters, which tell keys apart). Every change goes through the services, whose
triggers audit it (api_client.created, changed, revoked). A revoked client's page is read-only, and
no client is ever deleted here: the audit trail names clients by id (``api-client:7`` acted,
``api_client`` 7 was changed), and a deleted client's name could be given to another.
"""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.utils.html import format_html
from django.utils.text import Truncator
from django.views.decorators.debug import sensitive_variables

from platform_events.admin_kit.actions import RowAction
from platform_events.admin_kit.display import Tone, when
from platform_events.admin_kit.lookups import DeclaredLookupsOnly
from platform_events.admin_kit.pages import Concealed, add_page, shown_once
from platform_events.api.clients import (
    NAME_MAX_LENGTH,
    ApiClientError,
    api_client_change_scopes,
    api_client_create,
    api_client_name_problem,
    api_client_revoke,
    api_client_scopes_problem,
    scopes_beyond_actor,
)
from platform_events.api.models import ApiClient, ApiScope
from platform_events.audit.context import audit_context
from platform_events.audit.row_actions import AuditedRowActions

# The list shows this many characters of a revocation's reason; the whole of it on hover and on its page.
REASON_SHOWN = 60

# The key page's example: a call each scope allows, the first the client holds (ApiScope's order).
CURL_EXAMPLES = {
    ApiScope.ACCOUNTS_READ: ("api:look_up_accounts", 'curl -H "Authorization: Bearer {key}" "{url}?login=ada"'),
    ApiScope.ACCOUNTS_WRITE: (
        "api:provision_account",
        'curl -X POST -H "Authorization: Bearer {key}" -H "Idempotency-Key: $(openssl rand -hex 16)"'
        ' -H "Content-Type: application/json" -d \'{{"email": "ada@example.com", "login": "ada"}}\' "{url}"',
    ),
    # The collection's URL and an account's id: DELETE /api/v1/accounts/1.
    ApiScope.ACCOUNTS_DELETE: (
        "api:look_up_accounts",
        'curl -X DELETE -H "Authorization: Bearer {key}" -H "Idempotency-Key: $(openssl rand -hex 16)"'
        ' "{url}/1?reason=contract%20ended"',
    ),
    ApiScope.ACCOUNTS_ERASE: (
        "api:look_up_accounts",
        'curl -X DELETE -H "Authorization: Bearer {key}" -H "Idempotency-Key: $(openssl rand -hex 16)"'
        ' "{url}/1?erase=now&reason=the%20person%20asked"',
    ),
    ApiScope.SCIM: (
        "scim:users",
        "curl -H \"Authorization: Bearer {key}\" '{url}?filter=userName%20eq%20%22ada%22'",
    ),
    ApiScope.SESSIONS: (
        "api:check_password",
        'curl -X POST -H "Authorization: Bearer {key}" -H "Content-Type: application/json"'
        ' -d \'{{"identifier": "ada", "password": "..."}}\' "{url}"',
    ),
}


class ScopesField(forms.MultipleChoiceField):
    """The scopes as checkboxes, one a line with what each allows; none is a form error."""

    widget = forms.CheckboxSelectMultiple
    default_error_messages = {"required": "Choose at least one scope: each operation needs one."}

    def __init__(self, **kwargs):
        super().__init__(
            choices=ApiScope.choices,
            help_text="What its key may do: only what your own role may do (checking passwords: superusers only).",
            **kwargs,
        )


class ApiClientAddForm(forms.Form):
    """A new client's name and scopes, checked by the service's own rules before it is asked."""

    name = forms.CharField(
        max_length=NAME_MAX_LENGTH,
        widget=forms.TextInput(attrs={"size": 40, "autocomplete": "off"}),
        help_text="Who calls the API with this key (a partner or a service), shown in the audit trail when it"
        " acts: letters, digits, '.', '_', '-' and spaces.",
    )
    scopes = ScopesField()

    def clean_name(self):
        name = self.cleaned_data["name"]
        if problem := api_client_name_problem(name):
            raise forms.ValidationError(problem)
        return name


class ApiClientChangeForm(forms.ModelForm):
    """A client's page: its scopes, the one thing that changes (its name and key do not), checked by the
    service's own rule before it is asked."""

    scopes = ScopesField()
    actor = None  # who is changing it (ApiClientAdmin.get_form): a scope added must be one they may give

    def clean_scopes(self):
        scopes = self.cleaned_data["scopes"]
        if problem := api_client_scopes_problem(scopes) or scopes_beyond_actor(
            set(scopes) - set(self.instance.scopes), self.actor
        ):
            raise forms.ValidationError(problem)
        return scopes

    class Meta:
        model = ApiClient
        fields = ["scopes"]


def revoke(client: ApiClient, *, actor, reason: str) -> bool:
    return api_client_revoke(client=client, reason=reason, actor=actor)


CLIENT_ACTIONS = {
    "revoke": RowAction(
        "Revoke",
        run=revoke,
        question=(
            "Revoke this client? Its key stops working at once, for good (a new key is a new client).",
            "Revoke these %(count)d clients? Their keys stop working at once, for good (a new key is a new client).",
        ),
        done=(
            "%(count)d client revoked: %(names)s; its key no longer works.",
            "%(count)d clients revoked: %(names)s; their keys no longer work.",
        ),
        none_done="No client revoked.",
        already=("%(count)d was revoked already.", "%(count)d were revoked already."),
        describe=lambda client: (
            f"{client.name} (key {client.key_prefix}…, {', '.join(client.scopes)})"
            + (" — already revoked" if client.revoked_at else "")
        ),
        name=lambda client: client.name,
        applies_to=lambda client: client.revoked_at is None,
        refused=(ApiClientError,),
        own_url=True,
    ),
}


class RevokedFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "revoked"

    def lookups(self, request, model_admin):
        return [("no", "Working"), ("yes", "Revoked")]

    def queryset(self, request, queryset):
        if self.value() is None:
            return queryset
        return queryset.filter(revoked_at__isnull=self.value() == "no")


class ScopeFilter(admin.SimpleListFilter):
    title = "scope"
    parameter_name = "scope"

    def lookups(self, request, model_admin):
        return [(scope.value, scope.value) for scope in ApiScope]

    def queryset(self, request, queryset):
        return queryset if self.value() is None else queryset.filter(scopes__contains=[self.value()])


@admin.register(ApiClient)
class ApiClientAdmin(AuditedRowActions, DeclaredLookupsOnly, admin.ModelAdmin):
    list_display = ["name", "key_start", "scope_list", "created", "last_used", "revocation"]
    list_filter = [RevokedFilter, ScopeFilter]
    show_facets = admin.ShowFacets.NEVER
    search_fields = ["name"]
    search_help_text = "Part of the client's name."
    row_actions = CLIENT_ACTIONS
    actions = list(CLIENT_ACTIONS)
    form = ApiClientChangeForm
    add_form_template = "admin/add_form_shown_once.html"
    readonly_fields = ["name", "key_start", "created", "made_by", "last_used", "revoked", "id"]
    fieldsets = [
        (None, {"fields": ["name", "key_start", "scopes"]}),
        ("State", {"fields": ["created", "made_by", "last_used", "revoked", "id"]}),
    ]

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change, **kwargs)
        return type(form.__name__, (form,), {"actor": request.user})

    # Who may do what

    def has_change_permission(self, request, obj=None):
        # A revoked client's page is read-only: its scopes no longer matter.
        if obj is not None and obj.revoked_at is not None:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        # Nobody, superusers included: revoking ends a key, and deleting would leave the audit trail's
        # api-client ids pointing at nothing (and free the name for another client).
        return False

    def has_revoke_permission(self, request):
        return request.user.has_perm("platform_events.change_apiclient")

    # The columns

    @admin.display(description="key starts with")
    def key_start(self, client):
        return format_html("<code>{}…</code>", client.key_prefix)

    @admin.display(description="scopes")
    def scope_list(self, client):
        return ", ".join(client.scopes)

    @admin.display(description="created", ordering="created_at")
    def created(self, client):
        return when(client.created_at)

    @admin.display(description="made by")
    def made_by(self, client):
        """Whose key it is: every act of the client names them in the audit trail too."""
        return client.created_by or "an operator, at the command line (manage.py add_api_client)"

    @admin.display(description="last used", ordering="last_used_at")
    def last_used(self, client):
        return when(client.last_used_at) if client.last_used_at else "never"

    @admin.display(description="revoked")
    def revoked(self, client):
        """On its page: when and why, whole."""
        if client.revoked_at is None:
            return "No: its key works."
        return f"{when(client.revoked_at)}: {client.revoked_reason}"

    @admin.display(description="revoked", ordering="revoked_at")
    def revocation(self, client):
        """In the list: when, and the reason's start (the whole of it on hover)."""
        if client.revoked_at is None:
            return "—"
        return format_html(
            '<span style="color: {};">{}</span><br><span title="{}">{}</span>',
            Tone.BAD,
            when(client.revoked_at),
            client.revoked_reason,
            Truncator(client.revoked_reason).chars(REASON_SHOWN),
        )

    # Adding: the key's page answers the POST

    @method_decorator(sensitive_variables("key"))
    def add_view(self, request, form_url="", extra_context=None):
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = ApiClientAddForm(request.POST if request.method == "POST" else None)
        if form.is_valid():
            try:
                with audit_context(request=request):
                    client, key = api_client_create(
                        name=form.cleaned_data["name"], scopes=form.cleaned_data["scopes"], actor=request.user
                    )
            except ApiClientError as refusal:
                form.add_error(refusal.field, str(refusal))
            else:
                return shown_once(
                    request,
                    self,
                    client,
                    template="admin/platform_events/apiclient/key.html",
                    title="The API client's key",
                    label="API key",
                    secret=key,
                    curl=curl_example(request, client, key),
                )
        return add_page(self, request, form, title="Add an API client", submit="Add the client and show its key")

    # Changing: the scopes, through the service

    def save_model(self, request, obj, form, change):
        try:
            with audit_context(request=request):
                api_client_change_scopes(client=obj, scopes=form.cleaned_data["scopes"], actor=request.user)
        except ApiClientError as refusal:  # revoked in another tab since the page was read
            request.refused_change = refusal

    def response_change(self, request, obj):
        if refusal := getattr(request, "refused_change", None):
            self.message_user(request, str(refusal), messages.WARNING)
            return HttpResponseRedirect(reverse("admin:platform_events_apiclient_change", args=[obj.pk]))
        return super().response_change(request, obj)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        client = self.get_object(request, object_id)
        if client is None:
            return super().change_view(request, object_id, form_url, extra_context)
        context = {"trail_url": None, "acted_url": None}
        if request.user.has_perm("platform_events.view_auditevent"):
            trail = reverse("admin:platform_events_auditevent_changelist")
            context["trail_url"] = f"{trail}?resource_type=api_client&resource_id={client.pk}"
            context["acted_url"] = f"{trail}?q={client.audit_kind}:{client.pk}"
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), **context})

    # Revoking: one from its page, or a selection from the list; a reason either way (CLIENT_ACTIONS)

    @admin.action(permissions=["revoke"], description="Revoke the selected clients' keys")
    def revoke(self, request, queryset):
        return self.confirm_and_run(request, queryset, "revoke")


@sensitive_variables("key")
def curl_example(request, client: ApiClient, key: str) -> Concealed:
    """A command line that calls the API with this key, for an operation its scopes allow."""
    scope = next(scope for scope in ApiScope if scope in client.scopes)
    url_name, line = CURL_EXAMPLES[scope]
    return Concealed(line.format(key=key, url=request.build_absolute_uri(reverse(url_name))))
