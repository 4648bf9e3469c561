"""The sidebar's app list as Django's admin/app_list.html writes it, for less.

Every admin page but the wide lists shows it, and Django's template renders each registered model's
row through a dozen tags and filters (``request.path|urlencode`` three times a row): some 4 ms of an
account page's CPU at 20 models (bench/admin.py). Here it is written in one pass over the same app
list (Django's ``get_app_list``, whose permission checks decide what is in it): the same elements,
attributes and text, without the template's blank lines (tests/platform_events/admin_kit/
test_app_list.py holds it equal to Django's template, also for a user who may only view, or see nothing).
"""

from urllib.parse import quote

from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext


def app_list_html(app_list, path: str, *, show_changelinks: bool) -> SafeString:
    """What ``{% include 'admin/app_list.html' with app_list=... show_changelinks=... %}`` writes on
    the page at ``path``."""
    if not app_list:
        return mark_safe(f"<p>{conditional_escape(gettext('You don’t have permission to view or edit anything.'))}</p>")
    # As the template's ``request.path|urlencode``: a link is the current app's or model's when inside it.
    path = quote(path)
    model_name_header, add_header, link_header = (
        conditional_escape(gettext(text)) for text in ("Model name", "Add link", "Change or view list link")
    )
    add, view, change = (conditional_escape(gettext(text)) for text in ("Add", "View", "Change"))
    parts = []
    for app in app_list:
        label, url = conditional_escape(app["app_label"]), conditional_escape(app["app_url"])
        current_app = " current-app" if app["app_url"] in path else ""
        title = gettext("Models in the %(name)s application") % {"name": conditional_escape(app["name"])}
        parts.append(
            f'<div class="app-{label} module{current_app}"><table><caption>'
            f'<a href="{url}" class="section" title="{title}">{conditional_escape(app["name"])}</a></caption>'
            f'<thead class="visually-hidden"><tr><th scope="col">{model_name_header}</th>'
            f'<th scope="col">{add_header}</th><th scope="col">{link_header}</th></tr></thead>'
        )
        for model in app["models"]:
            admin_url, add_url = model["admin_url"], model["add_url"]
            name = conditional_escape(model["object_name"].lower())
            row_id = f"{label}-{name}"
            current = bool(admin_url) and admin_url in path
            parts.append(
                f'<tr class="model-{name}{" current-model" if current else ""}"><th scope="row" id="{row_id}">'
            )
            if admin_url:
                aria_current = ' aria-current="page"' if current else ""
                parts.append(
                    f'<a href="{conditional_escape(admin_url)}"{aria_current}>{conditional_escape(model["name"])}</a>'
                )
            else:
                parts.append(conditional_escape(model["name"]))
            parts.append("</th>")
            if add_url:
                parts.append(
                    f'<td><a href="{conditional_escape(add_url)}" class="addlink" aria-describedby="{row_id}">{add}</a></td>'
                )
            else:
                parts.append("<td></td>")
            if admin_url and show_changelinks:
                kind, word = ("viewlink", view) if model.get("view_only") else ("changelink", change)
                parts.append(
                    f'<td><a href="{conditional_escape(admin_url)}" class="{kind}" aria-describedby="{row_id}">{word}</a></td>'
                )
            elif show_changelinks:
                parts.append("<td></td>")
            parts.append("</tr>")
        parts.append("</table></div>")
    return mark_safe("".join(parts))
