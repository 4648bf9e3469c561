"""A list's rows as Django's admin writes them, for less.

Django's ``result_list`` tag works out each cell from scratch: which field or method the column is,
the empty value, the column's CSS class, whether it holds the link, and for a field with choices a
dict of them; then the page's template renders every cell as a template variable. For a list of
100 rows and 8 columns that is about half of the page's CPU (bench/admin.py, the token list). Here
each column is worked out once per list and each row is written as one piece of HTML, the same
HTML (tests/platform_events/admin_kit/test_rows.py holds them equal). A list whose rows are forms
(``list_editable``) or a pop-up's keeps Django's own.

A list takes it by its template (one extending templates/admin/quick_change_list.html, whose
``{% quick_result_list cl %}`` stands in place of ``{% result_list cl %}``, as the token and account
lists' do) and its admin by ``quick_rows = True`` (the read-only admins have it).
"""

import datetime

from django.contrib.admin.templatetags.admin_list import ResultList, result_list
from django.contrib.admin.templatetags.admin_urls import add_preserved_filters
from django.contrib.admin.utils import (
    FieldIsAForeignKeyColumnName,
    _get_non_gfk_field,
    display_for_field,
    display_for_value,
    lookup_field,
)
from django.core.exceptions import FieldDoesNotExist, ObjectDoesNotExist
from django.db import models
from django.urls import NoReverseMatch
from django.utils.html import conditional_escape
from django.utils.safestring import mark_safe

from platform_events.admin_kit.read_only import QuickRowLinks


def quick_result_list(cl) -> dict:
    """Django's ``result_list`` context, each row's cells in one piece of HTML, for an admin that asks
    for it (``quick_rows``): a list's template is found by app and model, so any other admin of the
    same table (a stock one beside it, bench/admin.py's) renders through it too, and keeps Django's."""
    if cl.formset or cl.is_popup or not getattr(cl.model_admin, "quick_rows", False):
        return result_list(cl)
    context = result_list_without_rows(cl)
    columns = [Column(cl, index, name) for index, name in enumerate(cl.list_display)]
    context["results"] = [ResultList(None, [row_html(cl, columns, result)]) for result in cl.result_list]
    return context


def result_list_without_rows(cl) -> dict:
    """Django's context for the list's headers, its rows left empty (they are made above)."""
    result_list_of = cl.result_list
    cl.result_list = []
    try:
        return result_list(cl)
    finally:
        cl.result_list = result_list_of


class Column:
    """What Django's items_for_result works out per cell and is the same for every row of a column:
    the field or the method, the empty value, the CSS classes, the link, a field's choices."""

    def __init__(self, cl, index: int, name):
        model_admin = cl.model_admin
        self.name, self.model_admin = name, model_admin
        self.empty = model_admin.get_empty_value_display()
        css_name = name if not callable(name) else f"lambda{index}" if name.__name__ == "<lambda>" else name.__name__
        self.css = self.plain_css = f"field-{css_name}"
        self.links = cl.list_display_links is not None and (
            (index == 0 and not cl.list_display_links) or name in cl.list_display_links
        )
        try:
            # Private to Django: items_for_result() finds a column's field with it, and the rows must find the
            # same one (tests/platform_events/admin_kit/test_rows.py compares them with Django's).
            self.field = _get_non_gfk_field(cl.lookup_opts, name)
        except (FieldDoesNotExist, FieldIsAForeignKeyColumnName):
            self.field = None
        # As lookup_field finds the value: a field, a callable, a method of the admin, or else per row.
        self.attr = None
        if self.field is None:
            if callable(name):
                self.attr = name
            elif hasattr(model_admin, name) and name != "__str__":
                self.attr = getattr(model_admin, name)
        self.choices = None
        if self.field is not None and not self.field.auto_created:
            if isinstance(self.field, (models.DateField, models.TimeField, models.ForeignKey)):
                self.css += " nowrap"
            if getattr(self.field, "flatchoices", None):
                try:
                    self.choices = dict(self.field.flatchoices)
                except TypeError:  # list-like choices: left to display_for_field, which makes them hashable
                    pass
        elif name == "action_checkbox":
            self.css = "action-checkbox"

    def cell(self, result) -> tuple[str, str]:
        """The cell's classes and its escaped content, as items_for_result makes them."""
        try:
            field, attr, value = self.lookup(result)
        except ObjectDoesNotExist:
            return self.plain_css, conditional_escape(self.empty)
        if isinstance(value, str) and value.strip() == "":
            value = ""
        if field is None or field.auto_created:
            empty = getattr(attr, "empty_value_display", self.empty)
            boolean = getattr(attr, "boolean", False)
            if isinstance(attr, property) and hasattr(attr, "fget"):
                boolean = getattr(attr.fget, "boolean", False)
            shown = display_for_value(value, empty, boolean)
            if isinstance(value, (datetime.date, datetime.time)):
                return f"{self.css} nowrap", conditional_escape(shown)
            return self.css, conditional_escape(shown)
        if isinstance(field.remote_field, models.ManyToOneRel):
            related = getattr(result, field.name)
            return self.css, conditional_escape(self.empty if related is None else related)
        if self.choices is not None:
            return self.css, conditional_escape(self.choices.get(value, self.empty))
        return self.css, conditional_escape(display_for_field(value, field, self.empty, avoid_link=self.links))

    def lookup(self, result):
        if self.field is not None:
            return self.field, None, getattr(result, self.name)
        if self.attr is not None:
            return None, self.attr, self.attr(result)
        return lookup_field(self.name, result, self.model_admin)


def row_html(cl, columns: list[Column], result) -> str:
    cells = []
    first = True
    for column in columns:
        css, shown = column.cell(result)
        if not column.links:
            cells.append(f'<td class="{css}">{shown}</td>')
            continue
        tag = "th" if first else "td"
        first = False
        try:
            url = cl.url_for_result(result)
        except NoReverseMatch:
            cells.append(f'<{tag} class="{css}">{shown}</{tag}>')
            continue
        # A bare path, no filters to add, or the kit's own link with them: what add_preserved_filters would
        # give back, without its parsing.
        if not isinstance(cl, QuickRowLinks) and (
            cl.preserved_filters or not url.isascii() or any(mark in url for mark in "?#;")
        ):
            url = add_preserved_filters({"preserved_filters": cl.preserved_filters, "opts": cl.opts}, url)
        cells.append(f'<{tag} class="{css}"><a href="{conditional_escape(url)}">{shown}</a></{tag}>')
    return mark_safe("".join(cells))
