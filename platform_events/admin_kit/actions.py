"""Staff actions on rows: a confirmation page (with a reason for the audit trail when the action asks
one), one service call per row, and a report of what was done, what was so already and what was
skipped, and why. The same flow serves a list's action on the selected rows and a button on one row's
page (as Django's own delete action confirms first: a GET never changes anything).

An admin declares its actions as ``RowAction``s in ``row_actions`` and mixes in ``RowActions``:

    row_actions = {"suspend": RowAction("Suspend", run=..., question=..., done=...)}

    @admin.action(permissions=["suspend"], description="Suspend selected accounts")
    def suspend(self, request, queryset):
        return self.confirm_and_run(request, queryset, "suspend")

Each row's page gets the actions that apply to it as buttons (``action_buttons`` in its context,
templates/admin/object_tools_buttons.html), each posting to ``<object id>/act/<action>/``.
"""

import enum
from collections import defaultdict
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.translation import ngettext

# A confirmation page names this many of the selected rows, then counts the rest.
NAMED_ON_CONFIRMATION = 10
# A report names this many rows, then counts the rest.
NAMED_IN_REPORTS = 5


class Reason(enum.Enum):
    """Whether the confirmation asks why (the reason goes to the audit trail with every row's change)."""

    REQUIRED = "required"
    OPTIONAL = "optional"
    NONE = "none"


def reason_field(*, required: bool) -> forms.CharField:
    """Why staff make a change: kept in the audit trail with it."""
    return forms.CharField(
        label="Why? (kept in the audit trail)" if required else "Why? (optional; kept in the audit trail)",
        required=required,
        max_length=1000,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
    )


class ReasonForm(forms.Form):
    def __init__(self, *args, reason: Reason, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["reason"] = reason_field(required=reason is Reason.REQUIRED)


def always(row) -> bool:
    return True


@dataclass(frozen=True)
class RowAction:
    """One thing staff do to rows.

    ``run(row, actor=, reason=)`` is one service call: it returns False (or 0) when the row was so
    already, a count when it did several things (assignments moved), anything else for one thing
    done; it raises one of ``refused`` to skip the row with the refusal's ``reason`` (a few words that
    group refusals: "already suspended"), or, lacking one, its sentence.

    ``question`` is what the confirmation asks about the rows, by their number (ngettext's two forms,
    ``%(count)d`` in the plural, or a function of the rows): "Suspend this account?"; the reason's
    field asks why below the rows;
    ``done`` says what was done (``%(count)d``, and ``%(names)s`` for the rows done), ``already`` what
    was so already (``%(count)d``), ``none_done`` replaces ``done`` when nothing was done.
    ``describe`` names a row on the confirmation, ``name`` in the report; the row's page offers the
    action only while ``applies_to(row)``.
    """

    label: str  # its button, on the row's page and on the confirmation
    run: Callable[..., Any]
    question: tuple[str, str] | Callable[[list], str]
    done: tuple[str, str]
    already: tuple[str, str] | None = None
    none_done: str | None = None
    reason: Reason = Reason.REQUIRED
    describe: Callable[[Any], str] = str
    name: Callable[[Any], str] = str
    applies_to: Callable[[Any], bool] = always
    refused: tuple[type[Exception], ...] = ()
    # A button on the row's page (while it applies), and its own URL there (<id>/<name>/) besides act/<name>/.
    on_page: bool = True
    own_url: bool = False
    # The admin's method answering a run from the row's page instead of the report, given the request,
    # the row and what ``run`` returned (a credential to show once).
    answer: str | None = None


@dataclass
class Outcome:
    """What a run did: the count done (and which rows), the rows so already, the rows skipped by reason."""

    done: int = 0
    done_rows: list[str] = field(default_factory=list)
    already: int = 0
    skipped: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    results: list = field(default_factory=list)


def named(names: list[str]) -> str:
    """'a, b, c, d, e and 3 more': the first few names, then a count of the rest."""
    shown = ", ".join(names[:NAMED_IN_REPORTS])
    return shown + (f" and {len(names) - NAMED_IN_REPORTS} more" if len(names) > NAMED_IN_REPORTS else "")


def skipped_report(reason: str, names: list[str], *, singular: str, plural: str) -> str:
    """'2 accounts skipped (already suspended): jane, joe.'"""
    return ngettext(
        "%(count)d %(singular)s skipped (%(reason)s): %(names)s.",
        "%(count)d %(plural)s skipped (%(reason)s): %(names)s.",
        len(names),
    ) % {"count": len(names), "singular": singular, "plural": plural, "reason": reason, "names": named(names)}


def run_each(action: RowAction, rows: Iterable, *, actor, reason: str | None, keep_results: bool = False) -> Outcome:
    """The action's service on each row (one transaction each, as the services open them); with
    ``keep_results``, what each run returned."""
    outcome = Outcome()
    for row in rows:
        try:
            result = action.run(row, actor=actor, reason=reason)
        except action.refused as refusal:
            outcome.skipped[getattr(refusal, "reason", None) or str(refusal)].append(action.name(row))
            continue
        if keep_results:
            outcome.results.append(result)
        if result is False or result == 0:
            outcome.already += 1
        else:
            outcome.done += 1 if result is True or not isinstance(result, int) else result
            outcome.done_rows.append(action.name(row))
    return outcome


class RowActions:
    """Mixed into a ModelAdmin before it: ``confirm_and_run`` for its actions, and its rows' buttons."""

    row_actions: dict[str, RowAction] = {}
    # Opened once around a whole run, with the reason and the request (the product's audit context).
    acting: Callable[..., Any] = staticmethod(lambda **context: nullcontext())
    confirmation_template = "admin/confirmation.html"

    def get_urls(self):
        view = self.admin_site.admin_view(self.row_action_view)
        prefix = f"{self.opts.app_label}_{self.opts.model_name}"
        own = [
            path(f"<path:object_id>/{name}/", view, {"action": name}, name=f"{prefix}_{name}")
            for name, action in self.row_actions.items()
            if action.own_url
        ]
        return [*own, path("<path:object_id>/act/<str:action>/", view, name=f"{prefix}_act"), *super().get_urls()]

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        """The row's page, with a button for each action that applies to it now (the row as the page
        read it: no second read)."""
        if obj is not None:
            context = {"action_buttons": self.action_buttons(request, obj), **context}
        return super().render_change_form(request, context, add, change, form_url, obj)

    def action_buttons(self, request, obj) -> list[tuple[str, str]]:
        allowed = self.get_actions(request)
        return [
            (self.row_action_url(obj, name), action.label)
            for name, action in self.row_actions.items()
            if action.on_page and self.may_run(request, name, allowed) and action.applies_to(obj)
        ]

    def row_action_url(self, obj, name: str) -> str:
        prefix = f"admin:{self.opts.app_label}_{self.opts.model_name}"
        if self.row_actions[name].own_url:
            return reverse(f"{prefix}_{name}", args=[obj.pk])
        return reverse(f"{prefix}_act", args=[obj.pk, name])

    def may_run(self, request, name: str, allowed=None) -> bool:
        """As a list action (its ``permissions``), or, for a button that is no list action, with the
        change permission."""
        if name in self.actions:
            return name in (allowed if allowed is not None else self.get_actions(request))
        return self.has_change_permission(request)

    def row_action_view(self, request, object_id, action) -> HttpResponse:
        """One action on one row, from its page: the same confirmation, reason and report as the list's;
        then back to the page (or the page the action's ``answer`` method makes of the row and its result)."""
        if action not in self.row_actions:
            raise Http404(f"No such action: {action}")
        if not self.may_run(request, action):
            raise PermissionDenied
        obj = self.get_object(request, object_id)
        if obj is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        page = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_change", args=[obj.pk])
        answer = self.confirm_and_run(request, self.get_queryset(request).filter(pk=obj.pk), action, page_of=obj)
        return answer or HttpResponseRedirect(page)

    def confirm_and_run(self, request, queryset, action: str, *, page_of=None, rows=None):
        """The confirmation page (GET, or the list's first POST); once confirmed (POST with
        ``confirm=yes``, and a reason where one is asked), the action on each row under one audit
        context, and the report. ``rows`` are what the action runs on when not the selected rows
        themselves (None: the selected rows)."""
        chosen = self.row_actions[action]
        rows = list(queryset) if rows is None else rows
        confirmed = request.method == "POST" and request.POST.get("confirm") == "yes"
        form = ReasonForm(request.POST if confirmed else None, reason=chosen.reason)
        if not confirmed or not form.is_valid():
            return self.confirmation(request, queryset, rows, action, form=form, page_of=page_of)
        reason = (form.cleaned_data["reason"] or None) if chosen.reason is not Reason.NONE else None
        answer = getattr(self, chosen.answer) if chosen.answer and page_of is not None else None
        with self.acting(reason=reason, request=request):
            outcome = run_each(chosen, rows, actor=request.user, reason=reason, keep_results=answer is not None)
        if answer is not None and outcome.results:
            return answer(request, page_of, outcome.results[0])
        self.report(request, chosen, outcome)
        return None

    def confirmation(self, request, queryset, rows, action: str, *, form, page_of=None) -> TemplateResponse:
        chosen = self.row_actions[action]
        if page_of is not None:
            title = f"{chosen.label}: {chosen.name(page_of)}"
            back = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_change", args=[page_of.pk])
        else:
            _, _, title = self.get_action(action)
            back = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist")
        count = len(rows)
        return TemplateResponse(
            request,
            self.confirmation_template,
            {
                **self.admin_site.each_context(request),
                "title": title,
                "opts": self.opts,
                "question": chosen.question(rows)
                if callable(chosen.question)
                else ngettext(*chosen.question, count) % {"count": count},
                "rows": rows,
                "selected_rows": queryset,
                "items": [chosen.describe(row) for row in rows[:NAMED_ON_CONFIRMATION]],
                "more": max(0, count - NAMED_ON_CONFIRMATION),
                "selected": [] if page_of is not None else [obj.pk for obj in queryset],
                "action": None if page_of is not None else action,
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
                "form": form if chosen.reason is not Reason.NONE else None,
                "button": chosen.label,
                "back": back,
                "page_of": page_of,
            },
        )

    def report(self, request, action: RowAction, outcome: Outcome) -> None:
        if outcome.done or action.none_done is None:
            message = ngettext(*action.done, outcome.done) % {"count": outcome.done, "names": named(outcome.done_rows)}
        else:
            message = action.none_done
        if outcome.already and action.already:
            message += " " + ngettext(*action.already, outcome.already) % {"count": outcome.already}
        if message:
            self.message_user(request, message.strip(), messages.SUCCESS if outcome.done else messages.INFO)
        singular, plural = str(self.opts.verbose_name), str(self.opts.verbose_name_plural)
        for reason, names in outcome.skipped.items():
            report = skipped_report(reason, names, singular=singular, plural=plural)
            self.message_user(request, report, messages.WARNING)
