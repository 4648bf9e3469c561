from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from django.contrib import admin
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import quote as admin_quote
from django.contrib.admin.views.main import ChangeList
from django.urls import reverse
from django.urls.resolvers import RFC3986_SUBDELIMS
from django.utils.functional import cached_property
from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _

from platform_events.admin_kit.lookups import DeclaredLookupsOnly
from platform_events.db.estimates import EstimatingPaginator


class ReadOnly:
    """Mixed into an admin or an inline that shows rows and never writes them: state changes go
    through the services (as pghistory's event admin is read-only)."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class EstimatedCounts:
    """A list that never COUNT(*)s a large table: exact counts up to 10,000 rows, estimates past that."""

    paginator = EstimatingPaginator
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER  # facet counts would count the whole table per filter choice


class QuickCheckboxes:
    """Each row's action checkbox as Django's widget renders it, written out: the widget goes through the
    form renderer's template per row, about a third of a 100-row list's time (bench/admin.py)."""

    @admin.display(description="")
    def action_checkbox(self, obj):
        # format_html's escaping, by hand: it costs as much again per row.
        label = _("Select this object for an action - {}").format(escape(str(obj)))
        return mark_safe(
            f'<input type="checkbox" name="{ACTION_CHECKBOX_NAME}" value="{escape(obj.pk)}" class="action-select"'
            f' aria-label="{label}">'
        )


class QuickRowLinks(ChangeList):
    """Each row's link, as Django's ChangeList makes it, for less: the row's page reversed once per
    list (reverse() per row is some 10% of a list's time), and the list's filters (``_changelist_filters``,
    so that the row's page leads back to the same list) put in here, where Django's
    add_preserved_filters resolves every row's URL against the whole URL map to learn whether it is
    the list's own (some 15% of a filtered or searched list's time; bench/admin.py). A row's link is
    its page, never the list: a subclass changes it in ``row_url`` (``url_for_result`` here adds the
    list's filters to it)."""

    PK_PLACEHOLDER = "0pk0"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.row_filters, self.preserved_filters = dict(parse_qsl(self.preserved_filters)), ""

    def get_results(self, request):
        """Django's, with page 1 read before the list is counted, one row more than a page: when that
        is the whole list, its rows are its count. A search's count reads the same trigram indexes as
        its rows (two scans of 20-60 ms for a login at 1,000,000 accounts, bench/admin.py); a short list
        now reads them once. A longer one is counted as before, and shows the rows already read."""
        paginator = self.model_admin.get_paginator(request, self.queryset, self.list_per_page)
        if (
            self.page_num != 1
            or self.show_all
            or self.list_editable
            or self.model_admin.show_full_result_count
            or not hasattr(paginator, "first_rows")
            or paginator.orphans  # page 1 may then hold more than a page's rows: Django's reading
        ):
            return super().get_results(request)
        rows = paginator.first_rows(self.list_per_page + 1)  # when they are all, they are its count
        # As Django's get_results sets them, with no full count (show_full_result_count is off).
        self.result_count = paginator.count
        self.show_full_result_count = False
        self.show_admin_actions = True
        self.full_result_count = None
        self.result_list = rows[: self.list_per_page]
        self.can_show_all = self.result_count <= self.list_max_show_all
        self.multi_page = self.result_count > self.list_per_page
        self.paginator = paginator

    @cached_property
    def change_url(self) -> str:
        return reverse(
            f"admin:{self.opts.app_label}_{self.opts.model_name}_change",
            args=[self.PK_PLACEHOLDER],
            current_app=self.model_admin.admin_site.name,
        )

    def row_url(self, result) -> str:
        """The row's page; a list whose pages read better with more in the link adds it here."""
        # As reverse() writes the key: the admin's quoting, then the URL's (RFC 3986); an integer's
        # digits need neither.
        key = getattr(result, self.pk_attname)
        key = str(key) if type(key) is int else quote(str(admin_quote(key)), safe=RFC3986_SUBDELIMS + "/~:@")
        return self.change_url.replace(self.PK_PLACEHOLDER, key, 1)

    @cached_property
    def row_query(self) -> str:
        return urlencode(self.row_filters)

    def url_for_result(self, result):
        """The row's link as Django's add_preserved_filters writes it: the list's filters, then the row's
        own query (rows.py puts it in the page as it is)."""
        url = self.row_url(result)
        if not self.row_filters:
            return url
        if "?" not in url and "#" not in url:  # the list's filters, encoded once per list
            return f"{url}?{self.row_query}"
        parts = urlsplit(url)
        query = urlencode({**self.row_filters, **dict(parse_qsl(parts.query))})
        return urlunsplit(parts._replace(query=query))


class ReadOnlyModelAdmin(ReadOnly, EstimatedCounts, QuickCheckboxes, DeclaredLookupsOnly, admin.ModelAdmin):
    """A read-only list of a large table, filtered only by its declared filters (lookups.py)."""

    quick_rows = True  # rows.py, where the list's template asks for them

    def get_changelist(self, request, **kwargs):
        return QuickRowLinks
