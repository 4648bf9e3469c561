"""Attacks on the dashboard (lifecycle/backoffice/dashboard.py): it links only what the role may open."""

import pytest

from lifecycle.demo.factories import AccountFactory

pytestmark = [pytest.mark.attack, pytest.mark.django_db]

EXPORT = "/admin/platform_events/auditevent/export/"
TOKENS = "/admin/tokens/token/"
ACCOUNTS = "/admin/accounts/account/"


def test_dashboard_for_auditor_links_no_account_token_or_job_list(auditor):
    AccountFactory(suspended=True)
    response = auditor.get("/admin/")
    assert response.status_code == 200
    for path in (ACCOUNTS, TOKENS, "/admin/tokens/job/"):
        assert path.encode() not in response.content, path


def test_dashboard_for_support_offers_no_export(support):
    AccountFactory(suspended=True)
    response = support.get("/admin/")
    assert EXPORT.encode() not in response.content
