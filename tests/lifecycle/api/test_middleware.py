"""The pages' middleware that the client API's requests go past (lifecycle/api/middleware.py), and
what every answer keeps."""

import pytest
from django.http import HttpResponse
from django.test import RequestFactory

from lifecycle.api.middleware import AuthenticationMiddleware, MessageMiddleware, SessionMiddleware
from platform_events.api.models import ApiScope

PAGES_ONLY = [SessionMiddleware, AuthenticationMiddleware, MessageMiddleware]


def what_the_view_sees(path: str) -> set[str]:
    """The attributes the three middleware give a request for ``path``, as the view behind them sees it."""
    seen: set[str] = set()

    def view(request):
        seen.update(name for name in ("session", "user", "_messages") if hasattr(request, name))
        return HttpResponse()

    chain = view
    for middleware in reversed(PAGES_ONLY):
        chain = middleware(chain)
    chain(RequestFactory().get(path))
    return seen


def test_an_api_request_goes_past_the_session_csrf_user_and_messages():
    """A request under /api/ reaches its view with no session, no staff user and no messages."""
    assert what_the_view_sees("/api/v1/accounts/1") == set()


@pytest.mark.parametrize("path", ["/admin/", "/recover/", "/account/", "/apiary/", "/scim/v2/Users"])
def test_every_other_request_gets_them(path):
    """Every other request, the pages and SCIM, gets its session, user and messages, as before."""
    assert what_the_view_sees(path) == {"session", "user", "_messages"}


@pytest.mark.parametrize("path", ["/api/v1/problems/not-found", "/api/v1/accounts/1", "/api/v1/nothing-here"])
def test_the_apis_answers_keep_their_security_headers(client, settings, path):
    """An API answer, found or refused, carries the security headers, the Content-Security-Policy, its
    length and its request id, and sets no cookie."""
    settings.SECURE_HSTS_SECONDS = 31_536_000

    response = client.get(path, secure=True)

    assert response["Strict-Transport-Security"].startswith("max-age=31536000")
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["Cross-Origin-Opener-Policy"] == "same-origin"
    assert "frame-ancestors 'none'" in response["Content-Security-Policy"]
    assert int(response["Content-Length"]) == len(response.content)
    assert response["X-Request-ID"]
    assert not response.cookies
    assert "Cookie" not in response.get("Vary", "")


def test_a_staff_session_does_not_call_the_api(support):
    """A signed-in staff member's browser, with its session cookie and no key, is refused by the API."""
    response = support.get("/api/v1/accounts/1")

    assert response.status_code == 401
    assert response["Content-Type"] == "application/problem+json"


def test_the_api_docs_page_renders_without_the_pages_middleware(client):
    """The API's docs page (a template, whose context reads the user and messages when it has them)."""
    response = client.get("/api/v1/docs")

    assert response.status_code == 200
    assert b"swagger" in response.content.lower()


def test_the_pages_keep_their_csrf_cookie_and_session(client, support):
    """A form page still sets its CSRF cookie, and a staff member's session still signs them in."""
    assert "csrftoken" in client.get("/admin/login/").cookies
    assert support.get("/admin/").status_code == 200


def test_a_key_still_calls_the_api(make_api):
    """An API client's key reads an account through the lane as before."""
    api = make_api(ApiScope.ACCOUNTS_READ)

    assert api.get("/accounts/999999").status_code == 404
