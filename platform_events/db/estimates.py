"""Row counts without counting: PostgreSQL's own estimate (pg_class.reltuples, kept by ANALYZE and
autovacuum), for pages that must not COUNT(*) a large table."""

from django.core.paginator import Paginator
from django.db import connection
from django.utils.functional import cached_property

# Below this many rows an exact count is cheap; at or above it, pages show an estimate.
EXACT_COUNT_LIMIT = 10_000


def estimated_rows(table: str) -> int:
    """The planner's row estimate for a table, its partitions included; -1 when never analysed."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT coalesce(sum(c.reltuples) FILTER (WHERE c.reltuples >= 0), -1)::bigint
            FROM pg_class c
            WHERE c.oid = %s::regclass OR c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = %s::regclass)
            """,
            [table, table],
        )
        return cursor.fetchone()[0]


class EstimatingPaginator(Paginator):
    """Counts exactly up to EXACT_COUNT_LIMIT rows; past that, the whole table's estimate (unfiltered)
    or the limit (filtered, shown as "more than"), so a page never counts a large table.
    ``estimated`` says which."""

    @cached_property
    def count(self) -> int:
        capped = self.object_list.order_by()[: EXACT_COUNT_LIMIT + 1].count()  # reads at most limit + 1 rows
        self.estimated = capped > EXACT_COUNT_LIMIT
        if not self.estimated:
            return capped
        if not self.object_list.query.where:
            return max(estimated_rows(self.object_list.model._meta.db_table), capped)
        return EXACT_COUNT_LIMIT  # "more than" this; the pages reach this far, a narrower filter the rest

    estimated = False

    def first_rows(self, count: int) -> list:
        """The list's first ``count`` rows, in its order (page 1 with a row more: the kit's lists read it
        before counting, platform_events/admin_kit/read_only.py). Fewer rows are the whole list: its
        count, exact as any count under the limit, is not read again."""
        rows = self._first_rows(count)
        if len(rows) < count and len(rows) <= EXACT_COUNT_LIMIT:
            self.count = len(rows)
        return rows

    def _first_rows(self, count: int) -> list:
        return list(self.object_list[:count])
