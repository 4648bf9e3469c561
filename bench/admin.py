"""The back-office at scale: 1,000,000 accounts and 3,000,000 audit rows.

    .venv/bin/python bench/admin.py [--quick] [--accounts 1000000] [--audit-rows 3000000] [--requests 20]

Seeds a scratch database (``<name>_bench``, created and dropped) through the real triggers and
vacuums it (as autovacuum keeps a live table), then times each admin page (p50/p95 over repeated
requests through Django's test client, DEBUG off) and, in the same run, the same pages of a stock
ModelAdmin for the same model (COUNT(*) paginator, icontains search): the ratio is stock / ours, at
p95. Every address is at example.com, so a search for the domain matches every account. Last, the
selectors behind some pages, timed directly. The table goes to stdout, the seeding's progress to stderr.
"""

import argparse
import datetime
import os
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# One log line per request would bury the table.
os.environ.setdefault("LOG_LEVEL", "WARNING")

import bench.django_setup  # noqa: F401 (Django set up before any model is imported)

# isort: split
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db import connections, transaction
from django.test import Client
from django.test.utils import override_settings
from django.urls import path
from django.utils import timezone

from accounts.models import Account
from accounts.selectors import account_trail
from bench.scratch import scratch_database
from platform_events.audit.models import AuditEvent
from platform_events.db.history import history_rewrite
from tokens.models import Token

# Tables of its own, seeded history: the bench works as the owner role.
connection = connections["owner"]

# A stock admin of the same models, on a site of its own, for the comparison.
stock_site = admin.AdminSite(name="stock")
stock_site.register(
    Account,
    type(
        "StockAccountAdmin",
        (admin.ModelAdmin,),
        {
            "list_display": ["login", "email", "status", "created_at"],
            "list_filter": ["status"],
            "search_fields": ["email", "login"],
        },
    ),
)
stock_site.register(
    AuditEvent,
    type(
        "StockAuditAdmin",
        (admin.ModelAdmin,),
        {"list_display": ["occurred_at", "actor_id", "action", "resource_id"], "list_filter": ["action"]},
    ),
)
stock_site.register(
    Token,
    type(
        "StockTokenAdmin",
        (admin.ModelAdmin,),
        {
            "list_display": ["id", "account", "action", "created_at", "expires_at"],
            "list_select_related": ["account"],
            "search_fields": ["account__login", "account__email"],
        },
    ),
)
admin.autodiscover()  # the product's pages, as its URLconf registers them (lifecycle/urls.py)
urlpatterns = [path("admin/", admin.site.urls), path("stock/", stock_site.urls)]


def seed(accounts: int, audit_rows: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT audit_ensure_partition((now() - make_interval(months => m))::date) FROM generate_series(-3, 13) m"
        )
        chunk = 100_000
        for low in range(1, accounts + 1, chunk):
            high = min(low + chunk - 1, accounts)
            # Over the last year: 40% provisioned, 50% active, 10% suspended. Aged status timestamps
            # need the owner's key (accounts/sql/0010_hardening.sql).
            with transaction.atomic(using="owner"), history_rewrite(using="owner"):
                cursor.execute(
                    """
                    INSERT INTO accounts (email, login, status, created_at, activated_at, suspended_at)
                    SELECT 'user' || g || '@example.com', 'user' || g, s.status::account_status, s.created,
                           CASE WHEN s.status <> 'provisioned' THEN s.created + interval '5 minutes' END,
                           CASE WHEN s.status = 'suspended' THEN s.created + interval '1 day' END
                    FROM generate_series(%(low)s, %(high)s) g,
                         LATERAL (SELECT CASE WHEN g %% 10 < 4 THEN 'provisioned' WHEN g %% 10 < 9 THEN 'active' ELSE 'suspended' END
                                         AS status,
                                         now() - make_interval(secs => (%(total)s - g) * 31536000.0 / %(total)s) AS created) s
                    """,
                    {"low": low, "high": high, "total": accounts},
                )
            progress(f"  {high:,} accounts")
        cursor.execute("SELECT count(*) FROM audit_events")
        missing = audit_rows - cursor.fetchone()[0]
        if missing > 0:
            cursor.execute(
                """
                INSERT INTO audit_events (occurred_at, actor_type, actor_id, actor_display, action, resource_type,
                                          resource_id, reason, diff_before, diff_after)
                SELECT now() - make_interval(secs => g * 31536000.0 / %(n)s), 'USER', 'staff:1', 'support',
                       'account.suspended', 'account', (g %% %(accounts)s + 1)::text, 'bench',
                       '{"status": "active"}', '{"status": "suspended"}'
                FROM generate_series(1, %(n)s) g
                """,
                {"n": missing, "accounts": accounts},
            )
        # A live table of this size has been vacuumed by autovacuum: without it, the first reads set the
        # rows' hint bits and index-only scans visit the heap, and autovacuum runs beside the timings.
        for table in ("accounts", "tokens", "audit_events"):
            cursor.execute(f"VACUUM (ANALYZE) {table}")
        cursor.execute("SELECT (SELECT count(*) FROM accounts), (SELECT count(*) FROM audit_events)")
        progress("  seeded: {:,} accounts, {:,} audit rows".format(*cursor.fetchone()))


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def audit_detail(account_id: int) -> str:
    """The detail page of one audit row, as the list links it (with the row's time)."""
    event = AuditEvent.objects.using("owner").filter(resource_type="account", resource_id=str(account_id)).first()
    return f"platform_events/auditevent/{event.pk}/change/?{urlencode({'at': event.occurred_at.isoformat()})}"


def timed(client: Client, url: str, requests: int) -> tuple[float, float]:
    client.get(url)  # warm-up
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        response = client.get(url)
        times.append(time.perf_counter() - started)
        assert response.status_code == 200, (url, response.status_code)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]


def timed_call(call, requests: int) -> tuple[float, float]:
    """p50 and p95 of ``call()`` (a selector, read to the end as a page would)."""
    call()  # warm-up
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100,000 accounts, 300,000 audit rows, 5 requests a page")
    parser.add_argument("--accounts", type=int, help="default 1,000,000 (100,000 with --quick)")
    parser.add_argument("--audit-rows", type=int, help="default 3,000,000 (300,000 with --quick)")
    parser.add_argument("--requests", type=int, help="per page, default 20 (5 with --quick)")
    args = parser.parse_args()
    accounts = args.accounts or (100_000 if args.quick else 1_000_000)
    audit_rows = args.audit_rows or (300_000 if args.quick else 3_000_000)
    requests = args.requests or (5 if args.quick else 20)
    print(
        f"{'quick run' if args.quick else 'run'}: {accounts:,} accounts, {audit_rows:,} audit rows, {requests} requests"
        " a page, ours and stock; p50 and p95 in ms, stock/ours at p95",
        flush=True,
    )

    with scratch_database():
        started = time.perf_counter()
        seed(accounts, audit_rows)
        progress(f"  seeding took {time.perf_counter() - started:.0f} s")
        user = get_user_model().objects.create_superuser("bench", password="x")
        middle = accounts // 2
        detail = f"accounts/account/{middle}/change/"
        since, until = (timezone.localdate() - datetime.timedelta(days=days) for days in (60, 31))
        month = f"created_at__range__gte={since}&created_at__range__lte={until}"
        pages = [
            ("dashboard (admin index)", "", None),
            ("account list", "accounts/account/", "accounts/account/"),
            ("search: exact e-mail", f"accounts/account/?q=user{middle}@example.com", None),
            ("search: prefix", f"accounts/account/?q=user{middle // 10}", None),
            (
                "filtered list (suspended)",
                "accounts/account/?status__exact=suspended",
                "accounts/account/?status__exact=suspended",
            ),
            ("account detail", detail, detail),
            ("search: exact login", f"accounts/account/?q=user{middle}", None),
            # Every account matches: the page must not sort them all to put exact matches first.
            ("search: domain (example.com)", "accounts/account/?q=example.com", None),
            ("search: domain, page 50", "accounts/account/?q=example.com&p=50", None),
            ("search: rare part (00042@)", "accounts/account/?q=00042@", None),
            ("search: 2 letters (us)", "accounts/account/?q=us", None),
            ("search: domain, suspended", "accounts/account/?q=example.com&status__exact=suspended", None),
            ("created in a month (range)", f"accounts/account/?{month}", None),
            ("token list", "tokens/token/", "tokens/token/"),
            ("token search: login", f"tokens/token/?q=user{middle}", None),  # a provisioned account's
            ("token search: domain", "tokens/token/?q=example.com", None),
            ("token list, state valid", "tokens/token/?state=valid", None),
            ("audit list", "platform_events/auditevent/", "platform_events/auditevent/"),
            ("audit of one account", f"platform_events/auditevent/?resource_type=account&resource_id={middle}", None),
            ("audit: account + its tokens", f"platform_events/auditevent/?account={middle}", None),
            ("audit search: login", f"platform_events/auditevent/?q=user{middle}", None),
            ("audit search: e-mail", f"platform_events/auditevent/?q=user{middle}@example.com", None),
            ("audit row detail", audit_detail(middle), None),
            ("audit row detail, no time", audit_detail(middle).partition("?")[0], None),
        ]
        # The stock admin's search is icontains on both fields.
        stock_search = {
            label: url
            for label, url, _ in pages
            if label.startswith(("search:", "token search:")) and "page" not in label and "suspended" not in label
        }
        with override_settings(ROOT_URLCONF=__name__, DEBUG=False, ALLOWED_HOSTS=["testserver"]):
            client = Client()
            client.force_login(user)
            print(f"{'page':30} {'ours p50':>9} {'p95':>7} {'stock p50':>10} {'p95':>7} {'stock/ours':>11}", flush=True)
            for label, ours_url, stock_url in pages:
                ours = timed(client, f"/admin/{ours_url}", requests)
                stock_url = stock_url or stock_search.get(label)
                row = f"{label:30} {ours[0] * 1000:9.1f} {ours[1] * 1000:7.1f}"
                if stock_url:
                    stock = timed(client, f"/stock/{stock_url}", requests)
                    row += f" {stock[0] * 1000:10.1f} {stock[1] * 1000:7.1f} {stock[1] / ours[1]:10.1f}x"
                print(row, flush=True)
        # The account's trail (its rows and its tokens'), first 100 as the audit list shows them.
        trail = timed_call(lambda: list(account_trail(middle)[:100]), requests)
        print(f"{'account_trail(), first 100':30} {trail[0] * 1000:9.1f} {trail[1] * 1000:7.1f}")


if __name__ == "__main__":
    main()
