"""Node assignment in the back-office (issue 14): services, their storage nodes, and the assignments.

Registered by lifecycle/backoffice/accounts.py (Django discovers only that module), which also puts an account's
assignments on its page (``NodeAssignmentInline``). Every change goes through accounts/nodes/services.py
with the staff member and, for the actions, a required reason, so the database's triggers audit it
(node.added, node.changed, node.unassigned). Nobody deletes a service or a node here: removing a node
(node_remove) replaces every assignment on it and leaves their rows without a node, not a job for a click.

A node's list shows its load as a bar; the actions (downed, up, backoff, unassign) each ask why on a
confirmation page. An assignment's ``client_state`` is the hash of its client's sync key: shown by its
first characters only, never listed, sorted, filtered or searched by.
"""

from dataclasses import dataclass

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError
from django.db.models import BooleanField, Count, Q, Value
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.translation import ngettext

from accounts.nodes.errors import NodeError, NodeExists, ServiceExists
from accounts.nodes.models import (
    MAX_GENERATION,
    NODE_URL_MAX,
    PATTERN_MAX,
    SERVICE_NAME_MAX,
    Node,
    NodeAssignment,
    Service,
)
from accounts.nodes.services import (
    NODE_NUMBER_RANGES,
    node_add,
    node_unassign,
    node_update,
    node_url_problem,
    pattern_problem,
    service_add,
    service_name_problem,
)
from platform_events.admin_kit.lookups import DeclaredLookupsOnly
from platform_events.admin_kit.read_only import ReadOnlyModelAdmin
from platform_events.audit.context import audit_context

# A node this full shows its bar in red: it takes few more accounts, and releases none.
FULL_AT = 90
BAR_COLOURS = {"ok": "#417690", "full": "#b00020"}
STATE_COLOURS = {"up": "#1b7a1b", "downed": "#b00020", "in backoff": "#8a6d00"}
# The characters of a client_state shown: enough to tell two apart, not the key's hash.
CLIENT_STATE_SHOWN = 6
# A confirmation page names this many of the selected nodes, then counts the rest.
NAMED_ON_CONFIRMATION = 10


def load_bar(node: Node) -> str:
    """The load as a bar (full width at 100%, red from FULL_AT%), its percentage and load / capacity."""
    percent = node.load_percent
    colour = BAR_COLOURS["full" if percent >= FULL_AT else "ok"]
    return format_html(
        '<span class="load" title="{} of {} slots taken">'
        '<span class="load-bar" style="display: inline-block; vertical-align: middle; width: 8em; height: 0.8em;'
        ' background: var(--darkened-bg, #eee); border: 1px solid var(--hairline-color, #ccc); border-radius: 3px;">'
        '<span style="display: block; height: 100%; width: {}%; background: {};"></span></span>'
        ' <span class="load-figures"{}>{}% · {} / {}</span></span>',
        node.current_load,
        node.capacity,
        min(percent, 100),
        colour,
        format_html(' style="color: {}; font-weight: bold;"', colour) if percent >= FULL_AT else "",
        percent,
        node.current_load,
        node.capacity,
    )


def node_state(node: Node) -> str:
    """up, or downed and/or in backoff, as badges: what the allocator makes of the node."""
    states = [name for name, on in (("downed", node.downed), ("in backoff", node.backoff)) if on] or ["up"]
    return format_html_join(
        " ",
        '<span style="color: #fff; background: {}; padding: 1px 8px; border-radius: 8px; white-space: nowrap;">{}</span>',
        ((STATE_COLOURS[state], state) for state in states),
    )


def assignment_state(assignment: NodeAssignment) -> str:
    """live (the account's node now), replaced (history, purged later) or retired (the account is gone:
    tokenserver's tombstone generation)."""
    if assignment.generation >= MAX_GENERATION:
        return "retired"
    return "live" if assignment.replaced_at is None else "replaced"


def client_state_start(assignment: NodeAssignment) -> str:
    if not assignment.client_state:
        return "—"
    return format_html("<code>{}…</code>", assignment.client_state[:CLIENT_STATE_SHOWN])


# Forms: each field checked by the services' own rules (accounts/nodes/services.py), so that a refusal
# is a form error beside its field rather than a constraint's name.


class ServiceAddForm(forms.Form):
    service = forms.CharField(
        label="Service",
        max_length=SERVICE_NAME_MAX,
        help_text="Its name as clients ask for it, e.g. sync-1.5: lower-case letters, digits, '.', '_', '-'.",
    )
    pattern = forms.CharField(
        label="Endpoint pattern",
        max_length=PATTERN_MAX,
        required=False,
        widget=forms.TextInput(attrs={"size": 40}),
        help_text="The URI of an account's data on its node, with {node} in it, e.g. {node}/1.5/{uid}. Optional.",
    )

    def clean_service(self):
        name = self.cleaned_data["service"]
        if problem := service_name_problem(name):
            raise forms.ValidationError(problem)
        return name

    def clean_pattern(self):
        pattern = self.cleaned_data["pattern"] or None
        if problem := pattern_problem(pattern):
            raise forms.ValidationError(problem)
        return pattern


class NodeAddForm(forms.Form):
    service = forms.ModelChoiceField(queryset=Service.objects.all(), empty_label=None)
    node = forms.CharField(
        label="Node URL",
        max_length=NODE_URL_MAX,
        widget=forms.TextInput(attrs={"size": 50, "placeholder": "https://sync-1.example.com"}),
        help_text="http:// or https://, a host and an optional path; no query, fragment or trailing slash.",
    )
    # The numbers' ranges are the services' (NODE_NUMBER_RANGES), said by the fields' own validators.
    capacity = forms.IntegerField(
        min_value=NODE_NUMBER_RANGES["capacity"][0],
        max_value=NODE_NUMBER_RANGES["capacity"][1],
        help_text="How many assignments it may hold.",
        error_messages={"min_value": "A node's capacity is at least 1: a node of capacity 0 takes no one."},
    )
    available = forms.IntegerField(
        label="Released slots",
        min_value=NODE_NUMBER_RANGES["available"][0],
        max_value=NODE_NUMBER_RANGES["available"][1],
        required=False,
        help_text="How many new accounts it may take before more slots are released. Empty: "
        f"{settings.NODE_CAPACITY_RELEASE_RATE:.0%} of the capacity, rounded up (tokenserver's release rate).",
    )

    def clean_node(self):
        node = self.cleaned_data["node"]
        if problem := node_url_problem(node):
            raise forms.ValidationError(problem)
        return node


class NodeChangeForm(forms.ModelForm):
    """A node's page: its capacity (its state changes through the list's actions, each with a reason)."""

    capacity = NodeAddForm.base_fields["capacity"]
    reason = forms.CharField(
        label="Reason (kept in the audit trail; optional)",
        required=False,
        max_length=1000,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
    )

    class Meta:
        model = Node
        fields = ["capacity"]


class ReasonForm(forms.Form):
    reason = forms.CharField(
        label="Reason (kept in the audit trail)", max_length=1000, widget=forms.Textarea(attrs={"rows": 3, "cols": 60})
    )


def add_page(model_admin, request, form, *, title: str) -> TemplateResponse:
    """Django's add page (change_form.html) for a plain form whose saving is a service call."""
    context = {
        **model_admin.admin_site.each_context(request),
        "title": title,
        "adminform": helpers.AdminForm(form, [(None, {"fields": list(form.fields)})], {}),
        "errors": helpers.AdminErrorList(form, []),
        "media": model_admin.media + form.media,
        "inline_admin_formsets": [],
        "is_popup": False,
        "to_field": None,
        "show_save_and_continue": False,
    }
    return model_admin.render_change_form(request, context, add=True)


def added(model_admin, request, obj, name: str) -> HttpResponseRedirect:
    """Once added: say so, and go to the list (or to a new add form, for "Save and add another")."""
    model_admin.message_user(request, f"The {name} “{obj}” was added.", messages.SUCCESS)
    view = "add" if "_addanother" in request.POST else "changelist"
    return HttpResponseRedirect(reverse(f"admin:accounts_{model_admin.opts.model_name}_{view}"))


# Services


@admin.register(Service)
class ServiceAdmin(DeclaredLookupsOnly, admin.ModelAdmin):
    list_display = ["service", "pattern", "node_count", "live_assignments"]
    show_facets = admin.ShowFacets.NEVER
    fields = readonly_fields = ["service", "pattern"]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(node_total=Count("nodes", distinct=True))
            .annotate(live_total=Count("nodes__assignments", filter=Q(nodes__assignments__replaced_at=None)))
        )

    def has_change_permission(self, request, obj=None):
        return False  # a service's name is what clients ask for: it does not change

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="nodes", ordering="node_total")
    def node_count(self, service):
        url = reverse("admin:accounts_node_changelist")
        return format_html('<a href="{}?service__id__exact={}">{}</a>', url, service.pk, service.node_total)

    @admin.display(description="live assignments", ordering="live_total")
    def live_assignments(self, service):
        return service.live_total

    def add_view(self, request, form_url="", extra_context=None):
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = ServiceAddForm(request.POST if request.method == "POST" else None)
        if form.is_valid():
            try:
                with audit_context(request=request):
                    service = service_add(
                        service=form.cleaned_data["service"], pattern=form.cleaned_data["pattern"], actor=request.user
                    )
            except ServiceExists as refusal:
                form.add_error("service", str(refusal))
            else:
                return added(self, request, service, "service")
        return add_page(self, request, form, title="Add a service")


# Nodes


@dataclass(frozen=True)
class NodeAction:
    """One of the node list's actions: what node_update sets, the question its confirmation asks, and
    the report once done."""

    question: str
    fields: dict
    done: tuple[str, str]


NODE_ACTIONS = {
    "mark_downed": NodeAction(
        "A downed node is given no new account; the accounts on it stay there until it is unassigned.",
        {"downed": True},
        ("%(count)d node marked downed.", "%(count)d nodes marked downed."),
    ),
    "mark_up": NodeAction(
        "The node is given new accounts again (unless it is in backoff).",
        {"downed": False},
        ("%(count)d node marked up.", "%(count)d nodes marked up."),
    ),
    "set_backoff": NodeAction(
        "A node in backoff is given no new account for now; the accounts on it stay there.",
        {"backoff": True},
        ("%(count)d node set in backoff.", "%(count)d nodes set in backoff."),
    ),
    "clear_backoff": NodeAction(
        "The node is given new accounts again (unless it is downed).",
        {"backoff": False},
        ("%(count)d node out of backoff.", "%(count)d nodes out of backoff."),
    ),
}


@admin.register(Node)
class NodeAdmin(DeclaredLookupsOnly, admin.ModelAdmin):
    list_display = ["node", "service", "load", "available", "state", "assignments_link"]
    list_filter = ["service", "downed", "backoff"]
    list_select_related = ["service"]
    show_facets = admin.ShowFacets.NEVER
    search_fields = ["node"]
    search_help_text = "Part of the node's URL."
    ordering = ["service__service", "node"]
    actions = ["mark_downed", "mark_up", "set_backoff", "clear_backoff", "unassign"]
    form = NodeChangeForm
    readonly_fields = ["service", "node", "load", "available", "state", "assignments_link"]
    fieldsets = [
        (None, {"fields": ["service", "node", "capacity", "reason"]}),
        ("State", {"fields": ["load", "available", "state", "assignments_link"]}),
    ]

    def get_queryset(self, request):
        live = Count("assignments", filter=Q(assignments__replaced_at=None))
        return super().get_queryset(request).annotate(live_total=live)

    # Who may do what

    def has_delete_permission(self, request, obj=None):
        # Removing a node replaces its assignments and leaves their rows without a node: not a click's job.
        return False

    def has_manage_permission(self, request):
        return request.user.has_perm("accounts.manage_node")

    # The columns

    @admin.display(description="load", ordering="current_load")
    def load(self, node):
        return load_bar(node)

    @admin.display(description="state")
    def state(self, node):
        return node_state(node)

    @admin.display(description="live assignments", ordering="live_total")
    def assignments_link(self, node):
        if not self.admin_site.is_registered(NodeAssignment):
            return node.live_total
        url = reverse("admin:accounts_nodeassignment_changelist")
        return format_html('<a href="{}?node__id__exact={}&amp;state=live">{}</a>', url, node.pk, node.live_total)

    # Adding and changing, through the services

    def add_view(self, request, form_url="", extra_context=None):
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = NodeAddForm(request.POST if request.method == "POST" else None)
        if form.is_valid():
            data = form.cleaned_data
            try:
                with audit_context(request=request):
                    node = node_add(
                        service=data["service"].service,
                        node=data["node"],
                        capacity=data["capacity"],
                        available=data["available"],
                        actor=request.user,
                    )
            except NodeExists as refusal:
                form.add_error("node", str(refusal))
            except (NodeError, IntegrityError) as refusal:  # a rule the form did not know, or the service gone
                form.add_error(None, f"The database refused the node: {refusal}")
            else:
                return added(self, request, node, "node")
        return add_page(self, request, form, title="Add a node")

    def save_model(self, request, obj, form, change):
        reason = form.cleaned_data.get("reason") or None
        with audit_context(request=request):
            node_update(
                service=obj.service.service,
                node=obj.node,
                capacity=form.cleaned_data["capacity"],
                actor=request.user,
                reason=reason,
            )

    # The actions: a confirmation page asking why, then one service call per node

    @admin.action(permissions=["manage"], description="Mark the selected nodes downed")
    def mark_downed(self, request, queryset):
        return self._confirm_and_update(request, queryset, "mark_downed")

    @admin.action(permissions=["manage"], description="Mark the selected nodes up")
    def mark_up(self, request, queryset):
        return self._confirm_and_update(request, queryset, "mark_up")

    @admin.action(permissions=["manage"], description="Set the selected nodes in backoff")
    def set_backoff(self, request, queryset):
        return self._confirm_and_update(request, queryset, "set_backoff")

    @admin.action(permissions=["manage"], description="Take the selected nodes out of backoff")
    def clear_backoff(self, request, queryset):
        return self._confirm_and_update(request, queryset, "clear_backoff")

    @admin.action(permissions=["manage"], description="Unassign the selected nodes (move their accounts)")
    def unassign(self, request, queryset):
        """Every live assignment on the nodes replaced (node_unassign): their accounts get another node
        when next seen. The confirmation says how many, per node."""
        nodes = list(queryset)
        total = sum(node.live_total for node in nodes)
        form = self._reason_form(request)
        if not form.is_valid():
            question = ngettext(
                "%(count)d live assignment is on the selected nodes.",
                "%(count)d live assignments are on the selected nodes.",
                total,
            ) % {"count": total}
            question += (
                " Each is marked replaced: its account is given another node at its next sync, and its data there"
                " is uploaded again. Why?"
            )
            return self._confirmation(
                request, nodes, "unassign", form, question=question, describe=lambda node: f"{node.live_total} live"
            )
        replaced, skipped = 0, []
        with audit_context(reason=form.cleaned_data["reason"], request=request):
            for node in nodes:
                try:
                    replaced += node_unassign(
                        service=node.service.service,
                        node=node.node,
                        actor=request.user,
                        reason=form.cleaned_data["reason"],
                    )
                except NodeError as refusal:
                    skipped.append(f"{node.node} ({refusal})")
        message = ngettext(
            "%(count)d assignment replaced: its account gets another node at its next sync.",
            "%(count)d assignments replaced: their accounts get another node at their next sync.",
            replaced,
        ) % {"count": replaced}
        self.message_user(request, message, messages.SUCCESS if replaced else messages.INFO)
        self._report_skipped(request, skipped)
        return None

    def _confirm_and_update(self, request, queryset, action: str):
        """The confirmation page; once answered, node_update on each node not already so (one
        transaction each, under one audit context), and a report of what changed."""
        chosen = NODE_ACTIONS[action]
        nodes = list(queryset)
        form = self._reason_form(request)
        if not form.is_valid():
            return self._confirmation(request, nodes, action, form, question=f"{chosen.question} Why?")
        done, already, skipped = 0, 0, []
        with audit_context(reason=form.cleaned_data["reason"], request=request):
            for node in nodes:
                if all(getattr(node, name) == value for name, value in chosen.fields.items()):
                    already += 1  # nothing to change, nothing to audit
                    continue
                try:
                    node_update(
                        service=node.service.service,
                        node=node.node,
                        actor=request.user,
                        reason=form.cleaned_data["reason"],
                        **chosen.fields,
                    )
                except NodeError as refusal:
                    skipped.append(f"{node.node} ({refusal})")
                else:
                    done += 1
        message = ngettext(*chosen.done, done) % {"count": done}
        if already:
            message += " " + ngettext("%(count)d was so already.", "%(count)d were so already.", already) % {
                "count": already
            }
        self.message_user(request, message, messages.SUCCESS if done else messages.INFO)
        self._report_skipped(request, skipped)
        return None

    def _reason_form(self, request) -> ReasonForm:
        return ReasonForm(request.POST if request.POST.get("confirm") else None)

    def _confirmation(self, request, nodes, action, form, *, question, describe=None):
        """templates/admin/confirmation.html (the page lifecycle's admins share), naming the nodes."""
        _, _, title = self.get_action(action)

        def item(node):
            state = (
                ", ".join(word for word, on in (("downed", node.downed), ("in backoff", node.backoff)) if on) or "up"
            )
            extra = f", {describe(node)}" if describe else ""
            return f"{node.node} ({node.service}, {node.load_percent}% loaded: {node.current_load} / {node.capacity}, {state}{extra})"

        return TemplateResponse(
            request,
            "admin/confirmation.html",
            {
                **self.admin_site.each_context(request),
                "title": title,
                "opts": self.opts,
                "question": question,
                "items": [item(node) for node in nodes[:NAMED_ON_CONFIRMATION]],
                "more": max(0, len(nodes) - NAMED_ON_CONFIRMATION),
                "selected": [node.pk for node in nodes],
                "action": action,
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
                "form": form,
                "button": title,
                "back": reverse("admin:accounts_node_changelist"),
            },
        )

    def _report_skipped(self, request, skipped: list[str]) -> None:
        if skipped:
            self.message_user(request, f"Not changed: {'; '.join(skipped)}.", messages.WARNING)


# Assignments


class AssignmentStateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [("live", "live"), ("replaced", "replaced"), ("retired", "retired")]

    def queryset(self, request, queryset):
        match self.value():
            case "live":
                return queryset.filter(replaced_at=None)
            case "replaced":
                return queryset.exclude(replaced_at=None).filter(generation__lt=MAX_GENERATION)
            case "retired":
                return queryset.filter(generation__gte=MAX_GENERATION)
        return queryset


# The account page's columns; the list's add the account, and name the row by its uid.
ASSIGNMENT_COLUMNS = [
    "service",
    "node",
    "uid_shown",
    "state",
    "generation_shown",
    "keys_changed_at",
    "created_at",
    "replaced_at",
    "client_state_start",
]


class AssignmentColumns:
    """What an assignment shows, in the list and on the account page: never its client_state whole."""

    @admin.display(description="state")
    def state(self, assignment):
        return assignment_state(assignment)

    @admin.display(description="uid", ordering="uid")
    def uid_shown(self, assignment):
        return assignment.uid

    @admin.display(description="generation", ordering="generation")
    def generation_shown(self, assignment):
        return "retired (max)" if assignment.generation >= MAX_GENERATION else assignment.generation

    @admin.display(description="client state")
    def client_state_start(self, assignment):
        return client_state_start(assignment)


class NodeAssignmentInline(AssignmentColumns, admin.TabularInline):
    """An account's assignments on its page (lifecycle/backoffice/accounts.py), per service, the newest first."""

    model = NodeAssignment
    fk_name = "account"
    fields = readonly_fields = ASSIGNMENT_COLUMNS
    extra = 0
    can_delete = False
    verbose_name_plural = "node assignments"

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .select_related("service", "node")
            .order_by("service__service", "-created_at", "-uid")
        )

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(NodeAssignment)
class NodeAssignmentAdmin(AssignmentColumns, ReadOnlyModelAdmin):
    """Every assignment, by service, node and state; found by account id."""

    list_display = ["uid", "account_link", *(column for column in ASSIGNMENT_COLUMNS if column != "uid_shown")]
    list_display_links = ["uid"]
    list_filter = ["service", "node", AssignmentStateFilter]
    list_select_related = ["service", "node"]
    search_fields = ["account__id"]  # exactly, by id: get_search_results
    search_help_text = "An account's id."
    fields = readonly_fields = list_display

    def get_queryset(self, request):
        # Whether the rows link to the accounts' pages: only for those who may open them.
        links = Value(request.user.has_perm("accounts.view_account"), output_field=BooleanField())
        return super().get_queryset(request).annotate(links_accounts=links)

    def get_search_results(self, request, queryset, search_term):
        term = search_term.strip()
        if not term:
            return queryset, False
        if not (term.isascii() and term.isdigit() and len(term) <= 18):
            return queryset.none(), False
        return queryset.filter(account_id=int(term)), False

    @admin.display(description="account", ordering="account")
    def account_link(self, assignment):
        """The account's id, linked to its page for those who may open it."""
        if not assignment.links_accounts:
            return assignment.account_id
        url = reverse("admin:accounts_account_change", args=[assignment.account_id])
        return format_html('<a href="{}">{}</a>', url, assignment.account_id)
