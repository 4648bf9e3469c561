"""``{% quick_result_list cl %}``: Django's ``{% result_list cl %}`` with the admin kit's rows
(platform_events/admin_kit/rows.py), in the same template (admin/change_list_results.html)."""

from django import template
from django.contrib.admin.templatetags.base import InclusionAdminNode

from platform_events.admin_kit.rows import quick_result_list

register = template.Library()


@register.tag(name="quick_result_list")
def quick_result_list_tag(parser, token):
    return InclusionAdminNode(
        parser, token, func=quick_result_list, template_name="change_list_results.html", takes_context=False
    )
