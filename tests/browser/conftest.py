"""The browser tests' Chromium (Playwright driving Debian's package; no browser download)."""

import os
import shutil
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connections

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# CI installs Chromium (.ci/run) and must run these; elsewhere its absence is only a skip.
needs_chromium = pytest.mark.skipif(
    not CHROMIUM and not os.environ.get("CI"), reason="Chromium is not installed (apt-get install chromium)"
)
# The staff users' password in every browser test.
PASSWORD = "a-long-test-password-42"
# The screen the back-office is checked on.
SCREEN = {"width": 1366, "height": 768}

# Set SCREENSHOTS=<directory> to keep a 1366×768 picture of every page the browser tests look at.
SCREENSHOTS = os.environ.get("SCREENSHOTS")


def shoot(page, name: str) -> None:
    """Keep a picture of the page, full length, when SCREENSHOTS names a directory."""
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=f"{SCREENSHOTS}/{name}.png", full_page=True)


def staff_user(username: str, role: str):
    """A staff member in one of the roles (lifecycle/backoffice/roles.py), signing in with PASSWORD."""
    user = get_user_model().objects.create_user(username, password=PASSWORD, is_staff=True)
    user.groups.set([Group.objects.get(name=role)])
    return user


def navigating(page, act):
    """Do ``act`` and wait for the page it loads."""
    with page.expect_navigation():
        act()


def log_in(page, live_server, username):
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    navigating(page, lambda: page.click("input[type=submit]"))


@pytest.fixture(scope="package")
def _chromium():
    """One Chromium for all the browser tests (each test's pages are in contexts of their own)."""
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop in this thread while the browser runs; the tests' own
    # ORM calls are still synchronous.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
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


@pytest.fixture
def browser(_chromium):
    """The browser, with no page, cookie or storage of an earlier test: what a test opens is closed after it."""
    yield _chromium
    for context in _chromium.contexts:
        context.close()
    # ORM calls made while Playwright's loop ran used a connection of that context: close it here.
    connections.close_all()
