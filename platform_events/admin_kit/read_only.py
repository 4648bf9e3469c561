from django.contrib import admin

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


class ReadOnlyModelAdmin(ReadOnly, EstimatedCounts, DeclaredLookupsOnly, admin.ModelAdmin):
    """A read-only list of a large table, filtered only by its declared filters (lookups.py)."""
