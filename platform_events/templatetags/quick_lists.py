"""``{% quick_result_list cl %}``: Django's ``{% result_list cl %}`` with the admin kit's rows
(platform_events/admin_kit/rows.py), in the same template (admin/change_list_results.html); and
``{% quick_app_list app_list %}``: Django's admin/app_list.html, written by the admin kit
(platform_events/admin_kit/app_list.py); and ``{% quick_fieldset fieldset ... %}``: Django's
admin/includes/fieldset.html, written by the admin kit for a fieldset of read-only fields
(platform_events/admin_kit/fieldsets.py); and ``{% quick_inline inline_admin_formset last=... %}``: the
inline's own template, written by the admin kit for a view-only tabular inline
(platform_events/admin_kit/inlines.py)."""

from django import template
from django.contrib.admin.templatetags.base import InclusionAdminNode

from platform_events.admin_kit.app_list import app_list_html
from platform_events.admin_kit.fieldsets import fieldset_html
from platform_events.admin_kit.inlines import tabular_inline_html
from platform_events.admin_kit.rows import quick_result_list

register = template.Library()


@register.tag(name="quick_result_list")
def quick_result_list_tag(parser, token):
    return InclusionAdminNode(
        parser, token, func=quick_result_list, template_name="change_list_results.html", takes_context=False
    )


@register.simple_tag(takes_context=True)
def quick_app_list(context, app_list, show_changelinks=False):
    return app_list_html(app_list, context["request"].path, show_changelinks=show_changelinks)


@register.simple_tag(takes_context=True)
def quick_fieldset(context, fieldset, *, heading_level, prefix, id_prefix, id_suffix):
    names = {"heading_level": heading_level, "prefix": prefix, "id_prefix": id_prefix, "id_suffix": id_suffix}
    html = fieldset_html(fieldset, **names)
    if html is not None:
        return html
    with context.push(fieldset=fieldset, **names):
        return context.template.engine.get_template("admin/includes/fieldset.html").render(context)


@register.simple_tag(takes_context=True)
def quick_inline(context, inline_admin_formset, *, last):
    # The current app as {% url %} finds it.
    request = context.get("request")
    current_app = getattr(request, "current_app", None) or getattr(
        getattr(request, "resolver_match", None), "namespace", None
    )
    html = tabular_inline_html(inline_admin_formset, last=last, current_app=current_app)
    if html is not None:
        return html
    return context.template.engine.get_template(inline_admin_formset.opts.template).render(context)
