"""Pages of the admins whose saving is a service call: the add page, and the page that shows a
credential once (an API client's key, a webhook endpoint's signing secret), answering the POST that
made it."""

from django.contrib import messages
from django.contrib.admin import helpers
from django.http import HttpResponseRedirect
from django.template.loader import select_template
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.text import slugify
from django.views.decorators.debug import sensitive_variables


def add_page(model_admin, request, form, *, title: str, submit: str | None = None) -> TemplateResponse:
    """Django's add page (the model's change_form.html) for a plain form whose saving is a service call.
    With ``submit``, the page of what has a credential shown once (an API client, a webhook endpoint;
    the admin's ``add_form_template`` is templates/admin/add_form_shown_once.html): one button saying
    what comes next."""
    context = {
        **model_admin.admin_site.each_context(request),
        "title": title,
        "adminform": helpers.AdminForm(form, [(None, {"fields": list(form.fields)})], {}),
        "errors": helpers.AdminErrorList(form, []),
        # change_form.html runs prepopulate_init.js, which needs the admin's jQuery (media).
        "media": model_admin.media + form.media,
        "inline_admin_formsets": [],
        "is_popup": False,
        "to_field": None,
        "show_save_and_continue": False,
    }
    if submit is not None:
        # The page extends the model's own change form, as Django picks it, and shows one button.
        opts = model_admin.opts
        names = [
            f"admin/{opts.app_label}/{opts.model_name}/change_form.html",
            f"admin/{opts.app_label}/change_form.html",
        ]
        context |= {"submit": submit, "change_form": select_template([*names, "admin/change_form.html"]).template}
    return model_admin.render_change_form(request, context, add=True)


def added(model_admin, request, obj) -> HttpResponseRedirect:
    """Once added: say so, and go to the list (or to a new add form, for "Save and add another")."""
    model_admin.message_user(request, f"The {model_admin.opts.verbose_name} “{obj}” was added.", messages.SUCCESS)
    view = "add" if "_addanother" in request.POST else "changelist"
    return HttpResponseRedirect(reverse(f"admin:{model_admin.opts.app_label}_{model_admin.opts.model_name}_{view}"))


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
