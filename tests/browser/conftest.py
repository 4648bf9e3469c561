"""The browser tests' Chromium (Playwright driving Debian's package; no browser download)."""

import os
import shutil

import pytest
from django.db import connections

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# CI installs Chromium (.ci/run) and must run these; elsewhere its absence is only a skip.
needs_chromium = pytest.mark.skipif(
    not CHROMIUM and not os.environ.get("CI"), reason="Chromium is not installed (apt-get install chromium)"
)


@pytest.fixture
def browser(monkeypatch):
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop in this thread; the test's own ORM calls are still synchronous.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield browser
        browser.close()
        # ORM calls made while Playwright's loop ran used a connection of that context: close it here.
        connections.close_all()
