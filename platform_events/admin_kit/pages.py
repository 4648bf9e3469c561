"""Pages the composition's admins share (platform_events/webhooks/admin.py, platform_events/api/admin.py):
the confirmation before a change, the add form and the page that show a credential once, and times as
they show them.
"""

from django.contrib.admin import helpers
from django.template.response import TemplateResponse
from django.utils.formats import date_format
from django.utils.text import slugify
from django.utils.timezone import localtime
from django.views.decorators.debug import sensitive_variables

# A confirmation page names this many of the selected rows, then counts the rest.
NAMED_ON_CONFIRMATION = 10


def confirmation(
    request, model_admin, *, title, question, items, button, back, form=None, more=0, selected=(), action=None
):
    """A confirmation page (templates/admin/confirmation.html): what is about to change, a reason
    (``form``'s ``reason`` field: optional or required, as the form says), the button that POSTs it,
    and a way back."""
    return TemplateResponse(
        request,
        "admin/confirmation.html",
        {
            **model_admin.admin_site.each_context(request),
            "title": title,
            "opts": model_admin.opts,
            "question": question,
            "items": items,
            "more": more,
            "selected": selected,
            "action": action,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "form": form,
            "button": button,
            "back": back,
        },
    )


def add_form(request, model_admin, form, *, fields: list[str], title: str, submit: str) -> TemplateResponse:
    """The add form of what has a credential shown once (an API client, a webhook endpoint:
    templates/admin/add_form_shown_once.html, in the look of the model's own change_form.html):
    ``fields`` of ``form``, and a button saying what comes next (``submit``)."""
    opts = model_admin.opts
    return TemplateResponse(
        request,
        "admin/add_form_shown_once.html",
        {
            **model_admin.admin_site.each_context(request),
            "title": title,
            "opts": opts,
            "change_form": f"admin/{opts.app_label}/{opts.model_name}/change_form.html",
            "submit": submit,
            "adminform": helpers.AdminForm(form, [(None, {"fields": fields})], {}),
            "errors": helpers.AdminErrorList(form, []),
            # change_form.html runs prepopulate_init.js, which needs the admin's jQuery: without it the
            # page threw "$ is not a function" in the browser.
            "media": model_admin.media + form.media,
        },
    )


class Concealed:
    """A credential in a template's context: it renders as itself, but its repr, which is what a log
    or an error report prints of the context (django.template logs the whole context at DEBUG for
    every variable a template cannot find, admin/base.html's ``subtitle`` among them), hides it."""

    def __init__(self, text: str):
        self._text = text

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return "<concealed>"


@sensitive_variables("secret")
def shown_once(request, model_admin, obj, *, template: str, title: str, label: str, secret: str, **context):
    """A credential shown this once, on the page answering the POST that made it (a template extending
    templates/admin/shown_once.html): never a message kept in the session, never a field of a later
    page, never a log (Concealed). Not cached: admin_view() marks every admin page no-store (never_cache).
    ``context`` holding the credential too wraps it in Concealed as well."""
    return TemplateResponse(
        request,
        template,
        {
            **model_admin.admin_site.each_context(request),
            "title": title,
            "opts": model_admin.opts,
            "object": obj,
            "shown_label": label,
            "shown_id": slugify(label),  # the box's id: "signing-secret", "api-key"
            "shown": Concealed(secret),
            **context,
        },
    )


def when(moment) -> str:
    """To the second, in the admin's zone (DATETIME_FORMAT), or a dash."""
    return date_format(localtime(moment), "DATETIME_FORMAT") if moment else "—"
