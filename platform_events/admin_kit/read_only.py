from django.contrib import admin

from platform_events.admin_kit.lookups import DeclaredLookupsOnly
from platform_events.db.estimates import EstimatingPaginator


class ReadOnlyModelAdmin(DeclaredLookupsOnly, admin.ModelAdmin):
    """An admin that shows rows and never writes them (state changes go through the services).

    Its lists filter only by their declared filters (declared_lookups.py) and never COUNT(*) a large
    table: exact counts up to 10,000 rows, estimates past that.
    """

    paginator = EstimatingPaginator
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER  # facet counts would count the whole table per filter choice

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
