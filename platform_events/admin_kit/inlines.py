"""A read-only tabular inline as Django's admin/edit_inline/tabular.html writes it, for less.

Django's template renders an inline's management form and each row's hidden key fields through the
form renderer's templates, and every cell through a dozen tags: about 5 ms of an account page's CPU
for its tokens and node assignments (bench/admin.py). An inline staff may only view (no add, change
or delete permission, as Django decided when it made the inline for this user) is written here in one
pass over Django's own inline formset: each cell's ``contents()`` (which decides what a field shows),
the same hidden inputs, elements, attributes and text (tests/platform_events/admin_kit/test_inlines.py
holds them equal). Any other inline (one that takes input, a stacked one, a form or field with errors,
help texts, a link to the site) is Django's.
"""

from django.contrib.admin.utils import quote
from django.forms import HiddenInput
from django.template.defaultfilters import capfirst  # the filter's: a safe label stays safe, as in the template
from django.urls import NoReverseMatch, reverse
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext

TABULAR = "admin/edit_inline/tabular.html"


def tabular_inline_html(inline_admin_formset, *, last: bool, current_app: str | None) -> SafeString | None:
    """What ``{% include "admin/edit_inline/tabular.html" %}`` writes for a view-only inline, or None
    for any other."""
    formset = inline_admin_formset.formset
    if (
        inline_admin_formset.opts.template != TABULAR
        or inline_admin_formset.has_add_permission
        or inline_admin_formset.has_change_permission
        or inline_admin_formset.has_delete_permission
        or formset.is_bound
    ):
        return None
    columns = list(inline_admin_formset.fields())
    forms = list(inline_admin_formset)
    if any(column["help_text"] for column in columns) or any(
        form.show_url or form.form.non_field_errors() for form in forms
    ):
        return None
    management_form = hidden_fields_html(formset.management_form)
    if management_form is None:
        return None
    prefix = conditional_escape(formset.prefix)
    collapsible = inline_admin_formset.is_collapsible
    opts = inline_admin_formset.opts
    heading = opts.verbose_name if formset.max_num == 1 else opts.verbose_name_plural
    parts = [
        f'<div class="js-inline-admin-formset inline-group" id="{prefix}-group" data-inline-type="tabular"'
        f' data-inline-formset="{conditional_escape(inline_admin_formset.inline_formset_data())}">'
        f'<div class="tabular inline-related {"last-related" if last else ""}">{management_form}'
        f'<fieldset class="module {conditional_escape(inline_admin_formset.classes)}" aria-labelledby="{prefix}-heading">',
        "<details><summary>" if collapsible else "",
        f'<h2 id="{prefix}-heading" class="inline-heading">{conditional_escape(capfirst(heading))}</h2>',
        "</summary>" if collapsible else "",
        '<table><thead><tr><th class="original"></th>',
    ]
    for column in columns:
        required = " required" if column["required"] else ""
        hidden = " hidden" if column["widget"]["is_hidden"] else ""
        parts.append(
            f'<th class="column-{conditional_escape(column["name"])}{required}{hidden}">{conditional_escape(capfirst(column["label"]))}</th>'
        )
    parts.append("<th></th></tr></thead><tbody>")
    link_word = conditional_escape(gettext("View"))
    for index, inline_admin_form in enumerate(forms):
        original = inline_admin_form.original
        parts.append(
            f'<tr class="form-row {"has_original" if original else ""}" id="{prefix}-{index}"><td class="original">'
        )
        if original:
            parts.append(f"<p>{conditional_escape(original)}")
            model_admin = inline_admin_form.model_admin
            if model_admin.show_change_link and model_admin.has_registered_model:
                url = change_url(model_admin.opts, original.pk, current_app)
                if url is None:
                    return None
                # The space before the link shows, as the template's line break does.
                parts.append(f' <a href="{conditional_escape(url)}" class="inlineviewlink">{link_word}</a>')
            parts.append("</p>")
        keys = []
        if inline_admin_form.needs_explicit_pk_field():
            keys.append(inline_admin_form.pk_field().field)
        if fk_field := inline_admin_form.fk_field():
            keys.append(fk_field.field)
        for key in keys:
            written = hidden_input_html(key)
            if written is None:
                return None
            parts.append(written)
        parts.append("</td>")
        for fieldset in inline_admin_form:
            for line in fieldset:
                for field in line:
                    name = field.field["name"]
                    css = (f"field-{conditional_escape(name)}" if name else "") + (
                        " hidden" if field.field.get("is_hidden") else ""
                    )
                    parts.append(f'<td class="{css}"><p>{field.contents()}</p></td>')
        parts.append('<td class="delete"></td></tr>')
    parts.append("</tbody></table>")
    if collapsible:
        parts.append("</details>")
    parts.append("</fieldset></div></div>")
    return mark_safe("".join(parts))


def change_url(opts, pk, current_app: str | None) -> str | None:
    """As ``{% url opts|admin_urlname:'change' pk|admin_urlquote %}``."""
    try:
        return reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[quote(pk)], current_app=current_app)
    except NoReverseMatch:
        return None


def hidden_fields_html(form) -> str | None:
    """A form of hidden fields only, without errors, as its template (django/forms/div.html) writes it."""
    if form.errors or form.visible_fields():
        return None
    written = [hidden_input_html(field) for field in form.hidden_fields()]
    return None if None in written else "".join(written)


def hidden_input_html(bound_field) -> str | None:
    """A bound field of a plain HiddenInput, as BoundField.as_widget() and the widget's template
    (django/forms/widgets/input.html) write it; None for any other widget."""
    widget = bound_field.field.widget
    if type(widget) is not HiddenInput or bound_field.field.localize:
        return None
    attrs = bound_field.build_widget_attrs({}, widget)
    if bound_field.auto_id and "id" not in widget.attrs:
        attrs.setdefault("id", bound_field.auto_id)
    context = widget.get_context(bound_field.html_name, bound_field.value(), attrs)["widget"]
    value = "" if context["value"] is None else f' value="{conditional_escape(str(context["value"]))}"'
    attributes = "".join(
        f" {conditional_escape(name)}" + ("" if shown is True else f'="{conditional_escape(str(shown))}"')
        for name, shown in context["attrs"].items()
        if shown is not False
    )
    return f'<input type="{conditional_escape(context["type"])}" name="{conditional_escape(context["name"])}"{value}{attributes}>'
