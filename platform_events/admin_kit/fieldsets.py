"""A read-only page's fieldsets as Django's admin/includes/fieldset.html writes them, for less.

Django's template renders each field of a fieldset through some twenty tags and filters: 3.9 ms of an
account page's CPU for its 19 read-only fields (bench/admin.py), more than its database's share. A
fieldset whose fields are all read-only is written here in one pass over Django's own fieldset, its
lines and their AdminReadonlyFields: the same label (``label_tag()``) and the same shown value
(``contents()``, which decides what a field shows: a form's hidden or credential field is no more
shown here than there), the same elements, attributes and text (tests/platform_events/admin_kit/
test_fieldsets.py holds them equal). A fieldset with a form field (one that takes input) is Django's.
"""

from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe


def fieldset_html(fieldset, *, heading_level=2, prefix, id_prefix, id_suffix) -> SafeString | None:
    """What ``{% include "admin/includes/fieldset.html" with ... %}`` writes for ``fieldset``, or None
    when one of its fields takes input."""
    lines = [(line, list(line)) for line in fieldset]
    if not all(field.is_readonly for _, fields in lines for field in fields):
        return None
    heading_id = conditional_escape(f"{prefix}-{id_prefix}-{id_suffix}-heading")
    level = conditional_escape(heading_level or 2)
    parts = [f'<fieldset class="module aligned {conditional_escape(fieldset.classes)}"']
    if fieldset.name:
        parts.append(f' aria-labelledby="{heading_id}">')
        if fieldset.is_collapsible:
            parts.append("<details><summary>")
        parts.append(
            f'<h{level} id="{heading_id}" class="fieldset-heading">{conditional_escape(fieldset.name)}</h{level}>'
        )
        if fieldset.is_collapsible:
            parts.append("</summary>")
    else:
        parts.append(">")
    if fieldset.description:
        parts.append(f'<div class="description">{fieldset.description}</div>')
    for line, fields in lines:
        single = len(line.fields) == 1
        names = "".join(f" field-{conditional_escape(field.field['name'])}" for field in fields if field.field["name"])
        hidden = "" if line.has_visible_field else " hidden"
        # Read-only fields have no errors (Fieldline.errors() lists only the form's fields').
        parts.append(f'<div class="form-row{hidden}{names}">')
        if not single:
            parts.append('<div class="flex-container form-multiline">')
        for field in fields:
            name, field_hidden = field.field["name"], field.field.get("is_hidden")
            box = ""
            if not single:
                box = (
                    " fieldBox"
                    + (f" field-{conditional_escape(name)}" if name else "")
                    + (" hidden" if field_hidden else "")
                )
            parts.append(
                f'<div><div class="flex-container{box}">{field.label_tag()}'
                f'<div class="readonly">{field.contents()}</div></div>'
            )
            if field.field["help_text"]:
                shown = " hidden" if field_hidden else ""
                parts.append(f'<div class="help{shown}"><div>{field.field["help_text"]}</div></div>')
            parts.append("</div>")
        if not single:
            parts.append("</div>")
        parts.append("</div>")
    if fieldset.name and fieldset.is_collapsible:
        parts.append("</details>")
    parts.append("</fieldset>")
    return mark_safe("".join(parts))
