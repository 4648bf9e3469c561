"""Node assignment in the back-office: services, their storage nodes, and the assignments.

Registered by accounts/admin.py (Django discovers only that module); the account page
(lifecycle/backoffice/accounts.py) shows an account's assignments (``NodeAssignmentInline``). Every
change goes through accounts/nodes/services.py with the staff member and, for the actions, a required
reason, so the database's triggers audit it (node.added, node.changed, node.unassigned). Nobody deletes a
service or a node here: removing a node (node_remove) replaces every assignment on it and leaves their
rows without a node, not a job for a click.

A node's list shows its load as a bar; the actions (downed, up, backoff, unassign) each ask why on a
confirmation page. An assignment's ``client_state`` is the hash of its client's sync key: shown by its
first characters only, never listed, sorted, filtered or searched by.
"""

from django import forms
from django.conf import settings
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError
from django.db.models import BooleanField, Count, Q, Value
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
from platform_events.admin_kit.actions import RowAction, reason_field
from platform_events.admin_kit.display import Tone, badge
from platform_events.admin_kit.lookups import DeclaredLookupsOnly
from platform_events.admin_kit.pages import add_page, added
from platform_events.admin_kit.read_only import ReadOnly, ReadOnlyModelAdmin
from platform_events.audit.context import audit_context
from platform_events.audit.row_actions import AuditedRowActions

# A node this full shows its bar in red: it takes few more accounts, and releases none.
FULL_AT = 90
BAR_COLOURS = {"ok": "#417690", "full": Tone.BAD}
STATE_TONES = {"up": Tone.GOOD, "downed": Tone.BAD, "in backoff": Tone.CAUTION}
# The characters of a client_state shown: enough to tell two apart, not the key's hash.
CLIENT_STATE_SHOWN = 6


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
    return format_html_join(" ", "{}", ((badge(state, STATE_TONES[state]),) for state in states))


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
        help_text="The URI of an account's data on its node, starting with {node}, e.g. {node}/1.5/{uid}. Optional.",
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
        help_text="http:// or https://, a host and an optional path; no query, fragment or trailing slash. On a"
        " public address, or in the networks the operator allows (NODE_ALLOWED_NETWORKS).",
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
    reason = reason_field(required=False)

    class Meta:
        model = Node
        fields = ["capacity"]


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
                return added(self, request, service)
        return add_page(self, request, form, title="Add a service")


# Nodes


def node_described(node: Node) -> str:
    """A node as a confirmation names it: its load and state."""
    state = ", ".join(word for word, on in (("downed", node.downed), ("in backoff", node.backoff)) if on) or "up"
    return f"{node.node} ({node.service}, {node.load_percent}% loaded: {node.current_load} / {node.capacity}, {state})"


def node_setting(label: str, question: str, fields: dict, done: tuple[str, str]) -> RowAction:
    """An action that sets ``fields`` on each node (node_update, one transaction each), leaving a node
    already so untouched (nothing to change, nothing to audit)."""

    def run(node, *, actor, reason):
        if all(getattr(node, name) == value for name, value in fields.items()):
            return False
        node_update(service=node.service.service, node=node.node, actor=actor, reason=reason, **fields)
        return True

    return RowAction(
        label,
        run=run,
        question=(question, question),
        done=done,
        already=("%(count)d was so already.", "%(count)d were so already."),
        describe=node_described,
        name=lambda node: node.node,
        refused=(NodeError,),
        on_page=False,
    )


def node_unassign_run(node, *, actor, reason) -> int:
    return node_unassign(service=node.service.service, node=node.node, actor=actor, reason=reason)


def unassign_question(nodes: list[Node]) -> str:
    total = sum(node.live_total for node in nodes)
    return ngettext(
        "%(count)d live assignment is on the selected nodes.",
        "%(count)d live assignments are on the selected nodes.",
        total,
    ) % {"count": total} + (
        " Each is marked replaced: its account is given another node at its next sync, and its data there"
        " is uploaded again."
    )


NODE_ACTIONS = {
    "mark_downed": node_setting(
        "Mark the selected nodes downed",
        "A downed node is given no new account; the accounts on it stay there until it is unassigned.",
        {"downed": True},
        ("%(count)d node marked downed.", "%(count)d nodes marked downed."),
    ),
    "mark_up": node_setting(
        "Mark the selected nodes up",
        "The node is given new accounts again (unless it is in backoff).",
        {"downed": False},
        ("%(count)d node marked up.", "%(count)d nodes marked up."),
    ),
    "set_backoff": node_setting(
        "Set the selected nodes in backoff",
        "A node in backoff is given no new account for now; the accounts on it stay there.",
        {"backoff": True},
        ("%(count)d node set in backoff.", "%(count)d nodes set in backoff."),
    ),
    "clear_backoff": node_setting(
        "Take the selected nodes out of backoff",
        "The node is given new accounts again (unless it is downed).",
        {"backoff": False},
        ("%(count)d node out of backoff.", "%(count)d nodes out of backoff."),
    ),
    # Every live assignment on the nodes replaced: their accounts get another node when next seen.
    "unassign": RowAction(
        "Unassign the selected nodes (move their accounts)",
        run=node_unassign_run,
        question=unassign_question,
        done=(
            "%(count)d assignment replaced: its account gets another node at its next sync.",
            "%(count)d assignments replaced: their accounts get another node at their next sync.",
        ),
        describe=lambda node: f"{node_described(node)[:-1]}, {node.live_total} live)",
        name=lambda node: node.node,
        refused=(NodeError,),
        on_page=False,
    ),
}


@admin.register(Node)
class NodeAdmin(AuditedRowActions, DeclaredLookupsOnly, admin.ModelAdmin):
    list_display = ["node", "service", "load", "available", "state", "assignments_link"]
    list_filter = ["service", "downed", "backoff"]
    list_select_related = ["service"]
    show_facets = admin.ShowFacets.NEVER
    search_fields = ["node"]
    search_help_text = "Part of the node's URL."
    ordering = ["service__service", "node"]
    row_actions = NODE_ACTIONS
    actions = list(NODE_ACTIONS)
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
                return added(self, request, node)
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

    # The actions: a confirmation page asking why, then one service call per node (NODE_ACTIONS)

    @admin.action(permissions=["manage"], description="Mark the selected nodes downed")
    def mark_downed(self, request, queryset):
        return self.confirm_and_run(request, queryset, "mark_downed")

    @admin.action(permissions=["manage"], description="Mark the selected nodes up")
    def mark_up(self, request, queryset):
        return self.confirm_and_run(request, queryset, "mark_up")

    @admin.action(permissions=["manage"], description="Set the selected nodes in backoff")
    def set_backoff(self, request, queryset):
        return self.confirm_and_run(request, queryset, "set_backoff")

    @admin.action(permissions=["manage"], description="Take the selected nodes out of backoff")
    def clear_backoff(self, request, queryset):
        return self.confirm_and_run(request, queryset, "clear_backoff")

    @admin.action(permissions=["manage"], description="Unassign the selected nodes (move their accounts)")
    def unassign(self, request, queryset):
        return self.confirm_and_run(request, queryset, "unassign")


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


class NodeAssignmentInline(ReadOnly, AssignmentColumns, admin.TabularInline):
    """An account's assignments on its page (lifecycle/backoffice/accounts.py), per service, the newest first."""

    model = NodeAssignment
    fk_name = "account"
    fields = readonly_fields = ASSIGNMENT_COLUMNS
    extra = 0
    verbose_name_plural = "node assignments"

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .select_related("service", "node")
            .order_by("service__service", "-created_at", "-uid")
        )


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
