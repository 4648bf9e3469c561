"""Pages of results that come in tiers (a search's exact matches, then its prefix matches, then the
rest), read tier by tier instead of sorted as one list."""

from django.db.models import QuerySet

from platform_events.db.estimates import EstimatingPaginator


class TieredPaginator(EstimatingPaginator):
    """Pages through ``tiers``, disjoint querysets shown one after another, each in its own order.

    One ORDER BY over the tiers (rank, then id) reads and sorts every matching row before it can
    return the first 100: all 1,000,000 accounts for a search of "example.com" (bench/admin.py).
    Here a page reads only its own rows, from the tiers it spans, plus a capped count of each tier
    that ends before it. ``object_list`` is the tiers' union, counted as EstimatingPaginator counts.
    """

    def __init__(self, object_list: QuerySet, per_page: int, *, tiers: list[QuerySet], **kwargs):
        super().__init__(object_list, per_page, **kwargs)
        self.tiers = tiers

    def page(self, number):
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        top = bottom + self.per_page
        if top + self.orphans >= self.count:
            top = self.count
        return self._get_page(self._rows(bottom, top), number, self)

    def _first_rows(self, count: int) -> list:
        return self._rows(0, count)

    def _rows(self, bottom: int, top: int) -> list:
        """Rows ``bottom`` to ``top`` of the tiers taken one after another."""
        rows = []
        for tier in self.tiers:
            if bottom >= top:
                break
            taken = list(tier[bottom:top])
            rows += taken
            if taken:  # the page goes on at the start of the next tier
                bottom, top = 0, top - bottom - len(taken)
                continue
            # This tier ends before the page starts: skip its rows (counting at most ``bottom`` of them).
            before = tier.order_by()[:bottom].count() if bottom else 0
            bottom, top = bottom - before, top - before
        return rows
